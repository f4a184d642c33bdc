/**
 * A session: one `Broker.Session` stream (docs/protocol.md §4) multiplexing
 * producers, consumers, acks and a local transaction; on a lost node it fails
 * over (§11) when reconnectAttempts ≠ 0.
 */
import { EventEmitter, once } from "node:events";
import * as grpc from "@grpc/grpc-js";
import {
  ConnectionFailedError, InvalidRequestError, MeshMQError, QueueInUseError, ScaledDownError,
  TransactionRolledBackError, UnblockedError, UnsupportedVersionError, errorFor, fromGrpcError, warrantsFailover,
} from "./errors";
import { ClientOptions } from "./options";

/** The session protocol this SDK speaks (docs/protocol.md §14): a router whose
 * min-client-protocol-version is above it refuses it with UnsupportedVersionError. */
export const PROTOCOL_VERSION = 4;
import { Node, credentialsMetadata } from "./transport";
import { Producer } from "./producer";
import { Consumer, ConsumerOptions, ReceivedMessage } from "./consumer";
import { randomUUID } from "node:crypto";
import { RoutingType, SendOptions, decodeProperties } from "./message";

/** A message seen by a queue browser. */
export interface BrowsedMessage {
  body: Buffer;
  properties: ReturnType<typeof decodeProperties>;
  messageId: number;
  nodeId: string;
  address: string;
  durable: boolean;
  priority: number;
  /** waiting, paged or scheduled. */
  state: string;
  /** Deliveries before. */
  deliveryCount: number;
  bodySize: number;
  large: boolean;
}
import { abortable } from "./producer";
import type { Connection } from "./connection";
import { TemporaryQueue } from "./temporary_queue";

type Call = grpc.ClientDuplexStream<any, any>;

interface PendingCall {
  resolve: (v: any) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
  kind: string;
}

export interface ProducerOptions {
  /** Stamp every message with a duplicate id of its own and resend unconfirmed ones after a failover. */
  idempotent?: boolean;
}

export interface QueueOptions {
  routingType?: RoutingType;
  durable?: boolean;
  filter?: string;
}

/** Opens one session stream on `node`: sends `open`, waits for `opened`. */
async function openStream(node: Node, o: ClientOptions, transacted: boolean, connectionId: string, timeoutMs: number):
    Promise<{ call: Call; opened: any }> {
  const call: Call = node.broker.Session(credentialsMetadata(o));
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (err: Error | null, opened?: any) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      call.removeListener("data", onData);
      call.removeListener("status", onStatus);
      if (err) {
        call.on("error", () => undefined);
        call.cancel();
        reject(err);
      } else resolve({ call, opened });
    };
    const onData = (r: any) => {
      if (r.kind === "opened") finish(null, r.opened);
      else finish(new MeshMQError(`expected opened as the first response, got ${r.kind}`, "INTERNAL"));
    };
    const onStatus = (s: grpc.StatusObject) => {
      finish(s.code === grpc.status.OK
        ? new ConnectionFailedError(`${node.target} ended the session before opening it`)
        : fromGrpcError(s as any));
    };
    const timer = setTimeout(() => finish(new ConnectionFailedError(`${node.target} did not open a session within ${timeoutMs} ms`)), timeoutMs);
    call.on("data", onData);
    call.on("status", onStatus);
    call.on("error", () => undefined); // the status carries it
    call.write({ open: { client_id: o.clientID, transacted, protocol_version: PROTOCOL_VERSION, connection_id: connectionId } });
  });
}

