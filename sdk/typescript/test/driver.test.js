// The conformance driver (tests/conformance/DRIVER.md in the repository): requests piped to dist/conformance/driver.js against a real router.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const path = require("node:path");
const readline = require("node:readline");
const { spawn } = require("node:child_process");
const { startRouter } = require("./router.js");

let router;
let driver;
let nextId = 1;
const waiting = new Map();

function call(op, args = {}) {
  const id = nextId++;
  driver.stdin.write(JSON.stringify({ id, op, ...args }) + "\n");
  return new Promise((resolve) => waiting.set(id, resolve));
}

async function ok(op, args) {
  const r = await call(op, args);
  assert.equal(r.ok, true, `${op} failed: ${JSON.stringify(r.error)}`);
  return r.result;
}

test.before(async () => {
  router = await startRouter();
  driver = spawn(process.execPath, [path.join(__dirname, "..", "dist", "conformance", "driver.js")], { stdio: ["pipe", "pipe", "inherit"] });
  readline.createInterface({ input: driver.stdout }).on("line", (line) => {
    const r = JSON.parse(line);
    waiting.get(r.id)?.(r);
    waiting.delete(r.id);
  });
});
test.after(async () => {
  if (driver) {
    const exited = new Promise((r) => driver.once("exit", r));
    driver.stdin.end();
    assert.equal(await exited, 0, "the driver exits 0 when stdin closes");
  }
  await router?.stop();
});

test("hello, then send and receive through the driver", async () => {
  assert.deepEqual(await ok("hello"), { sdk: "typescript", version: "0.1.0" });
  const { connection } = await ok("connect", { uri: router.url });
  const { session } = await ok("session", { connection });
  await ok("create_queue", { session, address: "drv.q", queue: "drv.q" });
  const { producer } = await ok("producer", { session, address: "drv.q" });
  await ok("send", { producer, body: Buffer.from("hi").toString("base64"), properties: { n: 3, f: 2.5, s: "x", b: false }, priority: 6 });
  await ok("send_many", { producer, count: 3 });
  const { consumer } = await ok("consumer", { session, queue: "drv.q" });
  const first = (await ok("receive", { consumer, timeout_ms: 5000 })).message;
  assert.equal(Buffer.from(first.body, "base64").toString(), "hi");
  assert.deepEqual(first.properties, { n: 3, f: 2.5, s: "x", b: false });
  assert.equal(first.priority, 6);
  assert.equal(first.durable, true);
  assert.equal(first.delivery_count, 1);
  assert.equal(first.size, 2);
  await ok("ack", { message: first.handle });
  const rest = [];
  for (let i = 0; i < 3; i++) {
    const msg = (await ok("receive", { consumer, timeout_ms: 5000 })).message;
    rest.push(Buffer.from(msg.body, "base64").toString());
    await ok("ack", { message: msg.handle });
  }
  assert.deepEqual(rest, ["0", "1", "2"]);
  assert.deepEqual(await ok("receive", { consumer, timeout_ms: 100 }), { message: null });
  assert.deepEqual(await ok("failover_events", { connection }), { events: [] });
  await ok("close", { handle: connection });
});

test("errors carry the reason and the SDK's class; an unknown op is UNSUPPORTED", async () => {
  const { connection } = await ok("connect", { uri: router.url });
  const { session } = await ok("session", { connection });
  await ok("create_queue", { session, address: "drv.dup", queue: "drv.dup" });
  const { producer } = await ok("producer", { session, address: "drv.dup" });
  const body = Buffer.from("x").toString("base64");
  await ok("send", { producer, body, duplicate_id: "same" });
  const dup = await call("send", { producer, body, duplicate_id: "same" });
  assert.equal(dup.ok, false);
  assert.equal(dup.error.reason, "DUPLICATE_ID");
  assert.equal(dup.error.type, "DuplicateIdError");
  const notx = await call("commit", { session });
  assert.equal(notx.error.reason, "NOT_TRANSACTED");
  const bad = await call("connect", { uri: "meshmq://h:1?nope=1" });
  assert.equal(bad.error.reason, "INVALID_REQUEST");
  const sel = await call("consumer", { session, queue: "drv.dup", selector: "a = = b" });
  assert.equal(sel.error.reason, "INVALID_SELECTOR");
  const unknown = await call("teleport", {});
  assert.equal(unknown.error.reason, "UNSUPPORTED");
  await ok("close", { handle: connection });
});

test("a large message, a transaction and a selector through the driver", async () => {
  const { connection } = await ok("connect", { uri: router.url });
  const { session: tx } = await ok("session", { connection, transacted: true });
  const { session } = await ok("session", { connection });
  await ok("create_queue", { session, address: "drv.big", queue: "drv.big" });
  const { producer } = await ok("producer", { session: tx, address: "drv.big" });
  const size = 300000;
  await ok("send_large", { producer, size, seed: 7 });
  await ok("send", { producer, body: Buffer.from("small").toString("base64"), properties: { kind: "small" } });
  const { consumer } = await ok("consumer", { session, queue: "drv.big" });
  assert.deepEqual(await ok("receive", { consumer, timeout_ms: 300 }), { message: null }, "nothing before commit");
  await ok("commit", { session: tx });
  const big = (await ok("receive", { consumer, timeout_ms: 10000 })).message;
  const expected = Buffer.alloc(size);
  for (let i = 0; i < size; i++) expected[i] = (7 + i) % 251;
  assert.equal(big.size, size);
  assert.equal(big.body, undefined, "bodies over 64 KiB are not echoed");
  assert.equal(big.sha256, crypto.createHash("sha256").update(expected).digest("hex"));
  await ok("ack", { message: big.handle });
  await ok("close", { handle: consumer });
  const { consumer: picky } = await ok("consumer", { session, queue: "drv.big", selector: "kind = 'small'", credit: 1 });
  const small = (await ok("receive", { consumer: picky, timeout_ms: 5000 })).message;
  assert.equal(Buffer.from(small.body, "base64").toString(), "small");
  await ok("ack", { message: small.handle });
  await ok("close", { handle: connection });
});
