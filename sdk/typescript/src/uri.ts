/**
 * Connection URIs (docs/protocol.md §13), the same syntax the Python SDK takes:
 *   meshmq://[user:password@]host[:port][?option=value&...]
 *   (meshmq://h1:61616,meshmq://h2:61617)?options
 *   failover:(meshmq://h1:61616,meshmq://h2:61617)?ActiveMQ-failover-options&options
 * Discovery URIs (meshmq+etcd://, discovery://) are recognised and refused: this SDK
 * does not read etcd.
 */
import { InvalidRequestError } from "./errors";
import { ClientOptions, DEFAULT_OPTIONS, convertOption, isOptionName, validateOptions } from "./options";
import { policyFromName } from "./loadbalance";

export const DEFAULT_PORT = 61616;

export interface Server {
  host: string;
  port: number;
}

export function target(s: Server): string {
  return `${s.host.includes(":") ? `[${s.host}]` : s.host}:${s.port}`;
}

/** "host:port" (or "[v6]:port") as a Server. */
export function parseTarget(t: string): Server {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(t) ?? /^([^:]+):(\d+)$/.exec(t);
  if (!m) throw new InvalidRequestError(`bad host:port ${JSON.stringify(t)}`);
  return { host: m[1], port: Number(m[2]) };
}

export interface ParsedURI {
  servers: Server[];
  options: ClientOptions;
  /** failover:(...) — a failed session may move to any listed node. */
  anyNodeFailover: boolean;
  /** failover:(...)?backup=true — keep a channel to the next listed node connected. */
  warmBackup: boolean;
}

const FAILOVER_DEFAULTS: Record<string, string> = {
  randomize: "true",
  maxReconnectAttempts: "-1",
  startupMaxReconnectAttempts: "-1",
  initialReconnectDelay: "10",
  maxReconnectDelay: "30000",
  useExponentialBackOff: "true",
  reconnectDelayExponent: "2.0",
  timeout: "-1",
  backup: "false",
  updateClusterClients: "false",
};
const FAILOVER_ALIASES: Record<string, string> = { backOffMultiplier: "reconnectDelayExponent" };
const FAILOVER_UNSUPPORTED: Record<string, string> = {
  rebalanceClusterClients: "it is a node setting (rebalance-cluster-clients); clients with updateClusterClients=true follow it",
  priorityBackup: "a session stays on the node it failed over to until that node fails",
  priorityURIs: "a session stays on the node it failed over to until that node fails",
};

function queryPairs(query: string): [string, string][] {
  if (!query) return [];
  return query.split("&").filter((p) => p !== "").map((p) => {
    const eq = p.indexOf("=");
    const k = eq < 0 ? p : p.slice(0, eq);
    const v = eq < 0 ? "" : p.slice(eq + 1);
    return [decodeURIComponent(k.replace(/\+/g, " ")), decodeURIComponent(v.replace(/\+/g, " "))];
  });
}

/** Options from a query string over `base`; an unknown option or a bad value names itself. */
export function parseOptions(query: string, base: ClientOptions = { ...DEFAULT_OPTIONS }): ClientOptions {
  const o: ClientOptions = { ...base };
  for (const [key, raw] of queryPairs(query)) {
    if (!isOptionName(key)) {
      const lower = key.toLowerCase();
      const close = Object.keys(DEFAULT_OPTIONS).find((n) => n.toLowerCase() === lower);
      throw new InvalidRequestError(`unknown URI option ${JSON.stringify(key)}${close ? ` (did you mean ${JSON.stringify(close)}?)` : ""}`);
    }
    (o as any)[key] = convertOption(key, raw);
  }
  return validateOptions(o, (name) => void policyFromName(name));
}

function parseServer(item: string, whole: string): { server: Server; query: string; user: string; password: string } {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?$/.exec(item.trim());
  if (!m) throw new InvalidRequestError(`bad server URI in ${JSON.stringify(whole)}; expected meshmq://host:port`);
  const [, scheme, authority, path, query = ""] = m;
  if (scheme !== "meshmq") {
    throw new InvalidRequestError(`unsupported URI scheme ${JSON.stringify(scheme)} in ${JSON.stringify(whole)}; expected meshmq://host:port`);
  }
  if (path !== "" && path !== "/") throw new InvalidRequestError(`unexpected path ${JSON.stringify(path)} in ${JSON.stringify(whole)}`);
  let hostport = authority;
  let user = "";
  let password = "";
  const at = authority.lastIndexOf("@");
  if (at >= 0) {
    const info = authority.slice(0, at);
    hostport = authority.slice(at + 1);
    const colon = info.indexOf(":");
    user = decodeURIComponent(colon < 0 ? info : info.slice(0, colon));
    password = colon < 0 ? "" : decodeURIComponent(info.slice(colon + 1));
  }
  let host: string;
  let portText = "";
  const v6 = /^\[([^\]]+)\](?::(.*))?$/.exec(hostport);
  if (v6) {
    host = v6[1];
    portText = v6[2] ?? "";
  } else {
    const colon = hostport.lastIndexOf(":");
    host = colon < 0 ? hostport : hostport.slice(0, colon);
    portText = colon < 0 ? "" : hostport.slice(colon + 1);
  }
  if (!host) throw new InvalidRequestError(`no host in ${JSON.stringify(whole)}`);
  let port = DEFAULT_PORT;
  if (portText !== "") {
    if (!/^\d+$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
      throw new InvalidRequestError(`bad port ${JSON.stringify(portText)} in ${JSON.stringify(whole)}`);
    }
    port = Number(portText);
  }
  return { server: { host: host.toLowerCase(), port }, query, user, password };
}

