/**
 * The conformance driver (tests/conformance/DRIVER.md in the repository): one JSON request per line on
 * stdin, one JSON response per line on stdout, requests run concurrently.
 *   node dist/conformance/driver.js
 */
import { createHash } from "node:crypto";
import * as readline from "node:readline";
import { connect, Connection } from "../connection";
import { Session } from "../session";
import { Producer } from "../producer";
import { Consumer, ReceivedMessage } from "../consumer";
import { Double, Properties } from "../message";
import { TemporaryQueue } from "../temporary_queue";
import { InvalidRequestError, MeshMQError } from "../errors";
import { VERSION } from "../index";

type Req = Record<string, any> & { id: number; op: string };

const handles = new Map<string, unknown>();
const events = new Map<Connection, string[]>();
let counter = 0;

function put(prefix: string, obj: unknown): string {
  const h = `${prefix}${++counter}`;
  handles.set(h, obj);
  return h;
}

function get<T>(h: unknown, cls: abstract new (...a: any[]) => T, what: string): T {
  const obj = handles.get(String(h));
  if (!(obj instanceof cls)) throw new InvalidRequestError(`no ${what} ${JSON.stringify(h)}`);
  return obj;
}

function need(req: Req, name: string): any {
  if (req[name] === undefined || req[name] === null) throw new InvalidRequestError(`${req.op}: missing argument ${name}`);
  return req[name];
}

/** Driver properties travel as JSON: integral numbers are ints, others doubles. */
function properties(p: Record<string, unknown> | undefined): Properties | undefined {
  if (!p) return undefined;
  const out: Properties = {};
  for (const [k, v] of Object.entries(p)) {
    if (typeof v === "number" && !Number.isInteger(v)) out[k] = new Double(v);
    else if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") out[k] = v;
    else throw new InvalidRequestError(`property ${k}: unsupported JSON value`);
  }
  return out;
}

function jsonProps(m: ReceivedMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m.properties)) {
    out[k] = typeof v === "bigint" ? Number(v) : Buffer.isBuffer(v) ? v.toString("base64") : v;
  }
  return out;
}

