// Transactions (commit, rollback) and large messages against a real router.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const { Readable } = require("node:stream");
const { startRouter } = require("./router.js");
const m = require("../dist/index.js");

let router;
let conn;
test.before(async () => {
  router = await startRouter();
  conn = await m.connect(`${router.url}?minLargeMessageSize=65536`);
});
test.after(async () => {
  await conn?.close();
  await router?.stop();
});

async function drain(c, ms = 300) {
  const out = [];
  for (let msg; (msg = await c.receive({ timeoutMs: ms })); ) { out.push(msg.body.toString()); await msg.ack(); }
  return out;
}

test("a transaction's sends are visible only after commit", async () => {
  const tx = await conn.createSession({ transacted: true });
  const plain = await conn.createSession();
  await plain.createQueue("tx.q", "tx.q");
  const c = await plain.createConsumer("tx.q");
  const p = await tx.createProducer("tx.q");
  await p.send("a");
  await p.send("b");
  assert.equal(await c.receive({ timeoutMs: 300 }), null);
  await tx.commit();
  assert.deepEqual(await drain(c, 2000), ["a", "b"]);
  await tx.close();
  await plain.close();
});

test("rollback drops the sends and gives back the acked deliveries", async () => {
  const plain = await conn.createSession();
  await plain.createQueue("txr.q", "txr.q");
  const seed = await plain.createProducer("txr.q");
  await seed.send("in1");
  await seed.send("in2");
  const tx = await conn.createSession({ transacted: true });
  const c = await tx.createConsumer("txr.q");
  const p = await tx.createProducer("txr.out");
  const got = await c.receive({ timeoutMs: 5000 });
  await got.ack();
  await p.send("never");
  await tx.rollback();
  // both come again, the handed one counted, the one buffered unseen not
  const again = [];
  for (let msg; (msg = await c.receive({ timeoutMs: 1000 })); ) { again.push([msg.body.toString(), msg.deliveryCount]); await msg.ack(); }
  await tx.commit();
  assert.deepEqual(again, [["in1", 2], ["in2", 1]]);
  await tx.close();
  const check = await plain.createConsumer("txr.q");
  assert.equal(await check.receive({ timeoutMs: 300 }), null, "the commit removed them");
  await plain.close();
});

test("a duplicate id inside a transaction refuses that send only", async () => {
  const tx = await conn.createSession({ transacted: true });
  const plain = await conn.createSession();
  await plain.createQueue("txd.q", "txd.q");
  const p = await tx.createProducer("txd.q");
  await p.send("one", { duplicateId: "d1" });
  await tx.commit();
  await assert.rejects(p.send("one again", { duplicateId: "d1" }), m.DuplicateIdError);
  await p.send("two", { duplicateId: "d2" });
  await tx.commit();
  const c = await plain.createConsumer("txd.q");
  assert.deepEqual(await drain(c), ["one", "two"]);
  await tx.close();
  await plain.close();
});

test("a large message from a Buffer arrives whole", async () => {
  const s = await conn.createSession();
  await s.createQueue("large.q", "large.q");
  const body = crypto.randomBytes(1_000_003);
  const p = await s.createProducer("large.q");
  await p.send(body, { properties: { name: "blob" } });
  const c = await s.createConsumer("large.q");
  const msg = await c.receive({ timeoutMs: 10000 });
  assert.equal(msg.large, true);
  assert.equal(msg.size, body.length);
  assert.ok(msg.body.equals(body));
  assert.equal(msg.properties.name, "blob");
  await msg.ack();
  await s.close();
});

test("a large message from a stream, with small ones before and after it", async () => {
  const s = await conn.createSession();
  await s.createQueue("large2.q", "large2.q");
  const size = 3 * 65536 + 17;
  const hash = crypto.createHash("sha256");
  const pieces = [];
  for (let off = 0; off < size; off += 10000) {
    const b = Buffer.alloc(Math.min(10000, size - off), (off / 10000) % 256);
    hash.update(b);
    pieces.push(b);
  }
  const p = await s.createProducer("large2.q");
  const before = p.send("small-1");
  await p.sendLarge(Readable.from(pieces), { size });
  await before;
  await p.send("small-2");
  const c = await s.createConsumer("large2.q", { windowSize: 100000 });
  const a = await c.receive({ timeoutMs: 5000 });
  const big = await c.receive({ timeoutMs: 10000 });
  const b = await c.receive({ timeoutMs: 5000 });
  assert.equal(a.body.toString(), "small-1");
  assert.equal(big.size, size);
  assert.equal(crypto.createHash("sha256").update(big.body).digest("hex"), hash.digest("hex"));
  assert.equal(b.body.toString(), "small-2");
  for (const x of [a, big, b]) await x.ack();
  await s.close();
});

test("a stream shorter than its size is refused (InvalidRequestError) and the session goes on", async () => {
  const s = await conn.createSession();
  const p = await s.createProducer("large3.q");
  await assert.rejects(p.sendLarge(Readable.from([Buffer.alloc(70000)]), { size: 200000 }), m.InvalidRequestError);
  await s.createQueue("large3.q", "large3.q");
  await p.send(Buffer.alloc(100000, 1));
  const c = await s.createConsumer("large3.q");
  const msg = await c.receive({ timeoutMs: 5000 });
  assert.equal(msg.size, 100000);
  await s.close();
});

test("a transacted large message is stored at commit", async () => {
  const tx = await conn.createSession({ transacted: true });
  const plain = await conn.createSession();
  await plain.createQueue("large4.q", "large4.q");
  const p = await tx.createProducer("large4.q");
  await p.send(Buffer.alloc(200000, 7));
  const c = await plain.createConsumer("large4.q");
  assert.equal(await c.receive({ timeoutMs: 300 }), null);
  await tx.commit();
  const msg = await c.receive({ timeoutMs: 5000 });
  assert.equal(msg.size, 200000);
  assert.equal(msg.body[199999], 7);
  await tx.close();
  await plain.close();
});
