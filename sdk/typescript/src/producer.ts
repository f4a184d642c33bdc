/**
 * Producers (docs/protocol.md §5): sends gathered into one SendBatch per
 * event-loop turn, a send resolving at its batch's confirm, the confirmation
 * window in bytes, duplicate ids, idempotent producers, and large messages
 * sent as a header plus LargeChunks (§7).
 */
import { randomUUID } from "node:crypto";
import { InvalidRequestError, MeshMQError, UnblockedError, errorFor } from "./errors";
import { SendOptions, toWireMessage, windowCost } from "./message";
import type { Session } from "./session";

interface Pending {
  msg: Record<string, unknown>;
  cost: number;
  resolve: () => void;
  reject: (e: Error) => void;
  large?: boolean;
}

/** Sources a large message's body may come from. */
export type BodySource = Buffer | Uint8Array | string | AsyncIterable<Uint8Array | string> | Iterable<Uint8Array>;

const MAX_FLUSH_BYTES = 4 * 1024 * 1024;

export class Producer {
  private queue: Pending[] = [];
  private queuedBytes = 0;
  private flushScheduled = false;
  private readonly inflight = new Map<number, Pending[]>();
  private nextBatch = 1;
  private windowUsed = 0;
  private readonly windowWaiters: { cost: number; grant: () => void; promise: Promise<void>; cancelled: boolean }[] = [];
  private readonly key = randomUUID();
  private seq = 0;
  private closed = false;
  /** Batches to resend after a failover (idempotent producer outside a transaction). */
  private kept: Pending[][] = [];
  private idleWaiters: (() => void)[] = [];

  /** @internal */
  constructor(
    private readonly session: Session,
    readonly id: number,
    readonly address: string,
    readonly idempotent: boolean,
  ) {}

  private get limit(): number {
    const o = this.session.options;
    const c = o.confirmationWindowSize === -1 ? Infinity : o.confirmationWindowSize;
    const p = o.producerWindowSize === -1 ? Infinity : o.producerWindowSize;
    return Math.min(c, p);
  }

  private get flushBytes(): number {
    const l = this.limit;
    return Math.min(MAX_FLUSH_BYTES, l === Infinity ? MAX_FLUSH_BYTES : Math.max(1, Math.floor(l / 4)));
  }

  /** @internal the CreateProducer request, also sent again on a failover. */
  createRequest() {
    return { producer_id: this.id, address: this.address, window_size: this.session.options.producerWindowSize };
  }

  /**
   * Sends one message; resolves once the router confirmed it (stored, for a
   * durable one). A rejection throws the typed error of its reason, e.g.
   * DuplicateIdError. A body longer than minLargeMessageSize goes as a large message.
   */
  async send(body: Buffer | Uint8Array | string, opts: SendOptions = {}): Promise<void> {
    const buf = toBuffer(body);
    if (buf.length > this.session.options.minLargeMessageSize) return this.sendLarge(buf, { ...opts, size: buf.length });
    const { confirmed } = await this.sendAsync(buf, opts);
    return confirmed;
  }

  /**
   * Queues one message and resolves as soon as the confirmation window has room for
   * it (the Python SDK's send_async); `confirmed` resolves at its confirm. Use it to
   * keep many sends in flight in order without holding a promise per message.
   * Large bodies are not taken here: use send or sendLarge.
   */
  async sendAsync(body: Buffer | Uint8Array | string, opts: SendOptions = {}): Promise<{ confirmed: Promise<void> }> {
    const buf = toBuffer(body);
    if (buf.length > this.session.options.minLargeMessageSize) {
      throw new InvalidRequestError(`a body of ${buf.length} bytes is a large message (over minLargeMessageSize): use send or sendLarge`);
    }
    this.checkOpen();
    if (this.idempotent && opts.duplicateId) {
      throw new InvalidRequestError("an idempotent producer stamps its own duplicate ids; do not give duplicateId");
    }
    const msg = toWireMessage(buf, opts);
    if (this.session.state !== "open") await this.session.ready(opts.signal);
    const cost = windowCost(buf.length);
    const wait = this.reserve(cost);
    if (wait) await (opts.signal ? abortable(wait, opts.signal).catch((e) => { this.cancelReservation(wait, cost); throw e; }) : wait);
    this.checkOpen();
    if (this.idempotent) msg.duplicate_id = `${this.key}:${++this.seq}`;
    this.session.noteWork();
    const confirmed = this.enqueue(msg, cost, opts.signal);
    confirmed.catch(() => undefined); // the caller may only look at it later
    return { confirmed };
  }

