/**
 * Consumers (docs/protocol.md §6): credit in bytes granted by the client at
 * half the window, window 0 (one Flow{1} per receive), deliveries buffered in
 * delivery-id order, large bodies reassembled from LargeChunks (§7), individual
 * acks, and an async iterator.
 */
import { MeshMQError, UnblockedError } from "./errors";
import { decodeProperties, RoutingType } from "./message";
import { abortable } from "./producer";
import type { Session } from "./session";

export interface ConsumerOptions {
  /** JMS/Artemis selector. */
  selector?: string;
  /** Credit window in bytes (default: the URI's consumerWindowSize); -1 unbounded, 0 one message per receive. */
  windowSize?: number;
  /** Routing type of a queue the consumer auto-creates. */
  routingType?: RoutingType;
}

export interface ReceiveOptions {
  /** Give up (resolving null) after this many ms; absent: wait until a message or the consumer closes. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A delivered message. `ack()` acknowledges it (individually); `nack()` gives it back at once. */
export class ReceivedMessage {
  /** @internal */ generation = 0;
  constructor(
    private readonly consumer: Consumer,
    /** Per consumer and stream, from 1. */
    readonly deliveryId: number,
    /** How many times it has been delivered, this time included (> 1: possibly processed before). */
    readonly deliveryCount: number,
    readonly body: Buffer,
    private readonly wire: Record<string, any>,
    /** @internal credit this delivery cost */ readonly cost: number,
  ) {}
  get properties() { return decodeProperties(this.wire.properties); }
  get messageId(): number { return this.wire.message_id; }
  get nodeId(): string { return this.wire.node_id; }
  get address(): string { return this.wire.address; }
  get durable(): boolean { return this.wire.durable; }
  get priority(): number { return this.wire.priority; }
  get timestamp(): number { return this.wire.timestamp; }
  get expiration(): number { return this.wire.expiration; }
  get duplicateId(): string { return this.wire.duplicate_id; }
  get routingType(): string { return this.wire.routing_type; }
  get userId(): string { return this.wire.user_id; }
  get replyTo(): string { return this.wire.reply_to; }
  get correlationId(): string { return this.wire.correlation_id; }
  get type(): string { return this.wire.type; }
  get groupId(): string { return this.wire.group_id; }
  get groupSeq(): number { return this.wire.group_seq; }
  get large(): boolean { return this.wire.large; }
  /** Body length (for a large message, the whole body). */
  get size(): number { return this.body.length; }
  get redelivered(): boolean { return this.deliveryCount > 1; }
  /** Acknowledges this message (in a transacted session: at commit). */
  ack(): Promise<void> { return this.consumer.settle(this, "ack"); }
  /** Gives it back to its queue at once, counted as a delivery attempt. */
  nack(): Promise<void> { return this.consumer.settle(this, "nack"); }
}

interface Waiter {
  resolve: (m: ReceivedMessage | null) => void;
  reject: (e: Error) => void;
}

interface LargeInProgress {
  delivery: Record<string, any>;
  cost: number;
  chunks: Buffer[];
}

const REMEMBERED = 10000;

export class Consumer implements AsyncIterable<ReceivedMessage> {
  /** Buffered deliveries from `head` on (an index, not shift(): shift is O(n) on a big array). */
  private buffer: ReceivedMessage[] = [];
  private head = 0;
  private waiters: Waiter[] = [];
  private lastHanded = 0;
  private handedBytes = 0;
  private flowPending = false;
  private yieldOnce = false;
  private large: LargeInProgress | null = null;
  private closed = false;
  private error: Error | null = null;
  /** The last REMEMBERED handed messages (node_id, message_id, count), a ring written per message... */
  private readonly handedRing: [string, number, number][] = [];
  private handedPos = 0;
  /** ...and, after a failover, "node:message" -> the count handed before it: a redelivery shows a higher one. */
  private handedBefore = new Map<string, number>();
  /** The queue's name, as the router reported it. */
  queue = "";

  /** @internal */
  constructor(
    private readonly session: Session,
    readonly id: number,
    private readonly request: Record<string, unknown>,
    readonly window: number,
  ) {}