function parseList(text: string, whole: string): ParsedURI {
  let items: string[];
  let query: string | undefined;
  if (text.startsWith("(")) {
    const close = text.indexOf(")");
    if (close < 0) throw new InvalidRequestError(`unclosed '(' in ${JSON.stringify(whole)}; expected (meshmq://h1:p1,meshmq://h2:p2)?options`);
    items = text.slice(1, close).split(",").filter((i) => i.trim() !== "");
    if (items.length === 0) throw new InvalidRequestError(`empty server list in ${JSON.stringify(whole)}`);
    const rest = text.slice(close + 1);
    if (rest && !rest.startsWith("?")) throw new InvalidRequestError(`unexpected ${JSON.stringify(rest)} after the server list in ${JSON.stringify(whole)}`);
    query = rest.slice(1);
  } else {
    items = [text];
  }
  const servers: Server[] = [];
  let user = "";
  let password = "";
  for (const item of items) {
    const p = parseServer(item, whole);
    if (p.query && query !== undefined) {
      throw new InvalidRequestError(`options inside the server list of ${JSON.stringify(whole)}: put them after the closing parenthesis`);
    }
    if (query === undefined) query = p.query;
    servers.push(p.server);
    if (!user) {
      user = p.user;
      password = p.password;
    }
  }
  let options = parseOptions(query ?? "");
  if (user) options = { ...options, username: user, password };
  return { servers, options, anyNodeFailover: false, warmBackup: false };
}

function failoverOptions(query: string, whole: string): { query: string; backup: boolean } {
  const given: Record<string, string> = {};
  const rest: string[] = [];
  for (let [key, raw] of queryPairs(query)) {
    key = FAILOVER_ALIASES[key] ?? key;
    if (key in FAILOVER_DEFAULTS) given[key] = raw;
    else if (key in FAILOVER_UNSUPPORTED) {
      if (!["false", ""].includes(raw.toLowerCase())) {
        throw new InvalidRequestError(`failover option ${key}=${raw} in ${JSON.stringify(whole)} is not supported: ${FAILOVER_UNSUPPORTED[key]}`);
      }
    } else rest.push(`${encodeURIComponent(key)}=${encodeURIComponent(raw)}`);
  }
  const o = { ...FAILOVER_DEFAULTS, ...given };
  const bool = (name: string) => {
    const low = o[name].toLowerCase();
    if (low !== "true" && low !== "false") {
      throw new InvalidRequestError(`failover option ${name}=${JSON.stringify(o[name])} in ${JSON.stringify(whole)}: expected true or false`);
    }
    return low === "true";
  };
  const num = (name: string, int: boolean) => {
    const v = Number(o[name]);
    if (o[name].trim() === "" || !Number.isFinite(v) || (int && !Number.isInteger(v))) {
      throw new InvalidRequestError(`failover option ${name}=${JSON.stringify(o[name])} in ${JSON.stringify(whole)}: expected a number`);
    }
    return v;
  };
  const startup = num("startupMaxReconnectAttempts", true);
  const mapped: Record<string, string | number | boolean> = {
    connectionLoadBalancingPolicyClassName: bool("randomize") ? "Random" : "FirstElement",
    reconnectAttempts: num("maxReconnectAttempts", true),
    initialConnectAttempts: startup === -1 ? -1 : startup + 1,
    retryInterval: num("initialReconnectDelay", true),
    maxRetryInterval: num("maxReconnectDelay", true),
    retryIntervalMultiplier: bool("useExponentialBackOff") ? num("reconnectDelayExponent", false) : 1.0,
    callFailoverTimeout: num("timeout", true),
    useTopologyForLoadBalancing: bool("updateClusterClients"),
  };
  const pairs = Object.entries(mapped).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`);
  return { query: [...pairs, ...rest].join("&"), backup: bool("backup") };
}

/** Parses a connection URI; an InvalidRequestError says what is wrong (password masked). */
export function parseUri(uri: string): ParsedURI {
  try {
    return parseUriInner(uri);
  } catch (e) {
    if (e instanceof InvalidRequestError) throw new InvalidRequestError(redact(e.message));
    throw e;
  }
}

function parseUriInner(uri: string): ParsedURI {
  if (typeof uri !== "string" || uri.trim() === "") throw new InvalidRequestError("empty connection URI; expected meshmq://host:port");
  const text = uri.trim();
  if (text.startsWith("failover:")) {
    let inner = text.slice("failover:".length);
    if (inner.startsWith("//")) inner = inner.slice(2);
    const close = inner.lastIndexOf(")");
    if (!inner.startsWith("(") || close < 0) {
      throw new InvalidRequestError(`expected failover:(meshmq://h1:61616,meshmq://h2:61617)?options, got ${JSON.stringify(uri)}`);
    }
    const rest = inner.slice(close + 1);
    if (rest && !rest.startsWith("?")) throw new InvalidRequestError(`unexpected ${JSON.stringify(rest)} after the server list in ${JSON.stringify(uri)}`);
    const { query, backup } = failoverOptions(rest.slice(1), uri);
    const listed = parseList(`(${inner.slice(1, close)})?${query}`, uri);
    return { ...listed, anyNodeFailover: true, warmBackup: backup };
  }
  if (text.startsWith("meshmq+etcd://") || text.startsWith("discovery://")) {
    throw new InvalidRequestError(`discovery URIs are not supported by the TypeScript SDK (${JSON.stringify(uri)}): name the nodes, e.g. (meshmq://h1:61616,meshmq://h2:61616)`);
  }
  return parseList(text, uri);
}

/** `text` with every password in a URI it quotes replaced by ***. */
export function redact(text: string): string {
  return text
    .replace(/(:\/\/[^:/@\s'"]*:)[^@\s'"]*@/g, "$1***@")
    .replace(/(password=)[^&\s'"]*/gi, "$1***");
}
