/** Client options (docs/protocol.md §13): names, defaults and accepted values as the Python SDK's. */
import { InvalidRequestError } from "./errors";

export interface ClientOptions {
  consumerWindowSize: number;
  confirmationWindowSize: number;
  producerWindowSize: number;
  minLargeMessageSize: number;
  producerMaxBatch: number;
  callTimeout: number;
  clientID: string;
  username: string;
  password: string;
  sslEnabled: boolean;
  trustStorePath: string;
  keyStorePath: string;
  keyPath: string;
  connectionLoadBalancingPolicyClassName: string;
  useTopologyForLoadBalancing: boolean;
  initialConnectAttempts: number;
  retryInterval: number;
  retryIntervalMultiplier: number;
  maxRetryInterval: number;
  reconnectAttempts: number;
  failoverOnInitialConnection: boolean;
  clientFailureCheckPeriod: number;
  connectionTTL: number;
  callFailoverTimeout: number;
}

export const DEFAULT_OPTIONS: Readonly<ClientOptions> = Object.freeze({
  consumerWindowSize: 1048576,
  confirmationWindowSize: 524288,
  producerWindowSize: 1048576,
  minLargeMessageSize: 102400,
  producerMaxBatch: 1000,
  callTimeout: 30000,
  clientID: "",
  username: "",
  password: "",
  sslEnabled: false,
  trustStorePath: "",
  keyStorePath: "",
  keyPath: "",
  connectionLoadBalancingPolicyClassName: "RoundRobin",
  useTopologyForLoadBalancing: true,
  initialConnectAttempts: 1,
  retryInterval: 2000,
  retryIntervalMultiplier: 1.0,
  maxRetryInterval: 2000,
  reconnectAttempts: 0,
  failoverOnInitialConnection: false,
  clientFailureCheckPeriod: 30000,
  connectionTTL: 60000,
  callFailoverTimeout: 30000,
});

export const MAX_WINDOW_SIZE = 2 ** 31 - 1;

type Kind = "int" | "float" | "bool" | "string";
function kindOf(name: keyof ClientOptions): Kind {
  const d = DEFAULT_OPTIONS[name];
  if (typeof d === "boolean") return "bool";
  if (typeof d === "string") return "string";
  return name === "retryIntervalMultiplier" ? "float" : "int";
}

export function isOptionName(name: string): name is keyof ClientOptions {
  return Object.prototype.hasOwnProperty.call(DEFAULT_OPTIONS, name);
}

/** One option's text value as its type; a bad value is an error naming it. */
export function convertOption(name: keyof ClientOptions, raw: string): string | number | boolean {
  switch (kindOf(name)) {
    case "bool": {
      const low = raw.toLowerCase();
      if (["true", "1", "yes"].includes(low)) return true;
      if (["false", "0", "no"].includes(low)) return false;
      throw new InvalidRequestError(`URI option ${name}=${JSON.stringify(raw)}: expected true or false`);
    }
    case "int":
      if (!/^[+-]?\d+$/.test(raw.trim())) {
        throw new InvalidRequestError(`URI option ${name}=${JSON.stringify(raw)}: expected an integer`);
      }
      return parseInt(raw, 10);
    case "float": {
      const v = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(v)) {
        throw new InvalidRequestError(`URI option ${name}=${JSON.stringify(raw)}: expected a number`);
      }
      return v;
    }
    default:
      return raw;
  }
}

/** Checks every option's range; the first bad one is an InvalidRequestError naming it. */
export function validateOptions(o: ClientOptions, knownPolicy: (name: string) => void): ClientOptions {
  for (const name of ["minLargeMessageSize", "producerMaxBatch", "callTimeout"] as const) {
    if (o[name] <= 0) throw new InvalidRequestError(`URI option ${name} must be positive`);
  }
  if (o.initialConnectAttempts === 0 || o.initialConnectAttempts < -1) {
    throw new InvalidRequestError("URI option initialConnectAttempts must be -1 (forever) or a positive number");
  }
  for (const name of ["clientFailureCheckPeriod", "connectionTTL", "callFailoverTimeout"] as const) {
    if (o[name] <= 0 && o[name] !== -1) {
      throw new InvalidRequestError(`URI option ${name} must be -1 (no limit) or a positive number of ms`);
    }
  }
  for (const name of ["retryInterval", "maxRetryInterval"] as const) {
    if (o[name] < 0) throw new InvalidRequestError(`URI option ${name} must not be negative`);
  }
  if (o.retryIntervalMultiplier < 1.0) {
    throw new InvalidRequestError("URI option retryIntervalMultiplier must be at least 1.0");
  }
  if (o.confirmationWindowSize === 0 || o.confirmationWindowSize < -1) {
    throw new InvalidRequestError("URI option confirmationWindowSize must be -1 (no limit) or a positive number of bytes");
  }
  if (o.producerWindowSize === 0 || o.producerWindowSize < -1 || o.producerWindowSize > MAX_WINDOW_SIZE) {
    throw new InvalidRequestError(`URI option producerWindowSize must be -1 (no limit) or 1..${MAX_WINDOW_SIZE} bytes`);
  }
  if (o.consumerWindowSize < -1 || o.consumerWindowSize > MAX_WINDOW_SIZE) {
    throw new InvalidRequestError(`URI option consumerWindowSize must be -1 (no limit), 0 (no buffering) or 1..${MAX_WINDOW_SIZE} bytes`);
  }
  if (o.reconnectAttempts < -1) {
    throw new InvalidRequestError("URI option reconnectAttempts must be -1 (forever), 0 or more");
  }
  knownPolicy(o.connectionLoadBalancingPolicyClassName);
  return o;
}