  /** @internal the CreateConsumer request, also sent again on a failover. */
  createRequest(): Record<string, unknown> {
    return this.request;
  }

  /** @internal */
  onCreated(queue: string): void {
    this.queue = queue;
  }

  /** @internal */
  onDeliveries(deliveries: Record<string, any>[], sizes: number[] | undefined): void {
    this.flowPending = false;
    deliveries.forEach((d, i) => {
      const msg = d.message ?? {};
      const cost = (sizes?.[i] ?? 0) + (msg.large ? Number(msg.body_size) : 0);
      if (msg.large) {
        this.large = { delivery: d, cost, chunks: [] };
        if (Number(msg.body_size) === 0) this.large = null, this.push(d, Buffer.alloc(0), cost);
      } else {
        this.push(d, msg.body ?? Buffer.alloc(0), cost);
      }
    });
    this.wake();
  }

  /** @internal a chunk of the large message being delivered. */
  onLargeChunk(chunk: Record<string, any>): void {
    const l = this.large;
    if (!l || Number(chunk.delivery_id) !== Number(l.delivery.delivery_id)) return;
    l.chunks.push(chunk.data);
    if (chunk.last) {
      this.large = null;
      this.push(l.delivery, Buffer.concat(l.chunks), l.cost);
      this.wake();
    }
  }

  private push(d: Record<string, any>, body: Buffer, cost: number): void {
    const msg = d.message ?? {};
    let count = d.delivery_count;
    if (this.handedBefore.size) {
      const key = `${msg.node_id}:${msg.message_id}`;
      const before = this.handedBefore.get(key);
      if (before !== undefined) {
        this.handedBefore.delete(key);
        if (count <= before) count = before + 1;
      }
    }
    const m = new ReceivedMessage(this, Number(d.delivery_id), count, body, msg, cost);
    m.generation = this.session.generation;
    this.buffer.push(m);
  }

  private get buffered(): number {
    return this.buffer.length - this.head;
  }

  private take(): ReceivedMessage {
    const m = this.buffer[this.head++];
    if (this.head === this.buffer.length) {
      this.buffer = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.buffer.length) {
      this.buffer = this.buffer.slice(this.head);
      this.head = 0;
    }
    return m;
  }

  private clearBuffer(): void {
    this.buffer = [];
    this.head = 0;
  }

  private wake(): void {
    while (this.waiters.length && this.buffered) this.waiters.shift()!.resolve(this.hand(this.take()));
  }

  private hand(m: ReceivedMessage): ReceivedMessage {
    this.lastHanded = m.deliveryId;
    const wire = (m as any).wire;
    if (this.handedRing.length < REMEMBERED) this.handedRing.push([wire.node_id, wire.message_id, m.deliveryCount]);
    else this.handedRing[this.handedPos] = [wire.node_id, wire.message_id, m.deliveryCount];
    this.handedPos = (this.handedPos + 1) % REMEMBERED;
    if (this.window > 0) {
      this.handedBytes += m.cost;
      // Half the window, as Artemis clients grant; or whatever was handed once the buffer
      // is empty: the router's batches are about half a window, so waiting for a full
      // half would leave one batch in flight at a time (a round trip per batch).
      if (this.handedBytes >= this.window / 2 || (this.buffered === 0 && this.large === null)) {
        this.session.write({ flow: { consumer_id: this.id, credits: this.handedBytes } });
        this.handedBytes = 0;
        // Node sends a written frame only when the event loop turns: an application
        // taking the rest of the buffer in one go would hold the Flow back until the
        // buffer is empty, and the router would send nothing meanwhile (lock-step).
        this.yieldOnce = true;
      }
    }
    return m;
  }

  /**
   * The next message, or null when `timeoutMs` passed (or the consumer closed).
   * Throws the router's typed error if it closed the consumer (e.g. QueueNotFoundError).
   */
  receive(opts: ReceiveOptions = {}): Promise<ReceivedMessage | null> {
    if (this.yieldOnce) {
      this.yieldOnce = false;
      // let the Flow just written leave before handing more
      return new Promise((r) => setImmediate(r)).then(() => this.receive(opts));
    }
    if (this.buffered) return Promise.resolve(this.hand(this.take()));
    return this.wait(opts);
  }

