/**
 * Typed errors. A failure carries the server's reason code (docs/protocol.md §12):
 * from the trailing metadata `meshmq-reason` of a failed call, or from
 * `SessionError.reason` / `Rejection.reason` on a session stream. Applications
 * branch on the class (or `reason`), never on message text.
 */
import { Metadata, status as Status, ServiceError } from "@grpc/grpc-js";

export const REASONS = [
  "INVALID_SELECTOR", "INVALID_REQUEST", "QUEUE_NOT_FOUND", "ADDRESS_NOT_FOUND", "MESSAGE_NOT_FOUND",
  "QUEUE_EXISTS", "QUEUE_IN_USE", "ADDRESS_EXISTS", "ADDRESS_IN_USE", "DUPLICATE_ID", "ADDRESS_FULL",
  "TRANSACTION_ROLLED_BACK", "NOT_TRANSACTED", "UNAUTHENTICATED", "PERMISSION_DENIED", "MESSAGE_TOO_LARGE",
  "NOT_ACTIVE", "FENCED", "STORE_UNAVAILABLE", "UNBLOCKED", "CONNECTION_FAILED", "SCALED_DOWN",
  "SLOW_CONSUMER", "GROUPING_UNAVAILABLE", "UNSUPPORTED_VERSION", "INTERNAL",
] as const;
export type Reason = (typeof REASONS)[number];

export const REASON_METADATA_KEY = "meshmq-reason";
export const LIVE_METADATA_KEY = "meshmq-live";
export const NODE_NAME_METADATA_KEY = "meshmq-node-name";

/** Base of every error the SDK throws; `reason` is the server's reason code. */
export class MeshMQError extends Error {
  readonly reason: Reason;
  constructor(message: string, reason: Reason = "INTERNAL") {
    super(message);
    this.reason = reason;
    this.name = new.target.name;
  }
}

/* One class per reason; the name is the Python SDK's where it has one. */
export class InvalidSelectorError extends MeshMQError { constructor(m: string) { super(m, "INVALID_SELECTOR"); } }
export class InvalidRequestError extends MeshMQError { constructor(m: string) { super(m, "INVALID_REQUEST"); } }
export class QueueNotFoundError extends MeshMQError { constructor(m: string) { super(m, "QUEUE_NOT_FOUND"); } }
export class AddressNotFoundError extends MeshMQError { constructor(m: string) { super(m, "ADDRESS_NOT_FOUND"); } }
export class MessageNotFoundError extends MeshMQError { constructor(m: string) { super(m, "MESSAGE_NOT_FOUND"); } }
export class QueueExistsError extends MeshMQError { constructor(m: string) { super(m, "QUEUE_EXISTS"); } }
export class QueueInUseError extends MeshMQError { constructor(m: string) { super(m, "QUEUE_IN_USE"); } }
export class AddressExistsError extends MeshMQError { constructor(m: string) { super(m, "ADDRESS_EXISTS"); } }
export class AddressInUseError extends MeshMQError { constructor(m: string) { super(m, "ADDRESS_IN_USE"); } }
export class DuplicateIdError extends MeshMQError { constructor(m: string) { super(m, "DUPLICATE_ID"); } }
export class AddressFullError extends MeshMQError { constructor(m: string) { super(m, "ADDRESS_FULL"); } }
export class TransactionRolledBackError extends MeshMQError { constructor(m: string) { super(m, "TRANSACTION_ROLLED_BACK"); } }
export class NotTransactedError extends MeshMQError { constructor(m: string) { super(m, "NOT_TRANSACTED"); } }
export class AuthenticationError extends MeshMQError { constructor(m: string) { super(m, "UNAUTHENTICATED"); } }
export class PermissionDeniedError extends MeshMQError { constructor(m: string) { super(m, "PERMISSION_DENIED"); } }
export class MessageTooLargeError extends MeshMQError { constructor(m: string) { super(m, "MESSAGE_TOO_LARGE"); } }
export class FencedError extends MeshMQError { constructor(m: string) { super(m, "FENCED"); } }
export class StoreUnavailableError extends MeshMQError { constructor(m: string) { super(m, "STORE_UNAVAILABLE"); } }
export class SlowConsumerError extends MeshMQError { constructor(m: string) { super(m, "SLOW_CONSUMER"); } }
export class GroupingUnavailableError extends MeshMQError { constructor(m: string) { super(m, "GROUPING_UNAVAILABLE"); } }
/** The router no longer accepts this SDK's session protocol (min-client-protocol-version): upgrade the SDK. */
export class UnsupportedVersionError extends MeshMQError { constructor(m: string) { super(m, "UNSUPPORTED_VERSION"); } }
export class InternalError extends MeshMQError { constructor(m: string) { super(m, "INTERNAL"); } }

