/**
 * Channels to routers (docs/protocol.md §1): plain or TLS, credentials as call
 * metadata on every call, keep-alive pings from clientFailureCheckPeriod and
 * connectionTTL, and the 256 MiB receive limit a router may send up to.
 */
import * as fs from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { services } from "./proto";
import { ClientOptions } from "./options";
import { InvalidRequestError } from "./errors";

export const MAX_INTERNAL_FRAME = 256 * 1024 * 1024;
export const MAX_CLIENT_FRAME = 16 * 1024 * 1024;
export const FLOW_CONTROL_WINDOW = 16 * 1024 * 1024;

/** The credentials metadata (nothing without a username). */
export function credentialsMetadata(o: ClientOptions): grpc.Metadata {
  const md = new grpc.Metadata();
  if (o.username) {
    md.set("x-meshmq-username", o.username);
    md.set("x-meshmq-password", o.password);
  }
  return md;
}

/** gRPC keep-alive settings for the options (§1). */
export function keepaliveOptions(o: ClientOptions): Record<string, number> {
  const period = o.clientFailureCheckPeriod;
  if (period === -1) return {};
  const time = Math.max(1000, period);
  let timeout = o.connectionTTL === -1 ? period : Math.min(period, o.connectionTTL - period);
  timeout = Math.max(1000, timeout);
  return {
    "grpc.keepalive_time_ms": time,
    "grpc.keepalive_timeout_ms": timeout,
    "grpc.keepalive_permit_without_calls": 1,
  };
}

function readFile(path: string, what: string): Buffer {
  try {
    return fs.readFileSync(path);
  } catch (e) {
    throw new InvalidRequestError(`cannot read ${what} ${JSON.stringify(path)}: ${(e as Error).message}`);
  }
}

export function channelCredentials(o: ClientOptions): grpc.ChannelCredentials {
  if (!o.sslEnabled) return grpc.credentials.createInsecure();
  const ca = o.trustStorePath ? readFile(o.trustStorePath, "trustStorePath") : null;
  if (Boolean(o.keyStorePath) !== Boolean(o.keyPath)) {
    throw new InvalidRequestError("keyStorePath and keyPath go together (a client certificate chain and its key)");
  }
  const cert = o.keyStorePath ? readFile(o.keyStorePath, "keyStorePath") : null;
  const key = o.keyPath ? readFile(o.keyPath, "keyPath") : null;
  return grpc.credentials.createSsl(ca, key, cert);
}

/** One router: a channel with its Broker and Management stubs. */
export class Node {
  readonly broker: grpc.Client & Record<string, any>;
  readonly management: grpc.Client & Record<string, any>;
  constructor(readonly target: string, creds: grpc.ChannelCredentials, o: ClientOptions) {
    const { Broker, Management } = services();
    const channelOptions = {
      "grpc.max_receive_message_length": MAX_INTERNAL_FRAME,
      "grpc.max_send_message_length": MAX_CLIENT_FRAME,
      // HTTP/2 receive window: Node's default 64 KiB per stream stalls a consumer with a
      // 1 MiB credit window on round trips (gRPC C-core grows its window by BDP probing).
      "grpc-node.flow_control_window": FLOW_CONTROL_WINDOW,
      // Reconnect soon after a node comes back: gRPC's own backoff grows to 120 s, which
      // held a failover to a restarted node for seconds (the Python SDK caps it at 1 s too).
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1000,
      ...keepaliveOptions(o),
    };
    this.broker = new Broker(target, creds, channelOptions) as any;
    this.management = new Management(target, creds, { ...channelOptions, channelOverride: this.broker.getChannel() }) as any;
  }
  close(): void {
    this.broker.close();
  }
}