  private async wait(opts: ReceiveOptions): Promise<ReceivedMessage | null> {
    if (this.error) throw this.error;
    if (this.closed) return null;
    if (this.window === 0 && !this.flowPending && this.session.isOpen()) {
      this.flowPending = true;
      this.session.write({ flow: { consumer_id: this.id, credits: 1 } });
    }
    let waiter!: Waiter;
    const p = new Promise<ReceivedMessage | null>((resolve, reject) => { waiter = { resolve, reject }; });
    this.waiters.push(waiter);
    const drop = () => { const i = this.waiters.indexOf(waiter); if (i >= 0) this.waiters.splice(i, 1); };
    let timer: NodeJS.Timeout | undefined;
    if (opts.timeoutMs !== undefined) {
      timer = setTimeout(() => { drop(); waiter.resolve(null); }, Math.max(0, opts.timeoutMs));
    }
    try {
      return await (opts.signal ? abortable(p, opts.signal) : p);
    } finally {
      if (timer) clearTimeout(timer);
      drop();
    }
  }

  /** `for await (const msg of consumer)`: ends when the consumer closes. */
  async *[Symbol.asyncIterator](): AsyncIterator<ReceivedMessage> {
    for (;;) {
      const m = await this.receive();
      if (m === null) return;
      yield m;
    }
  }

  /** @internal */
  settle(m: ReceivedMessage, kind: "ack" | "nack"): Promise<void> {
    if (m.generation !== this.session.generation) {
      if (this.session.transacted) {
        this.session.markRollbackOnly();
        return Promise.resolve();
      }
      return Promise.reject(new UnblockedError(`cannot ${kind} a message delivered before the session failed over: it will be delivered again`));
    }
    if (this.closed && !this.session.isOpen()) return Promise.reject(new MeshMQError(`consumer ${this.id} is closed`, "INVALID_REQUEST"));
    if (kind === "ack") this.session.noteWork();
    return this.session.queueSettle(this.id, m.deliveryId, kind);
  }

  /** @internal the rollback's TxResult came: what the buffer holds comes again. */
  dropBuffered(): void {
    this.clearBuffer();
    this.large = null;
  }

  /** @internal the stream is lost; the new node delivers again. */
  onStreamLost(): void {
    if (this.handedBefore.size + this.handedRing.length > REMEMBERED) this.handedBefore.clear();
    for (const [node, mid, count] of this.handedRing) this.handedBefore.set(`${node}:${mid}`, count);
    this.handedRing.length = 0;
    this.handedPos = 0;
    this.clearBuffer();
    this.large = null;
    this.lastHanded = 0;
    this.handedBytes = 0;
    this.flowPending = false;
  }

  /** @internal created again on a new stream: a receive() waiting with window 0 asks again. */
  onReattached(): void {
    if (this.window === 0 && this.waiters.length && !this.flowPending) {
      this.flowPending = true;
      this.session.write({ flow: { consumer_id: this.id, credits: 1 } });
    }
  }

  /** @internal the consumer ends: iterators finish, receive() answers null (or throws `err`). */
  end(err: Error | null): void {
    this.closed = true;
    if (err) this.error = err;
    for (const w of this.waiters.splice(0)) err ? w.reject(err) : w.resolve(null);
  }

  /** @internal */
  get lastHandedDeliveryId(): number {
    return this.lastHanded;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Closes the consumer: what it buffered unseen goes back uncounted (CloseConsumer.last_handed_delivery_id).
   * Resolves once the node has what it held back in the queue (a router speaking protocol 4, docs/protocol.md
   * §6.5), as Artemis's close blocks; `wait` false (the session closing): at once.
   */
  async close(wait = true): Promise<void> {
    if (this.closed) return;
    const onNode = this.error === null; // a consumer the node refused or ended has nothing there to close
    const lastHanded = this.lastHanded;
    this.end(null);
    this.clearBuffer();
    await this.session.closeConsumer(this.id, lastHanded, onNode, wait);
  }
}