/** A call in flight when its session failed over: its outcome is unknown (resend with the same duplicate id). */
export class UnblockedError extends MeshMQError {
  /** Set on the notice a session's 'exception' event carries once the session has moved. */
  readonly failedOver: boolean;
  constructor(m: string, failedOver = false) { super(m, "UNBLOCKED"); this.failedOver = failedOver; }
}

/** The node was lost (or the call could not reach it). */
export class ConnectionFailedError extends MeshMQError {
  constructor(m: string, reason: Reason = "CONNECTION_FAILED") { super(m, reason); }
}

/** A passive backup: it serves nothing; `live` is where the active node listens ("" = unknown). */
export class NotActiveError extends ConnectionFailedError {
  constructor(m: string, readonly live = "", readonly nodeName = "") { super(m, "NOT_ACTIVE"); }
}

/** The node scaled down: its messages are now on `target` (node `targetNodeId`). */
export class ScaledDownError extends ConnectionFailedError {
  constructor(m: string, readonly target = "", readonly targetNodeId = "") { super(m, "SCALED_DOWN"); }
}

const CLASS_FOR_REASON: Record<Reason, new (m: string) => MeshMQError> = {
  INVALID_SELECTOR: InvalidSelectorError, INVALID_REQUEST: InvalidRequestError, QUEUE_NOT_FOUND: QueueNotFoundError,
  ADDRESS_NOT_FOUND: AddressNotFoundError, MESSAGE_NOT_FOUND: MessageNotFoundError, QUEUE_EXISTS: QueueExistsError,
  QUEUE_IN_USE: QueueInUseError, ADDRESS_EXISTS: AddressExistsError, ADDRESS_IN_USE: AddressInUseError,
  DUPLICATE_ID: DuplicateIdError, ADDRESS_FULL: AddressFullError, TRANSACTION_ROLLED_BACK: TransactionRolledBackError,
  NOT_TRANSACTED: NotTransactedError, UNAUTHENTICATED: AuthenticationError, PERMISSION_DENIED: PermissionDeniedError,
  MESSAGE_TOO_LARGE: MessageTooLargeError, NOT_ACTIVE: NotActiveError, FENCED: FencedError,
  STORE_UNAVAILABLE: StoreUnavailableError, UNBLOCKED: UnblockedError, CONNECTION_FAILED: ConnectionFailedError,
  SCALED_DOWN: ScaledDownError, SLOW_CONSUMER: SlowConsumerError, GROUPING_UNAVAILABLE: GroupingUnavailableError,
  UNSUPPORTED_VERSION: UnsupportedVersionError, INTERNAL: InternalError,
};

export function isReason(r: string): r is Reason {
  return (REASONS as readonly string[]).includes(r);
}

/** The typed error for a reason code from a server; an unknown reason is INTERNAL (§12, §14). */
export function errorFor(reason: string, message: string): MeshMQError {
  const r: Reason = isReason(reason) ? reason : "INTERNAL";
  return new CLASS_FOR_REASON[r](message || r);
}

function metaValue(md: Metadata | undefined, key: string): string {
  const v = md?.get(key)?.[0];
  return v === undefined ? "" : v.toString();
}

/** A failed gRPC call as the typed error it stands for (§12: reason metadata, else by status). */
export function fromGrpcError(err: Partial<ServiceError>): MeshMQError {
  const reason = metaValue(err.metadata, REASON_METADATA_KEY);
  const details = err.details || err.message || "";
  if (reason === "NOT_ACTIVE") {
    return new NotActiveError(details || reason, metaValue(err.metadata, LIVE_METADATA_KEY),
      metaValue(err.metadata, NODE_NAME_METADATA_KEY));
  }
  if (reason) return errorFor(reason, details);
  switch (err.code) {
    case Status.UNAUTHENTICATED: return errorFor("UNAUTHENTICATED", details);
    case Status.PERMISSION_DENIED: return errorFor("PERMISSION_DENIED", details);
    case Status.RESOURCE_EXHAUSTED: return errorFor("MESSAGE_TOO_LARGE", details);
    case Status.UNAVAILABLE: case Status.DEADLINE_EXCEEDED: case Status.CANCELLED:
      return errorFor("CONNECTION_FAILED", details);
    default: return errorFor("INTERNAL", details);
  }
}

/** Errors of a lost node: a session fails over on these (§11.1). */
export function warrantsFailover(err: MeshMQError): boolean {
  return ["CONNECTION_FAILED", "NOT_ACTIVE", "SCALED_DOWN", "STORE_UNAVAILABLE", "FENCED"].includes(err.reason);
}
