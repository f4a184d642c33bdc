"""Error reasons shared by every service and the client SDK.

A failure travels as a gRPC status code plus a machine-readable reason: in the
trailing metadata key `meshmq-reason` for RPC failures, or in the `reason`
field of a SessionError on a session stream. The SDK turns both into the typed
exceptions below, so applications branch on a class, not on message text.
"""

from __future__ import annotations

import enum

import grpc

REASON_METADATA_KEY = "meshmq-reason"
# With NOT_ACTIVE: host:port of the node that serves the store, when the passive node knows it.
LIVE_METADATA_KEY = "meshmq-live"
# With NOT_ACTIVE: the passive node's configured name (status tools show it).
NODE_NAME_METADATA_KEY = "meshmq-node-name"


class Reason(str, enum.Enum):
    INVALID_SELECTOR = "INVALID_SELECTOR"
    INVALID_REQUEST = "INVALID_REQUEST"
    QUEUE_NOT_FOUND = "QUEUE_NOT_FOUND"
    ADDRESS_NOT_FOUND = "ADDRESS_NOT_FOUND"
    MESSAGE_NOT_FOUND = "MESSAGE_NOT_FOUND"
    QUEUE_EXISTS = "QUEUE_EXISTS"
    QUEUE_IN_USE = "QUEUE_IN_USE"
    ADDRESS_EXISTS = "ADDRESS_EXISTS"
    ADDRESS_IN_USE = "ADDRESS_IN_USE"
    DUPLICATE_ID = "DUPLICATE_ID"
    ADDRESS_FULL = "ADDRESS_FULL"
    TRANSACTION_ROLLED_BACK = "TRANSACTION_ROLLED_BACK"
    NOT_TRANSACTED = "NOT_TRANSACTED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"
    NOT_ACTIVE = "NOT_ACTIVE"
    FENCED = "FENCED"
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    UNBLOCKED = "UNBLOCKED"
    CONNECTION_FAILED = "CONNECTION_FAILED"
    SCALED_DOWN = "SCALED_DOWN"
    SLOW_CONSUMER = "SLOW_CONSUMER"
    # Clustered grouping: no decision from the LOCAL grouping handler within its timeout.
    GROUPING_UNAVAILABLE = "GROUPING_UNAVAILABLE"
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"
    INTERNAL = "INTERNAL"


STATUS_FOR_REASON: dict[Reason, grpc.StatusCode] = {
    Reason.INVALID_SELECTOR: grpc.StatusCode.INVALID_ARGUMENT,
    Reason.INVALID_REQUEST: grpc.StatusCode.INVALID_ARGUMENT,
    Reason.QUEUE_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Reason.ADDRESS_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Reason.MESSAGE_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Reason.QUEUE_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    Reason.QUEUE_IN_USE: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.ADDRESS_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    Reason.ADDRESS_IN_USE: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.DUPLICATE_ID: grpc.StatusCode.ALREADY_EXISTS,
    Reason.ADDRESS_FULL: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Reason.TRANSACTION_ROLLED_BACK: grpc.StatusCode.ABORTED,
    Reason.NOT_TRANSACTED: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Reason.PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
    Reason.MESSAGE_TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Reason.NOT_ACTIVE: grpc.StatusCode.UNAVAILABLE,
    Reason.FENCED: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.STORE_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Reason.UNBLOCKED: grpc.StatusCode.UNAVAILABLE,
    Reason.CONNECTION_FAILED: grpc.StatusCode.UNAVAILABLE,
    Reason.SCALED_DOWN: grpc.StatusCode.UNAVAILABLE,
    Reason.SLOW_CONSUMER: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Reason.GROUPING_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Reason.UNSUPPORTED_VERSION: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.INTERNAL: grpc.StatusCode.INTERNAL,
}


