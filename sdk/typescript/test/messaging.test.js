// Producers, consumers, confirms, duplicate ids, selectors, credit and acks against a real router.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { startRouter } = require("./router.js");
const m = require("../dist/index.js");

let router;
let conn;
test.before(async () => {
  router = await startRouter({
    extra: `address-settings:\n  "nocreate.#":\n    auto-create-queues: false\n    auto-create-addresses: false\n` +
      `  "dups.small":\n    id-cache-size: 3\n`,
  });
  conn = await m.connect(router.url);
});
test.after(async () => {
  await conn?.close();
  await router?.stop();
});

test("messages arrive in order with their properties, durable and priority", async () => {
  const s = await conn.createSession();
  const p = await s.createProducer("order.q");
  const c = await s.createConsumer("order.q");
  await Promise.all(Array.from({ length: 200 }, (_, i) => p.send(`m${i}`, { properties: { i, s: "x", f: 0.5, b: true, big: 2n ** 40n }, priority: 7 })));
  for (let i = 0; i < 200; i++) {
    const msg = await c.receive({ timeoutMs: 5000 });
    assert.equal(msg.body.toString(), `m${i}`);
    assert.deepEqual(msg.properties, { i, s: "x", f: 0.5, b: true, big: 2 ** 40 });
    assert.equal(msg.durable, true);
    assert.equal(msg.priority, 7);
    assert.equal(msg.deliveryCount, 1);
    await msg.ack();
  }
  assert.equal(await c.receive({ timeoutMs: 100 }), null);
  await s.close();
});

test("for await over a consumer ends when the consumer closes", async () => {
  const s = await conn.createSession();
  const p = await s.createProducer("iter.q");
  const c = await s.createConsumer("iter.q");
  for (let i = 0; i < 5; i++) await p.send(String(i));
  const got = [];
  for await (const msg of c) {
    got.push(msg.body.toString());
    await msg.ack();
    if (got.length === 5) await c.close();
  }
  assert.deepEqual(got, ["0", "1", "2", "3", "4"]);
  await s.close();
});

test("a durable send resolves after its confirm: a new session sees it", async () => {
  const s1 = await conn.createSession();
  await s1.createQueue("confirm.q", "confirm.q");
  const p = await s1.createProducer("confirm.q");
  await p.send("stored", { durable: true });
  await s1.close();
  const s2 = await conn.createSession();
  const c = await s2.createConsumer("confirm.q");
  const msg = await c.receive({ timeoutMs: 5000 });
  assert.equal(msg.body.toString(), "stored");
  await msg.ack();
  await s2.close();
});

test("a duplicate id is refused with DuplicateIdError and stored once", async () => {
  const s = await conn.createSession();
  await s.createQueue("dup.q", "dup.q");
  const p = await s.createProducer("dup.q");
  const c = await s.createConsumer("dup.q");
  await p.send("first", { duplicateId: "order-1" });
  await assert.rejects(p.send("again", { duplicateId: "order-1" }), (e) => e instanceof m.DuplicateIdError && e.reason === "DUPLICATE_ID");
  await p.send("other", { duplicateId: "order-2" });
  const bodies = [];
  for (let msg; (msg = await c.receive({ timeoutMs: 300 })); ) { bodies.push(msg.body.toString()); await msg.ack(); }
  assert.deepEqual(bodies, ["first", "other"]);
  await s.close();
});

test("a selector picks matching messages; a bad one is InvalidSelectorError", async () => {
  const s = await conn.createSession();
  await s.createQueue("sel.q", "sel.q");
  const p = await s.createProducer("sel.q");
  for (let i = 0; i < 10; i++) await p.send(String(i), { properties: { color: i % 2 ? "red" : "blue", n: i } });
  const c = await s.createConsumer("sel.q", { selector: "color = 'red' AND n > 4" });
  const got = [];
  for (let msg; (msg = await c.receive({ timeoutMs: 300 })); ) { got.push(msg.body.toString()); await msg.ack(); }
  assert.deepEqual(got, ["5", "7", "9"]);
  await assert.rejects(s.createConsumer("sel.q", { selector: "color = = 'x'" }), (e) => e instanceof m.InvalidSelectorError);
  await s.close();
});

