/** Messages as the application sees them, and their conversion to and from `meshmq.v1.Message`. */
import { InvalidRequestError } from "./errors";

/** A property value: string, integer (number with no fraction, or bigint), double, boolean or bytes. */
export type PropertyValue = string | number | bigint | boolean | Buffer | Uint8Array | Double;
export type Properties = Record<string, PropertyValue>;

/** Forces a property to travel as a double even when it has no fraction (`new Double(1)`). */
export class Double {
  constructor(readonly value: number) {}
}

export type RoutingType = "ANYCAST" | "MULTICAST";

/** What a send may set besides the body (docs/protocol.md §3). */
export interface SendOptions {
  /** Target address; default: the producer's. */
  address?: string;
  properties?: Properties;
  /** Survives a restart (default true); a durable send resolves once stored. */
  durable?: boolean;
  /** 0..9, default 4. */
  priority?: number;
  /** Duplicate detection id (§5.4). */
  duplicateId?: string;
  /** Absolute expiry in ms since the epoch. */
  expiration?: number;
  /** Relative expiry in ms (sets `expiration` to now + ttl). */
  timeToLive?: number;
  routingType?: RoutingType;
  replyTo?: string;
  correlationId?: string;
  type?: string;
  groupId?: string;
  groupSeq?: number;
  /** Scheduled delivery: absolute ms since the epoch, or a delay in ms. */
  deliveryTime?: number;
  deliveryDelay?: number;
  /** Stops waiting for the confirm (the message may still be stored). */
  signal?: AbortSignal;
}

export function encodeValue(name: string, v: PropertyValue): Record<string, unknown> {
  if (typeof v === "string") return { string_value: v };
  if (typeof v === "boolean") return { bool_value: v };
  if (typeof v === "bigint") return { int_value: v.toString() };
  if (v instanceof Double) return { float_value: v.value };
  if (typeof v === "number") {
    if (Number.isNaN(v) || !Number.isFinite(v) || !Number.isInteger(v)) return { float_value: v };
    return Number.isSafeInteger(v) ? { int_value: v } : { float_value: v };
  }
  if (v instanceof Uint8Array) return { bytes_value: Buffer.from(v.buffer, v.byteOffset, v.byteLength) };
  throw new InvalidRequestError(`property ${JSON.stringify(name)}: unsupported value type ${typeof v}`);
}

export function encodeProperties(props: Properties | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!props) return out;
  for (const [k, v] of Object.entries(props)) out[k] = encodeValue(k, v);
  return out;
}

/** A received property: int_value as a number (a bigint past 2^53), float_value a number. */
export function decodeProperties(props: Record<string, any> | undefined): Record<string, string | number | bigint | boolean | Buffer> {
  const out: Record<string, string | number | bigint | boolean | Buffer> = {};
  if (!props) return out;
  for (const [k, v] of Object.entries(props)) {
    switch (v.kind) {
      case "string_value": out[k] = v.string_value; break;
      case "int_value": {
        const i = v.int_value;
        out[k] = typeof i === "string" ? toIntValue(i) : i;
        break;
      }
      case "float_value": out[k] = v.float_value; break;
      case "bool_value": out[k] = v.bool_value; break;
      case "bytes_value": out[k] = v.bytes_value; break;
      default: break; // a kind this SDK does not know: ignored (§14)
    }
  }
  return out;
}

function toIntValue(s: string): number | bigint {
  const b = BigInt(s);
  return b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
}

/** The wire Message for a send. */
export function toWireMessage(body: Buffer, opts: SendOptions): Record<string, unknown> {
  if (opts.priority !== undefined && (!Number.isInteger(opts.priority) || opts.priority < 0 || opts.priority > 9)) {
    throw new InvalidRequestError(`priority must be an integer 0..9, got ${opts.priority}`);
  }
  let expiration = opts.expiration ?? 0;
  if (opts.timeToLive !== undefined && opts.timeToLive > 0) expiration = Date.now() + opts.timeToLive;
  // Only what differs from proto3's defaults: protobufjs writes every field it is given.
  const m: Record<string, unknown> = { body, durable: opts.durable ?? true, priority: opts.priority ?? 4 };
  const set = (k: string, v: unknown, dflt: unknown) => { if (v !== undefined && v !== dflt) m[k] = v; };
  set("address", opts.address, "");
  if (opts.properties) {
    const props = encodeProperties(opts.properties);
    if (Object.keys(props).length) m.properties = props;
  }
  set("expiration", expiration, 0);
  set("duplicate_id", opts.duplicateId, "");
  set("routing_type", opts.routingType, "ROUTING_TYPE_UNSPECIFIED");
  set("reply_to", opts.replyTo, "");
  set("correlation_id", opts.correlationId, "");
  set("type", opts.type, "");
  set("group_id", opts.groupId, "");
  set("group_seq", opts.groupSeq, 0);
  set("delivery_time", opts.deliveryTime, 0);
  set("delivery_delay", opts.deliveryDelay, 0);
  return m;
}

/** Rough bytes a message holds in the confirmation window (the Python SDK's `len(body) + 64`). */
export function windowCost(bodyLength: number): number {
  return bodyLength + 64;
}