class MeshMQError(Exception):
    """Base of every error the SDK raises; `reason` is the server's reason code."""

    reason: Reason = Reason.INTERNAL

    def __init__(self, message: str, reason: Reason | str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = Reason(reason) if reason in Reason._value2member_map_ else Reason.INTERNAL


class InvalidSelectorError(MeshMQError):
    reason = Reason.INVALID_SELECTOR


class InvalidRequestError(MeshMQError):
    reason = Reason.INVALID_REQUEST


class QueueNotFoundError(MeshMQError):
    reason = Reason.QUEUE_NOT_FOUND


class SlowConsumerError(MeshMQError):
    """The router closed the consumer: it acknowledged fewer messages a second
    than its queue's slow-consumer-threshold (slow-consumer-policy KILL)."""

    reason = Reason.SLOW_CONSUMER


class QueueExistsError(MeshMQError):
    reason = Reason.QUEUE_EXISTS


class DuplicateIdError(MeshMQError):
    reason = Reason.DUPLICATE_ID


class AddressFullError(MeshMQError):
    """The address is at its max-size-bytes / max-size-messages and its address-full-policy is FAIL."""

    reason = Reason.ADDRESS_FULL


class TransactionRolledBackError(MeshMQError):
    reason = Reason.TRANSACTION_ROLLED_BACK


class AuthenticationError(MeshMQError):
    reason = Reason.UNAUTHENTICATED


class PermissionDeniedError(MeshMQError):
    """The authenticated user lacks the security-settings permission for the address."""

    reason = Reason.PERMISSION_DENIED


class MessageTooLargeError(MeshMQError):
    reason = Reason.MESSAGE_TOO_LARGE


class ConnectionFailedError(MeshMQError):
    reason = Reason.CONNECTION_FAILED


class ScaledDownError(ConnectionFailedError):
    """The node scaled down: its messages (and queues) are now on `target`
    (host:port, node `target_node_id`); reconnect there."""

    reason = Reason.SCALED_DOWN

    def __init__(self, message: str, reason: Reason | str | None = None, *, target: str = "",
                 target_node_id: str = "") -> None:
        super().__init__(message, reason)
        self.target = target
        self.target_node_id = target_node_id


class NotActiveError(ConnectionFailedError):
    """The node is a passive backup waiting for its store: it serves nothing.
    `live` is where the node that serves the store listens ("" = unknown)."""

    reason = Reason.NOT_ACTIVE

    def __init__(self, message: str, reason: Reason | str | None = None, *, live: str = "",
                 node_name: str = "") -> None:
        super().__init__(message, reason)
        self.live = live
        self.node_name = node_name


class UnblockedError(MeshMQError):
    """A call in flight when its session failed over (Artemis UNBLOCKED): the new
    session knows nothing of it, so its outcome is unknown. A send may or may not
    have been stored: resend it with the same duplicate id to be sure."""

    reason = Reason.UNBLOCKED

    def __init__(self, message: str, reason: Reason | str | None = None, *, failed_over: bool = False) -> None:
        super().__init__(message, reason)
        # Set on the notice a session's exception_listener gets once the session has
        # moved to a new stream (Artemis's FAILOVER code; a ConnectionFailedError is DISCONNECT).
        self.failed_over = failed_over


class GroupingUnavailableError(MeshMQError):
    """Clustered grouping: the node could not get a decision for a new message
    group from the LOCAL grouping handler within its timeout (that node is down)."""

    reason = Reason.GROUPING_UNAVAILABLE


class FencedError(MeshMQError):
    reason = Reason.FENCED


class UnsupportedVersionError(MeshMQError):
    """The router no longer accepts this client's session protocol
    (its min-client-protocol-version is above it): upgrade the SDK."""

    reason = Reason.UNSUPPORTED_VERSION


class StoreUnavailableError(MeshMQError):
    reason = Reason.STORE_UNAVAILABLE


_CLASS_FOR_REASON: dict[Reason, type[MeshMQError]] = {
    cls.reason: cls
    for cls in (
        InvalidSelectorError,
        InvalidRequestError,
        QueueNotFoundError,
        QueueExistsError,
        SlowConsumerError,
        DuplicateIdError,
        AddressFullError,
        GroupingUnavailableError,
        TransactionRolledBackError,
        AuthenticationError,
        PermissionDeniedError,
        MessageTooLargeError,
        ConnectionFailedError,
        NotActiveError,
        FencedError,
        StoreUnavailableError,
        UnblockedError,
        UnsupportedVersionError,
    )
}


def error_for(reason: str, message: str) -> MeshMQError:
    """The typed exception for a reason code received from a server."""
    try:
        r = Reason(reason)
    except ValueError:
        return MeshMQError(message, Reason.INTERNAL)
    return _CLASS_FOR_REASON.get(r, MeshMQError)(message, r)


def from_rpc_error(err: grpc.RpcError) -> MeshMQError:
    """Convert a failed gRPC call into the typed exception it stands for."""
    reason = None
    live = node_name = ""
    trailing = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in trailing or ():
        if key == REASON_METADATA_KEY:
            reason = value
        elif key == LIVE_METADATA_KEY:
            live = value
        elif key == NODE_NAME_METADATA_KEY:
            node_name = value
    details = err.details() if hasattr(err, "details") else str(err)
    if reason == Reason.NOT_ACTIVE.value:
        return NotActiveError(details or reason, live=live, node_name=node_name)
    if reason is None:
        code = err.code() if hasattr(err, "code") else None
        if code == grpc.StatusCode.UNAUTHENTICATED:
            reason = Reason.UNAUTHENTICATED.value
        elif code == grpc.StatusCode.PERMISSION_DENIED:
            reason = Reason.PERMISSION_DENIED.value
        elif code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            reason = Reason.MESSAGE_TOO_LARGE.value
        elif code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
            # CANCELLED reaches a caller as an RpcError only when the far side ended the
            # call (a server stopping cancels what it still runs, e.g. a backup's passive
            # acceptors as it activates); the caller's own cancel raises CancelledError.
            reason = Reason.CONNECTION_FAILED.value
        else:
            reason = Reason.INTERNAL.value
    return error_for(reason, details or reason)


class BrokerError(Exception):
    """Raised inside services for a request that fails with a known reason.

    Handlers convert it to a gRPC status (`abort_with`) or a SessionError.
    """

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


async def abort_with(context: grpc.aio.ServicerContext, err: BrokerError) -> None:
    """Abort an RPC with the status code and reason metadata for `err`."""
    context.set_trailing_metadata(((REASON_METADATA_KEY, err.reason.value),))
    await context.abort(STATUS_FOR_REASON.get(err.reason, grpc.StatusCode.UNKNOWN), err.message)