export class Session extends EventEmitter {
  private call!: Call;
  /** The node this session's stream is on. */
  node!: Node;
  nodeId = "";
  sessionId = "";
  /** The session protocol this session's node speaks (SessionOpened.protocol_version; 1 from a router before versions). */
  routerProtocol = 0;
  /** Bumps with every new stream: a message from an older one cannot be acked. @internal */
  generation = 0;
  /** @internal */
  state: "open" | "failing" | "closing" | "closed" = "open";
  private nextId = 1;
  private readonly producers = new Map<number, Producer>();
  private readonly consumers = new Map<number, Consumer>();
  private readonly pending = new Map<string, PendingCall>();
  private readonly settles = new Map<number, { ack: number[]; nack: number[] }>();
  private settleScheduled = false;
  private settleWritten: Promise<void> = Promise.resolve();
  private settleDone: (() => void) | null = null;
  private largeChain: Promise<void> = Promise.resolve();
  private readyWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private txWork = false;
  private rollbackOnly = false;
  private redirect: { node_id: string; connector: string; reason: string } | null = null;
  /** Non-durable queues this session created (Management.CreateQueue): made again after a failover. */
  private readonly volatileQueues: Record<string, unknown>[] = [];
  /** The connection's temporary queues this session asked its node for (§6.7). */
  private readonly heldTemporaryQueues = new Map<string, TemporaryQueue>();
  private endedWaiter: ((s: grpc.StatusObject) => void) | null = null;
  private failure: MeshMQError | null = null;

  /** @internal use Connection.createSession */
  constructor(readonly connection: Connection, readonly options: ClientOptions, readonly transacted: boolean) {
    super();
    this.on("error", () => undefined); // 'exception' is the listener API; never crash on 'error'
  }

  /** @internal */
  async start(node: Node): Promise<void> {
    const { call, opened } = await openStream(node, this.options, this.transacted, this.connection.connectionId, this.options.callTimeout);
    this.attach(node, call, opened);
  }

  private attach(node: Node, call: Call, opened: any): void {
    this.node = node;
    this.call = call;
    this.nodeId = opened.node_id;
    this.sessionId = opened.session_id;
    this.routerProtocol = opened.protocol_version || 1;
    call.on("data", (r: any) => this.dispatch(r, call));
    call.on("status", (s: grpc.StatusObject) => this.onStatus(s, call));
  }

  /** @internal */
  isOpen(): boolean {
    return this.state === "open";
  }

  /** @internal */
  checkNotClosed(): void {
    if (this.state === "closed" || this.state === "closing") {
      throw this.failure ?? new InvalidRequestError("the session is closed");
    }
  }

  /** @internal waits while a failover runs (callFailoverTimeout), throws once closed. */
  ready(signal?: AbortSignal): Promise<void> {
    if (this.state === "open") return Promise.resolve();
    if (this.state !== "failing") return Promise.reject(this.failure ?? new InvalidRequestError("the session is closed"));
    const t = this.options.callFailoverTimeout;
    const p = new Promise<void>((resolve, reject) => {
      const w = { resolve: () => { clearTimeout(timer); resolve(); }, reject: (e: Error) => { clearTimeout(timer); reject(e); } };
      const timer = t === -1 ? undefined : setTimeout(() => {
        this.readyWaiters = this.readyWaiters.filter((x) => x !== w);
        reject(new UnblockedError(`the session was still failing over after callFailoverTimeout ${t} ms`));
      }, t);
      this.readyWaiters.push(w);
    });
    return signal ? abortable(p, signal) : p;
  }

  /** @internal writes one SessionRequest; false means gRPC is buffering (see drained()). */
  write(req: Record<string, unknown>): boolean {
    if (this.state !== "open" && this.state !== "closing") return true;
    return this.call.write(req);
  }

  /** @internal resolves once the stream takes writes again. */
  async drained(): Promise<void> {
    await once(this.call as any, "drain");
  }

  /** @internal one large message at a time per session (§7). */
  async largeLock(): Promise<() => void> {
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const before = this.largeChain;
    this.largeChain = before.then(() => mine);
    await before;
    return release;
  }

  /** @internal a send or an ack joined the transaction. */
  noteWork(): void {
    if (this.transacted) this.txWork = true;
  }

  /** @internal */
  markRollbackOnly(): void {
    this.rollbackOnly = true;
  }

  private newId(): number {
    return this.nextId++;
  }