const OPS: Record<string, (req: Req) => Promise<Record<string, unknown>>> = {
  async hello() {
    return { sdk: "typescript", version: VERSION };
  },
  async connect(req) {
    const opts: Record<string, unknown> = {};
    if (req.user !== undefined) opts.username = req.user;
    if (req.password !== undefined) opts.password = req.password;
    if (req.ca_file) { opts.sslEnabled = true; opts.trustStorePath = req.ca_file; }
    const conn = await connect(need(req, "uri"), opts);
    const log: string[] = [];
    events.set(conn, log);
    conn.on("failover", (type: string) => log.push(type));
    return { connection: put("c", conn) };
  },
  async session(req) {
    const conn = get(req.connection, Connection, "connection");
    return { session: put("s", await conn.createSession({ transacted: Boolean(req.transacted) })) };
  },
  async create_queue(req) {
    const s = get(req.session, Session, "session");
    const routing = req.routing ?? "anycast";
    if (routing !== "anycast" && routing !== "multicast") throw new InvalidRequestError(`routing must be anycast or multicast, got ${routing}`);
    await s.createQueue(need(req, "address"), need(req, "queue"), {
      routingType: routing === "multicast" ? "MULTICAST" : "ANYCAST", durable: req.durable ?? true,
    });
    return {};
  },
  async create_temporary_queue(req) {
    const maker = req.session !== undefined && req.session !== null
      ? get(req.session, Session, "session") : get(req.connection, Connection, "connection");
    const tq = await maker.createTemporaryQueue();
    return { temporary_queue: put("t", tq), queue: tq.name };
  },
  async delete_temporary_queue(req) {
    await get(req.temporary_queue, TemporaryQueue, "temporary queue").delete();
    return {};
  },
  async producer(req) {
    const s = get(req.session, Session, "session");
    return { producer: put("p", await s.createProducer(need(req, "address"), { idempotent: Boolean(req.idempotent) })) };
  },
  async send(req) {
    const p = get(req.producer, Producer, "producer");
    await p.send(Buffer.from(need(req, "body"), "base64"), {
      properties: properties(req.properties), durable: req.durable ?? true,
      duplicateId: req.duplicate_id, priority: req.priority,
    });
    return {};
  },
  async send_many(req) {
    const p = get(req.producer, Producer, "producer");
    const count = Number(need(req, "count"));
    const props = properties(req.properties);
    const sends: Promise<void>[] = [];
    for (let i = 0; i < count; i++) sends.push(p.send(String(i), { properties: props, durable: req.durable ?? true }));
    await Promise.all(sends);
    return {};
  },
  async send_large(req) {
    const p = get(req.producer, Producer, "producer");
    const size = Number(need(req, "size"));
    const seed = Number(need(req, "seed"));
    async function* body() {
      const piece = 65536;
      for (let off = 0; off < size; off += piece) {
        const n = Math.min(piece, size - off);
        const b = Buffer.allocUnsafe(n);
        for (let i = 0; i < n; i++) b[i] = (seed + off + i) % 251;
        yield b;
      }
    }
    await p.sendLarge(body(), { size, durable: req.durable ?? true });
    return {};
  },
  async consumer(req) {
    // `credit` counts messages (tests/conformance/DRIVER.md); the SDK's window is in bytes
    // (consumerWindowSize, docs/protocol.md §6.2). Credit 1 is its window 0, one message per
    // receive; a larger credit has no exact byte equivalent and is refused, as the Python driver does.
    const s = get(req.session, Session, "session");
    let windowSize: number | undefined;
    if (req.credit === undefined || req.credit === null) windowSize = undefined;
    else if (req.credit === 1) windowSize = 0;
    else throw new InvalidRequestError(`consumer: the TypeScript SDK's credit is in bytes; only credit 1 (window 0) ` +
                                       `has an exact equivalent in messages, not ${JSON.stringify(req.credit)}`);
    return { consumer: put("k", await s.createConsumer(need(req, "queue"), { selector: req.selector, windowSize })) };
  },
  async receive(req) {
    const c = get(req.consumer, Consumer, "consumer");
    const m = await c.receive({ timeoutMs: Number(req.timeout_ms ?? 0) });
    if (!m) return { message: null };
    const out: Record<string, unknown> = {
      handle: put("m", m), size: m.body.length, sha256: createHash("sha256").update(m.body).digest("hex"),
      properties: jsonProps(m), delivery_count: m.deliveryCount, durable: m.durable, priority: m.priority,
    };
    if (m.body.length <= 65536) out.body = m.body.toString("base64");
    return { message: out };
  },
  async ack(req) {
    await get(req.message, ReceivedMessage, "message").ack();
    return {};
  },
  async commit(req) {
    await get(req.session, Session, "session").commit();
    return {};
  },
  async rollback(req) {
    await get(req.session, Session, "session").rollback();
    return {};
  },
  async close(req) {
    const obj = handles.get(String(need(req, "handle")));
    if (obj instanceof Connection || obj instanceof Session || obj instanceof Producer || obj instanceof Consumer) {
      await obj.close();
      return {};
    }
    throw new InvalidRequestError(`no connection, session, producer or consumer ${JSON.stringify(req.handle)}`);
  },
  async failover_events(req) {
    return { events: [...(events.get(get(req.connection, Connection, "connection")) ?? [])] };
  },
};

function answer(obj: unknown): void {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

async function handle(line: string): Promise<void> {
  let req: Req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    process.stderr.write(`driver: not JSON: ${line}\n`);
    return;
  }
  const op = OPS[req.op];
  if (!op) {
    answer({ id: req.id, ok: false, error: { reason: "UNSUPPORTED", type: "UnsupportedOperation", message: `unknown op ${JSON.stringify(req.op)}` } });
    return;
  }
  try {
    answer({ id: req.id, ok: true, result: await op(req) });
  } catch (e) {
    const err = e as Error;
    const reason = err instanceof MeshMQError ? err.reason : "INTERNAL";
    answer({ id: req.id, ok: false, error: { reason, type: err.name || err.constructor.name, message: err.message } });
  }
}

function main(): void {
  const inflight = new Set<Promise<void>>();
  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    if (!line.trim()) return;
    const p = handle(line).finally(() => inflight.delete(p));
    inflight.add(p);
  });
  rl.on("close", async () => {
    await Promise.allSettled([...inflight]);
    for (const obj of handles.values()) if (obj instanceof Connection) await obj.close().catch(() => undefined);
    process.exit(0);
  });
}

main();
