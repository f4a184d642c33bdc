/**
 * A connection (docs/protocol.md §10): first contact with GetNodeInfo, the
 * topology watch, client-side load balancing of new sessions, failover
 * candidates and the failover events (FAILURE_DETECTED, FAILOVER_COMPLETED,
 * FAILOVER_FAILED, once per failed node).
 */
import { EventEmitter } from "node:events";
import { randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { ConnectionFailedError, InvalidRequestError, MeshMQError, NotActiveError, fromGrpcError } from "./errors";
import { ClientOptions, DEFAULT_OPTIONS, isOptionName, validateOptions } from "./options";
import { LoadBalancingPolicy, orderCandidates, policyFromName } from "./loadbalance";
import { ParsedURI, parseUri, target } from "./uri";
import { Node, channelCredentials, credentialsMetadata } from "./transport";
import { Session } from "./session";
import { TemporaryQueue } from "./temporary_queue";

export type FailoverEventType = "FAILURE_DETECTED" | "FAILOVER_COMPLETED" | "FAILOVER_FAILED";

export interface TopologyMember {
  nodeId: string;
  name: string;
  connector: string;
  backupConnector: string;
  groupName: string;
}

export interface NodeInfo {
  nodeId: string;
  name: string;
  version: string;
  haPolicy: string;
}

export interface ConnectOptions extends Partial<ClientOptions> {
  /** A policy object of your own (the TypeScript form of the Python SDK's `module:Class`). */
  loadBalancingPolicy?: LoadBalancingPolicy;
  signal?: AbortSignal;
}

interface Incident {
  sessions: Set<Session>;
  failed: MeshMQError | null;
  firstError: MeshMQError;
}

const LOST = new Set(["CONNECTION_FAILED"]);

/** Connects to meshmq: `meshmq://host:port`, `(meshmq://h1,meshmq://h2)?…` or `failover:(…)?…`. */
export async function connect(uri: string, opts: ConnectOptions = {}): Promise<Connection> {
  const parsed = parseUri(uri);
  const { loadBalancingPolicy, signal, ...overrides } = opts;
  for (const [k, v] of Object.entries(overrides)) {
    if (!isOptionName(k)) throw new InvalidRequestError(`unknown connect option ${JSON.stringify(k)}`);
    if (typeof v !== typeof DEFAULT_OPTIONS[k]) {
      throw new InvalidRequestError(`connect option ${k}: expected a ${typeof DEFAULT_OPTIONS[k]}, got ${JSON.stringify(v)}`);
    }
  }
  const options = validateOptions({ ...parsed.options, ...overrides }, (name) => void policyFromName(name));
  const withOverrides = { ...parsed, options };
  const conn = new Connection(withOverrides, loadBalancingPolicy);
  try {
    await conn.firstContact(signal);
  } catch (e) {
    conn.close();
    throw e;
  }
  return conn;
}

export class Connection extends EventEmitter {
  readonly options: ClientOptions;
  /** Sent with every session's open (OpenSession.connection_id, §4.1): the routers know its sessions as
   * one connection, whose temporary queues are theirs (§6.7). Made once, kept across failover. */
  readonly connectionId: string = randomUUID();
  /** The node first contact reached. */
  nodeInfo: NodeInfo | null = null;
  private readonly creds: grpc.ChannelCredentials;
  private readonly nodes = new Map<string, Node>();
  private readonly listed: string[];
  private readonly policy: LoadBalancingPolicy;
  private members: TopologyMember[] | null = null;
  private readonly backups = new Map<string, string>();
  private readonly sessions = new Set<Session>();
  private readonly incidents = new Map<string, Incident>();
  private watch: grpc.ClientReadableStream<any> | null = null;
  private closed = false;
  private warnedUnverified = false;
  private firstTopology: Promise<void>;
  private gotTopology!: () => void;
  private readonly temporaryQueues = new Map<string, TemporaryQueue>();
  /** The session that keeps the temporary queues (temporary_queue.ts): opened with the first, closed last. */
  private anchor: Session | null = null;
  private anchorLock: Promise<unknown> = Promise.resolve();

  /** @internal use connect() */
  constructor(readonly uri: ParsedURI, policy?: LoadBalancingPolicy) {
    super();
    this.options = uri.options;
    this.creds = channelCredentials(this.options);
    this.listed = uri.servers.map(target);
    this.policy = policy ?? policyFromName(this.options.connectionLoadBalancingPolicyClassName);
    this.firstTopology = new Promise((r) => (this.gotTopology = r));
    this.on("error", () => undefined);
  }

  /** @internal the channel to host:port (one per node, shared by its sessions). */
  nodeFor(t: string): Node {
    let n = this.nodes.get(t);
    if (!n) this.nodes.set(t, (n = new Node(t, this.creds, this.options)));
    return n;
  }

  /** A node learned from the topology may get the password only over TLS (or with no username): §10. */
  mayReceivePassword(t: string): boolean {
    return !this.options.username || this.options.sslEnabled || this.listed.includes(t);
  }

  /** @internal a unary Management call with the credentials and callTimeout. */
  unary(node: Node, method: string, req: Record<string, unknown>, timeoutMs = this.options.callTimeout): Promise<any> {
    return new Promise((resolve, reject) => {
      node.management[method](req, credentialsMetadata(this.options), { deadline: Date.now() + timeoutMs },
        (err: grpc.ServiceError | null, res: any) => (err ? reject(fromGrpcError(err)) : resolve(res)));
    });
  }

  /** @internal GetNodeInfo on the URI's servers, `initialConnectAttempts` rounds; then the topology watch. */
  async firstContact(signal?: AbortSignal): Promise<void> {
    const o = this.options;
    let interval = o.retryInterval;
    let last: MeshMQError = new ConnectionFailedError("no server to connect to");
    for (let round = 0; o.initialConnectAttempts === -1 || round < o.initialConnectAttempts; round++) {
      if (round > 0) {
        await new Promise((r) => setTimeout(r, interval));
        interval = Math.min(o.maxRetryInterval, interval * o.retryIntervalMultiplier);
      }
      const candidates = [...this.listed];
      for (let i = 0; i < candidates.length; i++) {
        if (signal?.aborted) throw signal.reason;
        const t = candidates[i];
        try {
          const info = await this.unary(this.nodeFor(t), "GetNodeInfo", {});
          this.nodeInfo = { nodeId: info.node_id, name: info.name, version: info.version, haPolicy: info.ha_policy };
          this.startWatch(t);
          if (this.uri.warmBackup) this.warmUp(t);
          return;
        } catch (e) {
          if (!(e instanceof MeshMQError)) throw e;
          last = e;
          if (e instanceof NotActiveError) {
            if (e.live && !candidates.includes(e.live) && this.mayReceivePassword(e.live)) candidates.push(e.live);
            continue;
          }
          if (LOST.has(e.reason)) continue;
          throw e;
        }
      }
    }
    throw last;
  }

  /** failover:(…)?backup=true: keep a channel to the next listed node connected, for a quicker failover. */
  private warmUp(connected: string): void {
    const i = this.listed.indexOf(connected);
    const next = this.listed.find((t, j) => j > i && t !== connected) ?? this.listed.find((t) => t !== connected);
    if (next && this.mayReceivePassword(next)) this.nodeFor(next).broker.getChannel().getConnectivityState(true);
  }

  private startWatch(t: string): void {
    if (this.closed) return;
    const call = this.nodeFor(t).management.WatchTopology({}, credentialsMetadata(this.options));
    this.watch = call;
    call.on("data", (topo: any) => {
      this.members = topo.members.map((m: any) => ({
        nodeId: m.node_id, name: m.name, connector: m.connector, backupConnector: m.backup_connector, groupName: m.group_name,
      }));
      for (const m of this.members!) if (m.backupConnector) this.backups.set(m.nodeId, m.backupConnector);
      this.gotTopology();
      this.emit("topology", this.members);
    });
    call.on("error", () => undefined);
    call.on("status", () => {
      if (this.closed || call !== this.watch) return;
      // The watched node is gone: keep the last list, watch another member after retryInterval.
      setTimeout(() => this.rewatch(t), this.options.retryInterval);
    });
  }

  private rewatch(failed: string): void {
    if (this.closed) return;
    const others = [...(this.members?.map((m) => m.connector) ?? []), ...this.listed].filter((c) => this.mayReceivePassword(c));
    const next = others.find((c) => c !== failed) ?? failed;
    this.startWatch(next);
  }

  /** The cluster's members as last pushed (null before the first push). */
  get topology(): TopologyMember[] | null {
    return this.members;
  }

  /** Resolves once a topology push arrived (or after `timeoutMs`). */
  async waitForTopology(timeoutMs = this.options.callTimeout): Promise<TopologyMember[] | null> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.firstTopology, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    return this.members;
  }

  /** Where a new session may go, before the policy orders them (§10). */
  sessionCandidates(): string[] {
    if (this.options.useTopologyForLoadBalancing && this.members) {
      const all = this.members.map((m) => m.connector);
      const ok = all.filter((c) => this.mayReceivePassword(c));
      if (ok.length < all.length && !this.warnedUnverified) {
        this.warnedUnverified = true;
        process.emitWarning("meshmq: topology nodes not written in the URI get no password without TLS; sessions stay on the listed nodes");
      }
      if (ok.length) return ok;
    }
    return [...this.listed];
  }

  /** Opens a session on the node the load-balancing policy picks (an unreachable one: the next, each once). */
  async createSession(opts: { transacted?: boolean } = {}): Promise<Session> {
    if (this.closed) throw new ConnectionFailedError("the connection is closed");
    const ordered = orderCandidates(this.sessionCandidates(), this.policy);
    let last: MeshMQError = new ConnectionFailedError("no node to open a session on");
    for (const t of ordered) {
      const s = new Session(this, this.options, Boolean(opts.transacted));
      try {
        await s.start(this.nodeFor(t));
        this.sessions.add(s);
        return s;
      } catch (e) {
        if (!(e instanceof MeshMQError)) throw e;
        last = e;
        if (e.reason === "CONNECTION_FAILED" || e.reason === "NOT_ACTIVE") continue;
        throw e;
      }
    }
    throw last;
  }

  /**
   * A new temporary queue of this connection (JMS createTemporaryQueue, docs/protocol.md §6.7): it
   * lives until its `delete()` or until this connection closes; anyone may send to it by its name,
   * and any session of this connection, on any node, may consume from it. Throws
   * UnsupportedVersionError from a router that speaks a session protocol below 3.
   */
  async createTemporaryQueue(): Promise<TemporaryQueue> {
    const anchor = await this.anchorSession();
    const tq = new TemporaryQueue(randomUUID().replace(/-/g, ""), this);
    this.temporaryQueues.set(tq.name, tq);
    try {
      await anchor.holdTemporaryQueue(tq);
    } catch (e) {
      this.temporaryQueues.delete(tq.name);
      throw e;
    }
    return tq;
  }

  /** The anchor session, opened when there is none (one at a time). */
  private anchorSession(): Promise<Session> {
    const next = this.anchorLock.then(async () => {
      if (this.anchor === null || !this.anchor.holdsOpen()) this.anchor = await this.createSession();
      return this.anchor;
    });
    this.anchorLock = next.catch(() => undefined);
    return next;
  }

  /** @internal the connection's temporary queue of that name, if it is one. */
  temporaryQueue(name: string): TemporaryQueue | undefined {
    return this.temporaryQueues.get(name);
  }

  /** @internal */
  forgetTemporaryQueue(name: string): void {
    this.temporaryQueues.delete(name);
  }

  /** @internal where a session lost on `failed` (node `nodeId`) tries to go, in order (§11.1). */
  failoverCandidates(nodeId: string, failed: string, redirect?: string): string[] {
    const out: string[] = [];
    const add = (t: string | undefined) => { if (t && !out.includes(t) && this.mayReceivePassword(t)) out.push(t); };
    add(redirect);
    const now = this.members?.find((m) => m.nodeId === nodeId)?.connector;
    if (now !== failed) add(now);
    add(this.backups.get(nodeId));
    add(failed);
    if (this.uri.anyNodeFailover) {
      for (const t of this.listed) add(t);
      for (const m of this.members ?? []) add(m.connector);
    }
    return out;
  }

  /** @internal */
  failureDetected(failed: string, s: Session, err: MeshMQError): void {
    let inc = this.incidents.get(failed);
    if (!inc) {
      this.incidents.set(failed, (inc = { sessions: new Set(), failed: null, firstError: err }));
      this.emit("failover", "FAILURE_DETECTED", err);
    }
    inc.sessions.add(s);
  }

  /** @internal */
  failoverDone(failed: string, s: Session, ok: boolean, err: MeshMQError | null): void {
    const inc = this.incidents.get(failed);
    if (!inc) return;
    inc.sessions.delete(s);
    if (!ok && !inc.failed) inc.failed = err;
    if (inc.sessions.size === 0) {
      this.incidents.delete(failed);
      if (inc.failed) this.emit("failover", "FAILOVER_FAILED", inc.failed);
      else this.emit("failover", "FAILOVER_COMPLETED", inc.firstError);
    }
  }

  /** @internal */
  forgetSession(s: Session): void {
    this.sessions.delete(s);
  }

  /** Closes every session (the temporary queues' anchor last), the topology watch and the channels. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const anchor = this.anchor;
    await Promise.allSettled([...this.sessions].filter((s) => s !== anchor).map((s) => s.close()));
    if (anchor) await anchor.close().catch(() => undefined);
    for (const tq of this.temporaryQueues.values()) tq.deleted = true;
    this.temporaryQueues.clear();
    this.watch?.cancel();
    for (const n of this.nodes.values()) n.close();
    this.nodes.clear();
  }
}