  private enqueue(msg: Record<string, unknown>, cost: number, signal?: AbortSignal): Promise<void> {
    const p = new Promise<void>((resolve, reject) => {
      this.queue.push({ msg, cost, resolve, reject });
    });
    this.queuedBytes += cost;
    if (this.queue.length >= this.session.options.producerMaxBatch || this.queuedBytes >= this.flushBytes) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => { this.flushScheduled = false; this.flush(); });
    }
    return signal ? abortable(p, signal) : p;
  }

  /** Takes `cost` bytes of the window now (null), or a promise granting them in FIFO order. */
  private reserve(cost: number): Promise<void> | null {
    if (this.windowWaiters.length === 0 && (this.windowUsed === 0 || this.windowUsed + cost <= this.limit)) {
      this.windowUsed += cost;
      return null;
    }
    let grant!: () => void;
    const p = new Promise<void>((r) => (grant = r));
    this.windowWaiters.push({ cost, grant, promise: p, cancelled: false });
    return p;
  }

  private cancelReservation(p: Promise<void>, cost: number): void {
    const w = this.windowWaiters.find((x) => x.promise === p);
    if (w) w.cancelled = true;
    else this.release(cost); // already granted: give it back
  }

  /** Sends whatever is queued as one SendBatch now. @internal */
  flush(): void {
    if (this.queue.length === 0 || !this.session.isOpen()) return;
    const items = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    const batchId = this.nextBatch++;
    this.inflight.set(batchId, items);
    this.session.write({ send: { producer_id: this.id, batch_id: batchId, messages: items.map((i) => i.msg) } });
  }

  private release(cost: number): void {
    this.windowUsed -= cost;
    while (this.windowWaiters.length) {
      const w = this.windowWaiters[0];
      if (w.cancelled) { this.windowWaiters.shift(); continue; }
      if (this.windowUsed > 0 && this.windowUsed + w.cost > this.limit) break;
      this.windowWaiters.shift();
      this.windowUsed += w.cost;
      w.grant();
    }
  }

  /** @internal a SendConfirm for one of this producer's batches. */
  onConfirm(batchId: number, rejections: { index: number; reason: string; detail: string }[]): void {
    const items = this.inflight.get(batchId);
    if (!items) return;
    this.inflight.delete(batchId);
    const rejected = new Map<number, { reason: string; detail: string }>();
    for (const r of rejections) rejected.set(r.index, r);
    items.forEach((item, i) => {
      this.release(item.cost);
      const r = rejected.get(i);
      if (!r) item.resolve();
      else if (this.idempotent && r.reason === "DUPLICATE_ID" && !item.large) item.resolve(); // stored before: confirmed
      else item.reject(errorFor(r.reason, r.detail || r.reason));
    });
    this.checkIdle();
  }

  private checkIdle(): void {
    if (!this.hasInflight()) this.idleWaiters.splice(0).forEach((w) => w());
  }

  /** @internal a SessionError for this producer (e.g. an unknown producer id): its batch fails. */
  onError(batchId: number, err: MeshMQError): void {
    const items = this.inflight.get(batchId);
    if (!items) return;
    this.inflight.delete(batchId);
    for (const item of items) {
      this.release(item.cost);
      item.reject(err);
    }
    this.checkIdle();
  }

  /** @internal the stream is lost: unconfirmed sends fail with UNBLOCKED, or are kept by an idempotent producer. */
  onStreamLost(keep: boolean): void {
    const batches = [...this.inflight.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
    this.inflight.clear();
    for (const items of batches) {
      const resend = items.filter((i) => keep && !i.large);
      const fail = items.filter((i) => !(keep && !i.large));
      if (resend.length) this.kept.push(resend);
      for (const i of fail) {
        this.release(i.cost);
        i.reject(new UnblockedError("the session failed over before this send was confirmed: its outcome is unknown; resend it with the same duplicate id"));
      }
    }
  }

  /** @internal after a failover: the kept batches again, in order, under new batch ids. */
  resendKept(): void {
    const kept = this.kept;
    this.kept = [];
    for (const items of kept) {
      const batchId = this.nextBatch++;
      this.inflight.set(batchId, items);
      this.session.write({ send: { producer_id: this.id, batch_id: batchId, messages: items.map((i) => i.msg) } });
    }
  }

  /** @internal the session ended for good. */
  failAll(err: Error): void {
    for (const items of [...this.inflight.values(), this.queue, ...this.kept]) for (const i of items) i.reject(err);
    this.inflight.clear();
    this.queue = [];
    this.kept = [];
    this.closed = true;
    this.windowWaiters.splice(0).forEach((w) => w.grant());
    this.idleWaiters.splice(0).forEach((w) => w());
  }

  /** Number of sends not yet confirmed. */
  get unconfirmed(): number {
    let n = this.queue.length;
    for (const v of this.inflight.values()) n += v.length;
    return n;
  }

  /** @internal */
  hasInflight(): boolean {
    return this.inflight.size > 0 || this.queue.length > 0 || this.kept.length > 0;
  }

  /**
   * Sends a large message from a Buffer or a stream of chunks (a Readable, an async
   * generator...) of exactly `size` bytes (docs/protocol.md §7): the header, then
   * LargeChunks of minLargeMessageSize bytes; resolves at its confirm.
   */
  async sendLarge(source: BodySource, opts: SendOptions & { size: number }): Promise<void> {
    this.checkOpen();
    const size = opts.size;
    if (!Number.isSafeInteger(size) || size < 0) throw new InvalidRequestError(`size must be a byte count, got ${size}`);
    if (this.idempotent && opts.duplicateId) {
      throw new InvalidRequestError("an idempotent producer stamps its own duplicate ids; do not give duplicateId");
    }
    await this.session.ready(opts.signal);
    const release = await this.session.largeLock();
    let confirmed: Promise<void>;
    try {
      this.flush();
      const msg = toWireMessage(Buffer.alloc(0), opts);
      msg.large = true;
      msg.body_size = size;
      if (this.idempotent) msg.duplicate_id = `${this.key}:${++this.seq}`;
      this.session.noteWork();
      const batchId = this.nextBatch++;
      confirmed = new Promise<void>((resolve, reject) => {
        this.inflight.set(batchId, [{ msg, cost: 0, resolve, reject, large: true }]);
      });
      confirmed.catch(() => undefined);
      const generation = this.session.generation;
      this.session.write({ send: { producer_id: this.id, batch_id: batchId, messages: [msg] } });
      const chunkSize = this.session.options.minLargeMessageSize;
      let sent = 0;
      let lastSent = false;
      let pending: Buffer[] = [];
      let pendingLen = 0;
      const writeChunk = async (data: Buffer, last: boolean) => {
        if (this.session.generation !== generation) throw new UnblockedError("the session failed over during a large message upload");
        const ok = this.session.write({ large_chunk: { producer_id: this.id, batch_id: batchId, data, last } });
        sent += data.length;
        if (last) lastSent = true;
        if (!ok) await this.session.drained();
      };
      for await (const piece of iterate(source)) {
        pending.push(piece);
        pendingLen += piece.length;
        if (sent + pendingLen > size) {
          await writeChunk(Buffer.alloc(0), true); // ends the upload: the router refuses it (INVALID_REQUEST)
          throw new InvalidRequestError(`the body of a large message is longer than its size ${size}`);
        }
        while (pendingLen >= chunkSize) {
          const all = pending.length === 1 ? pending[0] : Buffer.concat(pending);
          const data = all.subarray(0, chunkSize);
          const rest = all.subarray(chunkSize);
          pending = rest.length ? [rest] : [];
          pendingLen = rest.length;
          await writeChunk(data, sent + data.length === size);
        }
      }
      if (!lastSent) {
        await writeChunk(Buffer.concat(pending), true);
        if (sent !== size) throw new InvalidRequestError(`the body of a large message had ${sent} bytes, its size says ${size}`);
      }
    } finally {
      release();
    }
    return opts.signal ? abortable(confirmed, opts.signal) : confirmed;
  }

  private checkOpen(): void {
    if (this.closed) throw new InvalidRequestError(`producer ${this.id} is closed`);
    this.session.checkNotClosed();
  }

  /** Waits for every send's confirm, then closes the producer on the router. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    if (this.hasInflight() && this.session.isOpen()) await new Promise<void>((r) => this.idleWaiters.push(r));
    this.closed = true;
    if (this.session.isOpen()) this.session.write({ close_producer: { producer_id: this.id } });
    this.session.forgetProducer(this.id);
  }
}

function toBuffer(body: Buffer | Uint8Array | string): Buffer {
  if (typeof body === "string") return Buffer.from(body);
  return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

async function* iterate(source: BodySource): AsyncIterable<Buffer> {
  if (typeof source === "string") { yield Buffer.from(source); return; }
  if (source instanceof Uint8Array) { yield Buffer.from(source.buffer, source.byteOffset, source.byteLength); return; }
  for await (const piece of source as AsyncIterable<Uint8Array | string>) {
    yield typeof piece === "string" ? Buffer.from(piece) : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
  }
}

/** `p`, or an AbortError once `signal` aborts (the operation itself goes on). */
export function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason ?? abortError());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? abortError());
    signal.addEventListener("abort", onAbort, { once: true });
    p.then((v) => { signal.removeEventListener("abort", onAbort); resolve(v); },
      (e) => { signal.removeEventListener("abort", onAbort); reject(e); });
  });
}

function abortError(): Error {
  const e = new Error("The operation was aborted");
  e.name = "AbortError";
  return e;
}