test("unacked messages come back counted; messages buffered unseen come back uncounted", async () => {
  const s = await conn.createSession();
  await s.createQueue("redeliver.q", "redeliver.q");
  const p = await s.createProducer("redeliver.q");
  for (let i = 0; i < 4; i++) await p.send(String(i));
  const c = await s.createConsumer("redeliver.q");
  const a = await c.receive({ timeoutMs: 5000 });
  const b = await c.receive({ timeoutMs: 5000 });
  await b.ack(); // individual ack: a stays unacked, 2 and 3 are buffered unseen
  assert.equal(a.body.toString(), "0");
  await c.close();
  const c2 = await s.createConsumer("redeliver.q");
  const again = [];
  for (let msg; (msg = await c2.receive({ timeoutMs: 300 })); ) { again.push([msg.body.toString(), msg.deliveryCount]); await msg.ack(); }
  assert.deepEqual(again, [["0", 2], ["2", 1], ["3", 1]]);
  await s.close();
});

test("nack gives a message back at once with a higher delivery count", async () => {
  const s = await conn.createSession();
  await s.createQueue("nack.q", "nack.q");
  const p = await s.createProducer("nack.q");
  await p.send("x");
  const c = await s.createConsumer("nack.q");
  const first = await c.receive({ timeoutMs: 5000 });
  await first.nack();
  const second = await c.receive({ timeoutMs: 5000 });
  assert.equal(second.body.toString(), "x");
  assert.equal(second.deliveryCount, 2);
  await second.ack();
  await s.close();
});

test("credit: window 0 buffers nothing, a small window bounds what is in flight", async () => {
  const s = await conn.createSession();
  await s.createQueue("credit.q", "credit.q");
  const p = await s.createProducer("credit.q");
  await Promise.all(Array.from({ length: 50 }, (_, i) => p.send(Buffer.alloc(1000, i))));
  // window 0: two consumers share the queue one message per receive, so neither hoards
  const c0 = await s.createConsumer("credit.q", { windowSize: 0 });
  const c1 = await s.createConsumer("credit.q", { windowSize: 0 });
  const a = await c0.receive({ timeoutMs: 5000 });
  const b = await c1.receive({ timeoutMs: 5000 });
  assert.notEqual(a.body[0], b.body[0]);
  await a.ack(); await b.ack();
  await c0.close(); await c1.close();
  // a 4 KB window: a consumer that does not receive holds at most a few messages; another gets the rest
  const slow = await s.createConsumer("credit.q", { windowSize: 4000 });
  const fast = await s.createConsumer("credit.q", { windowSize: -1 });
  let n = 0;
  for (let msg; (msg = await fast.receive({ timeoutMs: 500 })); n++) await msg.ack();
  let held = 0;
  for (let msg; (msg = await slow.receive({ timeoutMs: 200 })); held++) await msg.ack();
  assert.equal(n + held, 48);
  assert.ok(held >= 1 && held <= 5, `the slow consumer held ${held} messages with a 4000-byte window`);
  await s.close();
});

test("a slow consumer grants credit as it receives: 300 messages through a 2 KB window", async () => {
  const s = await conn.createSession();
  const p = await s.createProducer("flow.q");
  const c = await s.createConsumer("flow.q", { windowSize: 2048 });
  const sent = Promise.all(Array.from({ length: 300 }, (_, i) => p.send(Buffer.alloc(500, i % 256))));
  let n = 0;
  for (let msg; n < 300 && (msg = await c.receive({ timeoutMs: 5000 })); n++) await msg.ack();
  await sent;
  assert.equal(n, 300);
  await s.close();
});

test("typed errors: QueueNotFoundError, AddressNotFoundError, NotTransactedError, InvalidRequestError", async () => {
  const s = await conn.createSession();
  await assert.rejects(s.createConsumer("nocreate.q"), (e) => e instanceof m.QueueNotFoundError && e.reason === "QUEUE_NOT_FOUND");
  const p = await s.createProducer("nocreate.addr");
  await assert.rejects(p.send("x"), (e) => e instanceof m.AddressNotFoundError);
  await assert.rejects(s.commit(), (e) => e instanceof m.NotTransactedError);
  const q = await s.createProducer("");
  await assert.rejects(q.send("x"), (e) => e instanceof m.InvalidRequestError); // no address at all
  await assert.rejects(p.send("x", { priority: 12 }), (e) => e instanceof m.InvalidRequestError && /priority/.test(e.message));
  await s.createQueue("exists.a", "exists.q");
  await assert.rejects(s.createQueue("exists.a", "exists.q"), (e) => e instanceof m.QueueExistsError);
  await s.close();
});

test("a receive with an AbortSignal stops waiting", async () => {
  const s = await conn.createSession();
  const c = await s.createConsumer("abort.q");
  await assert.rejects(c.receive({ signal: AbortSignal.timeout(100) }), (e) => e.name === "TimeoutError");
  await s.close();
});