  private expect(key: string, kind: string): Promise<any> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(key);
        reject(new ConnectionFailedError(`no answer to ${kind} within callTimeout ${this.options.callTimeout} ms`));
      }, this.options.callTimeout);
      this.pending.set(key, { resolve, reject, timer, kind });
    });
  }

  private settle(key: string, err: Error | null, value?: any): boolean {
    const p = this.pending.get(key);
    if (!p) return false;
    this.pending.delete(key);
    clearTimeout(p.timer);
    if (err) p.reject(err);
    else p.resolve(value);
    return true;
  }

  /** Creates a producer; `address` is its default ("" = every send names its own). */
  async createProducer(address = "", opts: ProducerOptions = {}): Promise<Producer> {
    await this.ready();
    this.flushSettles();
    const id = this.newId();
    const p = new Producer(this, id, address, Boolean(opts.idempotent));
    const answer = this.expect(`p:${id}`, "create_producer");
    this.write({ create_producer: p.createRequest() });
    await answer;
    this.producers.set(id, p);
    return p;
  }

  /**
   * Creates a consumer on a queue (auto-created when the router allows). `queue` may be one
   * of this connection's temporary queues (or its name), on whichever node this session is:
   * the session first asks its own node for it (§6.7).
   */
  async createConsumer(queue: string | TemporaryQueue, opts: ConsumerOptions = {}): Promise<Consumer> {
    const name = String(queue);
    const tq = this.connection.temporaryQueue(name);
    if (tq && !this.heldTemporaryQueues.has(name)) await this.holdTemporaryQueue(tq);
    return this.newConsumer({ queue: name, filter: opts.selector ?? "", routing_type: opts.routingType ?? "ROUTING_TYPE_UNSPECIFIED" }, opts.windowSize);
  }

  /**
   * A new temporary queue of this session's connection (JMS createTemporaryQueue, §6.7): it
   * lives until its `delete()` or until the connection closes; anyone may send to it by its
   * name (`String(queue)`, e.g. as a reply-to), and any session of this connection, on any
   * node, may consume from it.
   */
  async createTemporaryQueue(): Promise<TemporaryQueue> {
    return this.connection.createTemporaryQueue();
  }

  /** @internal asks this session's node for the connection's temporary queue `tq` (made there, or there already);
   * the node keeps it while this session is open. */
  async holdTemporaryQueue(tq: TemporaryQueue): Promise<void> {
    await this.ready();
    if (this.routerProtocol < 3) {
      throw new UnsupportedVersionError(`the router at ${this.node.target} speaks session protocol ${this.routerProtocol}; ` +
        "a connection's temporary queues need protocol 3: upgrade it");
    }
    const id = this.newId();
    const answer = this.expect(`r:${id}`, "create_temporary_queue");
    this.write({ create_temporary_queue: { request_id: id, queue: tq.name } });
    await answer;
    this.heldTemporaryQueues.set(tq.name, tq);
    tq.holders.add(this);
  }

  /** @internal whether this session is open (or failing over) and has not failed. */
  holdsOpen(): boolean {
    return this.state === "open" || this.state === "failing";
  }

  /** @internal QUEUE_IN_USE while one of this session's consumers consumes `queue`. */
  refuseIfConsumed(queue: string): void {
    for (const c of this.consumers.values()) {
      if (c.createRequest().queue === queue && !c.isClosed) {
        throw new QueueInUseError(`temporary queue ${JSON.stringify(queue)} has a consumer on this connection: close it before deleting the queue`);
      }
    }
  }

  /**
   * @internal deletes the connection's temporary queue `queue` on this session's node; one gone there already is
   * no error. The caller has made sure none of the connection's consumers is open on it; on a router speaking
   * protocol 4 their closes were answered before they returned, so QUEUE_IN_USE there is not a close still on its
   * way and is thrown at once. A router below 4 does not answer a close, and one just sent on another session may not have reached
   * it yet: QUEUE_IN_USE is then asked again until callTimeout, and thrown after it (docs/protocol.md §6.7).
   */
  async deleteTemporaryQueue(queue: string): Promise<void> {
    const deadline = Date.now() + this.options.callTimeout;
    let pause = 5;
    for (;;) {
      await this.ready();
      const id = this.newId();
      const answer = this.expect(`r:${id}`, "delete_temporary_queue");
      this.write({ delete_temporary_queue: { request_id: id, queue } });
      try {
        await answer;
        return;
      } catch (e) {
        if (e instanceof MeshMQError && e.reason === "QUEUE_NOT_FOUND") return;
        const retry = e instanceof MeshMQError && e.reason === "QUEUE_IN_USE" && this.routerProtocol < 4;
        if (!retry || Date.now() + pause > deadline) throw e;
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 100);
    }
  }

  /** @internal */
  forgetTemporaryQueue(queue: string): void {
    this.heldTemporaryQueues.delete(queue);
  }

  private releaseTemporaryQueues(): void {
    for (const tq of this.heldTemporaryQueues.values()) tq.holders.delete(this);
  }

  /**
   * Subscribes to an address: without `subscription` a temporary queue of this consumer;
   * with it a named (durable unless `durable` false; `shared`) subscription as in JMS 2.0.
   */
  async subscribe(address: string, opts: ConsumerOptions & { subscription?: string; shared?: boolean; durable?: boolean } = {}): Promise<Consumer> {
    const req: Record<string, unknown> = { address, filter: opts.selector ?? "", subscription: opts.subscription ?? "", shared: Boolean(opts.shared) };
    if (opts.durable !== undefined) req.durable = opts.durable;
    return this.newConsumer(req, opts.windowSize);
  }

  private async newConsumer(fields: Record<string, unknown>, windowSize?: number): Promise<Consumer> {
    await this.ready();
    this.flushSettles();
    const id = this.newId();
    const window = windowSize ?? this.options.consumerWindowSize;
    const c = new Consumer(this, id, { consumer_id: id, window_size: window, ...fields }, window);
    this.consumers.set(id, c); // deliveries may follow consumer_created in the same read
    const answer = this.expect(`c:${id}`, "create_consumer");
    this.write({ create_consumer: c.createRequest() });
    try {
      c.onCreated((await answer).queue);
    } catch (e) {
      this.consumers.delete(id);
      throw e;
    }
    return c;
  }

  /** Creates a queue through Management.CreateQueue on this session's node; a non-durable one is made again after a failover. */
  async createQueue(address: string, queue: string, opts: QueueOptions = {}): Promise<void> {
    await this.ready();
    const req = { name: queue, address, routing_type: opts.routingType ?? "ANYCAST", filter: opts.filter ?? "", durable: opts.durable ?? true };
    await this.connection.unary(this.node, "CreateQueue", req);
    if (!req.durable) this.volatileQueues.push(req);
  }

  /**
   * Browses a queue without consuming (Management.BrowseQueue): the messages in
   * the order a consumer would meet them; no credit, no acks. Stop early with
   * `break` or the signal. A large message's body is not included (`bodySize` is).
   */
  async *browse(queue: string, opts: { selector?: string; pageSize?: number; signal?: AbortSignal } = {}): AsyncIterable<BrowsedMessage> {
    await this.ready(opts.signal);
    const call = this.node.management.BrowseQueue(
      { queue, filter: opts.selector ?? "", page_size: opts.pageSize ?? 0 }, credentialsMetadata(this.options));
    const onAbort = () => call.cancel();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const page of call as AsyncIterable<any>) {
        for (const b of page.messages) {
          const msg = b.message ?? {};
          yield {
            body: msg.body ?? Buffer.alloc(0), properties: decodeProperties(msg.properties), messageId: msg.message_id,
            nodeId: msg.node_id, address: msg.address, durable: msg.durable, priority: msg.priority,
            state: b.state, deliveryCount: b.delivery_count, bodySize: Number(b.body_size), large: Boolean(msg.large),
          };
        }
      }
    } catch (e) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw (e as any)?.code !== undefined ? fromGrpcError(e as any) : e;
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      call.cancel();
    }
  }

  /**
   * Request-reply as docs/protocol.md §6.6 (JMS QueueRequestor): sends `body` to `address`
   * with a temporary reply address and a correlation id, resolves with the reply or
   * null after `timeoutMs`. Refused on a transacted session (the request would leave at commit).
   */
  async request(address: string, body: Buffer | string, opts: SendOptions & { timeoutMs?: number } = {}): Promise<ReceivedMessage | null> {
    if (this.transacted) throw new InvalidRequestError("request-reply on a transacted session: the request would leave only at commit");
    const replyTo = randomUUID();
    const correlationId = randomUUID();
    const replies = await this.subscribe(replyTo);
    try {
      const producer = await this.createProducer(address);
      try {
        await producer.send(body, { ...opts, replyTo, correlationId });
      } finally {
        await producer.close();
      }
      const deadline = Date.now() + (opts.timeoutMs ?? this.options.callTimeout);
      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) return null;
        const m = await replies.receive({ timeoutMs: left, signal: opts.signal });
        if (m === null) return null;
        await m.ack();
        if (m.correlationId === correlationId) return m;
      }
    } finally {
      await replies.close();
    }
  }

  /** Answers a request (§6.6): to its replyTo, with its correlation id (or ID:<node>:<message id>). */
  async reply(request: ReceivedMessage, body: Buffer | string, opts: SendOptions = {}): Promise<void> {
    if (!request.replyTo) throw new InvalidRequestError("the message has no replyTo to answer");
    const producer = this.replyProducer ?? (this.replyProducer = await this.createProducer(""));
    await producer.send(body, {
      ...opts, address: request.replyTo, correlationId: request.correlationId || `ID:${request.nodeId}:${request.messageId}`,
    });
  }

  private replyProducer: Producer | null = null;

  /** Deletes the durable subscription `subscription` of this session's client id. */
  async unsubscribe(subscription: string): Promise<{ queue: string; messagesRemoved: number }> {
    await this.ready();
    const id = this.newId();
    const answer = this.expect(`r:${id}`, "unsubscribe");
    this.write({ unsubscribe: { request_id: id, subscription } });
    const r = await answer;
    return { queue: r.queue, messagesRemoved: Number(r.messages_removed) };
  }

  private flushProducers(): void {
    for (const p of this.producers.values()) p.flush();
  }

  /** Commits the transaction: every send and ack since the last commit/rollback, stored at once. */
  async commit(): Promise<void> {
    await this.ready();
    if (this.transacted && this.rollbackOnly) {
      await this.rollback();
      throw new TransactionRolledBackError("the session failed over during the transaction: it was rolled back; redo its work");
    }
    this.flushProducers();
    this.flushSettles();
    const id = this.newId();
    const answer = this.expect(`t:${id}`, "commit");
    this.write({ commit: { request_id: id } });
    await answer;
    this.txWork = false;
  }

  /** Rolls the transaction back: its sends are dropped, its deliveries come again. */
  async rollback(): Promise<void> {
    await this.ready();
    this.flushProducers();
    this.flushSettles();
    const id = this.newId();
    const answer = this.expect(`t:${id}`, "rollback");
    const handed = [...this.consumers.values()].map((c) => ({ consumer_id: c.id, last_handed_delivery_id: c.lastHandedDeliveryId }));
    this.write({ rollback: { request_id: id, handed } });
    await answer;
    this.txWork = false;
    this.rollbackOnly = false;
  }

  /** @internal queue an ack or nack; all of one event-loop turn go as one frame per consumer. */
  queueSettle(consumerId: number, deliveryId: number, kind: "ack" | "nack"): Promise<void> {
    let s = this.settles.get(consumerId);
    if (!s) this.settles.set(consumerId, (s = { ack: [], nack: [] }));
    s[kind].push(deliveryId);
    if (!this.settleScheduled) {
      this.settleScheduled = true;
      // one promise for every ack of this turn: it resolves when their frame is written
      this.settleWritten = new Promise<void>((r) => (this.settleDone = r));
      setImmediate(() => this.flushSettles());
    }
    return this.settleWritten;
  }

  /** @internal */
  flushSettles(): void {
    this.settleScheduled = false;
    const done = this.settleDone;
    this.settleDone = null;
    if (this.settles.size) {
      const all = [...this.settles.entries()];
      this.settles.clear();
      for (const [consumerId, s] of all) {
        if (s.ack.length) this.write({ ack: { consumer_id: consumerId, delivery_ids: s.ack } });
        if (s.nack.length) this.write({ nack: { consumer_id: consumerId, delivery_ids: s.nack } });
      }
    }
    done?.();
  }

  /** @internal */
  forgetProducer(id: number): void { this.producers.delete(id); }
  /**
   * @internal closes consumer `id` on the node and forgets it here. A router speaking protocol 4 answers once the
   * consumer is off its queue and what it held is back (docs/protocol.md §6.5): this waits for it (callTimeout), so
   * another session's consumer, or a temporary queue's delete, finds the queue as the close left it. A stream that
   * fails meanwhile ends the wait: its node gives back everything as the session ends there.
   */
  async closeConsumer(id: number, lastHanded: number, onNode: boolean, wait: boolean): Promise<void> {
    this.consumers.delete(id);
    if (!onNode || !this.isOpen()) return;
    this.flushSettles();
    const answered = wait && this.routerProtocol >= 4;
    const answer = answered ? this.expect(`x:${id}`, "close_consumer") : null;
    this.write({ close_consumer: { consumer_id: id, last_handed_delivery_id: lastHanded, answer: answered } });
    if (!answer) return;
    try {
      await answer;
    } catch (e) {
      if (e instanceof UnblockedError || this.failure) return; // the stream failed: nothing of it is left there
      throw e; // no answer within callTimeout
    }
  }

  private dispatch(r: any, call: Call): void {
    if (call !== this.call) return;
    switch (r.kind) {
      case "confirm": {
        const c = r.confirm;
        this.producers.get(c.producer_id)?.onConfirm(Number(c.batch_id), c.rejections);
        break;
      }
      case "deliveries": {
        const d = r.deliveries;
        this.consumers.get(d.consumer_id)?.onDeliveries(d.deliveries, d.sizes);
        break;
      }
      case "large_chunk":
        this.consumers.get(r.large_chunk.consumer_id)?.onLargeChunk(r.large_chunk);
        break;
      case "producer_created":
        this.settle(`p:${r.producer_created.producer_id}`, null, r.producer_created);
        break;
      case "consumer_created":
        this.settle(`c:${r.consumer_created.consumer_id}`, null, r.consumer_created);
        break;
      case "tx_result": {
        const key = `t:${Number(r.tx_result.request_id)}`;
        if (!r.tx_result.committed) for (const c of this.consumers.values()) c.dropBuffered();
        this.settle(key, null, r.tx_result);
        break;
      }
      case "unsubscribed":
        this.settle(`r:${Number(r.unsubscribed.request_id)}`, null, r.unsubscribed);
        break;
      case "temporary_queue_created":
        this.settle(`r:${Number(r.temporary_queue_created.request_id)}`, null, r.temporary_queue_created);
        break;
      case "temporary_queue_deleted":
        this.settle(`r:${Number(r.temporary_queue_deleted.request_id)}`, null, r.temporary_queue_deleted);
        break;
      case "consumer_closed":
        this.settle(`x:${r.consumer_closed.consumer_id}`, null, r.consumer_closed);
        break;
      case "error":
        this.onSessionError(r.error);
        break;
      case "redirect":
        this.redirect = r.redirect;
        break;
      default:
        break; // a kind this SDK does not know: skipped (§14)
    }
  }

  /** Routes a SessionError as docs/protocol.md §4.3 says. */
  private onSessionError(e: any): void {
    const err = errorFor(e.reason, e.message);
    const rid = Number(e.request_id);
    if (e.consumer_id && (this.settle(`c:${e.consumer_id}`, err) || this.settle(`x:${e.consumer_id}`, err))) return;
    if (e.producer_id && this.settle(`p:${e.producer_id}`, err)) return;
    if (rid && (this.settle(`t:${rid}`, err) || this.settle(`r:${rid}`, err))) return;
    if (e.consumer_id && this.consumers.has(e.consumer_id)) {
      const c = this.consumers.get(e.consumer_id)!;
      if (err.reason === "QUEUE_NOT_FOUND" || err.reason === "SLOW_CONSUMER") {
        this.consumers.delete(c.id);
        c.end(err);
      }
      this.emit("exception", err);
      return;
    }
    if (e.producer_id && this.producers.has(e.producer_id)) {
      this.producers.get(e.producer_id)!.onError(rid, err);
      return;
    }
    this.emit("exception", err);
  }

  private onStatus(s: grpc.StatusObject, call: Call): void {
    if (call !== this.call) return;
    if (this.state === "closing" || this.state === "closed") {
      this.endedWaiter?.(s);
      return;
    }
    let err: MeshMQError;
    if (this.redirect) {
      err = new ScaledDownError(`node scaled down (${this.redirect.reason}); its messages are on ${this.redirect.connector}`,
        this.redirect.connector, this.redirect.node_id);
    } else if (s.code === grpc.status.OK) {
      err = new ConnectionFailedError(`${this.node.target} ended the session`);
    } else {
      err = fromGrpcError(s as any);
    }
    void this.lost(err);
  }

  /** The stream is gone: fail over if allowed, else fail the session. */
  private async lost(err: MeshMQError): Promise<void> {
    if (this.options.reconnectAttempts !== 0 && warrantsFailover(err)) return this.failover(err);
    this.fail(err instanceof ConnectionFailedError ? err : new ConnectionFailedError(err.message, err.reason));
  }

  private fail(err: MeshMQError): void {
    this.state = "closed";
    this.failure = err;
    for (const key of [...this.pending.keys()]) this.settle(key, err);
    for (const p of this.producers.values()) p.failAll(err);
    for (const c of this.consumers.values()) c.end(err);
    this.readyWaiters.splice(0).forEach((w) => w.reject(err));
    this.releaseTemporaryQueues();
    this.connection.forgetSession(this);
    this.emit("exception", err);
  }

  private async failover(err: MeshMQError): Promise<void> {
    // A node lost while the session was being made again there (after its open, before the
    // creates' answers) continues the same failover: the incident stays the first node's.
    const resumed = this.recovering;
    const failedTarget = resumed ? this.lastFailedTarget : this.node.target;
    this.lastFailedTarget = failedTarget;
    this.recovering = true;
    this.state = "failing";
    this.generation++;
    const redirect = this.redirect;
    this.redirect = null;
    if (!resumed) this.connection.failureDetected(failedTarget, this, err);
    const unblocked = () => new UnblockedError("the session failed over while this call waited: its outcome is unknown");
    for (const [key, p] of [...this.pending.entries()]) {
      if (p.kind === "rollback") this.settle(key, null, {});
      else if (p.kind === "commit") this.settle(key, new TransactionRolledBackError("the session failed over during commit: rolled back (it may have committed on the old node: duplicate ids make the retry safe)"));
      else this.settle(key, unblocked());
    }
    if (this.transacted && this.txWork) this.rollbackOnly = true;
    for (const p of this.producers.values()) p.onStreamLost(p.idempotent && !this.transacted);
    for (const c of this.consumers.values()) c.onStreamLost();
    this.settles.clear(); // acks not yet written: the new node delivers those messages again
    this.settleDone?.();
    this.settleDone = null;
    this.largeChain = Promise.resolve();
    const o = this.options;
    const perTry = o.clientFailureCheckPeriod === -1 ? o.callTimeout : Math.min(o.clientFailureCheckPeriod, o.callTimeout);
    let interval = o.retryInterval;
    for (let round = 0; o.reconnectAttempts === -1 || round < o.reconnectAttempts; round++) {
      if (round > 0) {
        await new Promise((r) => setTimeout(r, interval));
        interval = Math.min(o.maxRetryInterval, interval * o.retryIntervalMultiplier);
      }
      if (this.state !== "failing") return; // closed meanwhile
      for (const target of this.connection.failoverCandidates(this.nodeId, failedTarget, redirect?.connector)) {
        let opened;
        try {
          opened = await openStream(this.connection.nodeFor(target), o, this.transacted, this.connection.connectionId, perTry);
        } catch {
          continue;
        }
        if (this.state !== "failing") { opened.call.cancel(); return; }
        await this.reattach(this.connection.nodeFor(target), opened.call, opened.opened);
        return;
      }
    }
    const final = new ConnectionFailedError(`failover of the session on ${failedTarget} failed: no candidate took it (${err.message})`);
    this.connection.failoverDone(failedTarget, this, false, final);
    this.fail(final);
  }

  private async reattach(node: Node, call: Call, opened: any): Promise<void> {
    this.attach(node, call, opened);
    this.state = "open";
    // This node lost too before the creates were answered (its stream ended): the failover
    // that follows takes the producers and consumers on to the next node, and says how it went.
    const generation = this.generation;
    const superseded = () => this.generation !== generation;
    for (const q of this.volatileQueues) {
      try { await this.connection.unary(node, "CreateQueue", q); } catch (e) {
        if (!(e instanceof MeshMQError && e.reason === "QUEUE_EXISTS")) this.emit("exception", e);
      }
    }
    if (superseded()) return;
    const answers: Promise<unknown>[] = [];
    // The connection's temporary queues it held first (§11.2): not stored, so the new node has them only from now on.
    for (const tq of this.heldTemporaryQueues.values()) {
      const id = this.newId();
      const a = this.expect(`r:${id}`, "create_temporary_queue");
      this.write({ create_temporary_queue: { request_id: id, queue: tq.name } });
      answers.push(a.catch((e) => {
        // its consumers' creates say the rest; the listener hears why
        if (!(e instanceof UnblockedError)) this.emit("exception", e);
      }));
    }
    for (const p of this.producers.values()) {
      const a = this.expect(`p:${p.id}`, "create_producer");
      this.write({ create_producer: p.createRequest() });
      answers.push(a.catch((e) => { if (superseded()) return; this.producers.delete(p.id); p.failAll(e); }));
    }
    for (const c of this.consumers.values()) {
      const a = this.expect(`c:${c.id}`, "create_consumer");
      this.write({ create_consumer: c.createRequest() });
      answers.push(a.then(() => { if (!superseded()) c.onReattached(); },
        (e) => { if (superseded()) return; this.consumers.delete(c.id); c.end(e); }));
    }
    for (const p of this.producers.values()) {
      p.resendKept();
      p.flush(); // sends queued while the stream was down (their flush found it closed)
    }
    await Promise.all(answers);
    if (superseded()) return;
    this.recovering = false;
    this.readyWaiters.splice(0).forEach((w) => w.resolve());
    this.connection.failoverDone(this.failedTargetOf(), this, true, null);
    this.emit("exception", new UnblockedError(`the session failed over to ${node.target}`, true));
  }

  private lastFailedTarget = "";
  /** A failover started and the session is not yet back on a node (its creates unanswered). */
  private recovering = false;
  private failedTargetOf(): string { return this.lastFailedTarget; }

  /**
   * Ends the session: consumers are closed (their unseen messages go back uncounted),
   * every send is confirmed, then the stream is half-closed and the router ends it.
   */
  async close(): Promise<void> {
    if (this.state === "closed" || this.state === "closing") return;
    if (this.state === "failing") {
      this.state = "closed";
      this.connection.forgetSession(this);
      const err = new InvalidRequestError("the session is closed");
      for (const p of this.producers.values()) p.failAll(err);
      for (const c of this.consumers.values()) c.end(null);
      this.readyWaiters.splice(0).forEach((w) => w.reject(err));
      this.releaseTemporaryQueues();
      return;
    }
    for (const c of [...this.consumers.values()]) await c.close(false); // the stream's end follows the closes
    this.flushProducers();
    this.flushSettles();
    this.state = "closing";
    const ended = new Promise<grpc.StatusObject>((r) => (this.endedWaiter = r));
    this.call.end();
    const timer = setTimeout(() => this.call.cancel(), this.options.callTimeout);
    await ended;
    clearTimeout(timer);
    this.state = "closed";
    this.releaseTemporaryQueues();
    for (const p of this.producers.values()) p.failAll(new ConnectionFailedError("the session ended before this send was confirmed"));
    this.connection.forgetSession(this);
  }

  /** @internal */
  get isTransacted(): boolean { return this.transacted; }
}

