// Subscriptions on multicast addresses: temporary, durable (named, with a client id), unsubscribe.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { startRouter } = require("./router.js");
const m = require("../dist/index.js");

let router;
test.before(async () => { router = await startRouter({ name: "subs" }); });
test.after(async () => { await router?.stop(); });

test("two temporary subscriptions each get every message sent after they exist", async () => {
  const conn = await m.connect(router.url);
  const s = await conn.createSession();
  const a = await s.subscribe("news");
  const b = await s.subscribe("news", { selector: "topic = 'sport'" });
  const p = await s.createProducer("news");
  await p.send("weather", { properties: { topic: "weather" }, routingType: "MULTICAST" });
  await p.send("match", { properties: { topic: "sport" }, routingType: "MULTICAST" });
  const got = async (c) => { const out = []; for (let x; (x = await c.receive({ timeoutMs: 500 })); ) { out.push(x.body.toString()); await x.ack(); } return out; };
  assert.deepEqual(await got(a), ["weather", "match"]);
  assert.deepEqual(await got(b), ["match"]);
  await conn.close();
});

test("a durable subscription keeps messages while nobody consumes; unsubscribe deletes it", async () => {
  const conn = await m.connect(`${router.url}?clientID=ts-client`);
  const s = await conn.createSession();
  const sub = await s.subscribe("alerts", { subscription: "mine" });
  assert.equal(sub.queue, "ts-client.mine");
  await sub.close();
  const p = await s.createProducer("alerts");
  await p.send("while away", { routingType: "MULTICAST" });
  const again = await s.subscribe("alerts", { subscription: "mine" });
  const msg = await again.receive({ timeoutMs: 5000 });
  assert.equal(msg.body.toString(), "while away");
  await msg.ack();
  await assert.rejects(s.unsubscribe("mine"), (e) => e instanceof m.QueueInUseError);
  await again.close();
  const gone = await s.unsubscribe("mine");
  assert.equal(gone.queue, "ts-client.mine");
  await assert.rejects(s.unsubscribe("mine"), (e) => e instanceof m.QueueNotFoundError);
  await conn.close();
});

test("a queue browser sees the messages without taking them; a bad selector is InvalidSelectorError", async () => {
  const conn = await m.connect(router.url);
  const s = await conn.createSession();
  await s.createQueue("browse.q", "browse.q");
  const p = await s.createProducer("browse.q");
  for (let i = 0; i < 5; i++) await p.send(`b${i}`, { properties: { i } });
  const seen = [];
  for await (const b of s.browse("browse.q", { selector: "i >= 2", pageSize: 2 })) seen.push([b.body.toString(), b.state, b.properties.i]);
  assert.deepEqual(seen, [["b2", "waiting", 2], ["b3", "waiting", 3], ["b4", "waiting", 4]]);
  const first = [];
  for await (const b of s.browse("browse.q")) { first.push(b.body.toString()); if (first.length === 2) break; }
  assert.deepEqual(first, ["b0", "b1"]);
  const c = await s.createConsumer("browse.q");
  const taken = [];
  for (let x; (x = await c.receive({ timeoutMs: 500 })); ) { taken.push(x.body.toString()); await x.ack(); }
  assert.deepEqual(taken, ["b0", "b1", "b2", "b3", "b4"]);
  await assert.rejects(async () => { for await (const _ of s.browse("browse.q", { selector: "i = = 1" })) void _; }, m.InvalidSelectorError);
  await assert.rejects(async () => { for await (const _ of s.browse("no.such.q")) void _; }, m.QueueNotFoundError);
  await conn.close();
});

test("request-reply: a responder answers, the requester gets the reply by correlation id", async () => {
  const conn = await m.connect(router.url);
  const server = await conn.createSession();
  await server.createQueue("rpc.q", "rpc.q");
  const requests = await server.createConsumer("rpc.q");
  const serving = (async () => {
    for (let i = 0; i < 2; i++) {
      const req = await requests.receive({ timeoutMs: 10000 });
      await server.reply(req, `echo ${req.body}`);
      await req.ack();
    }
  })();
  const client = await conn.createSession();
  const r1 = await client.request("rpc.q", "one", { timeoutMs: 10000 });
  const r2 = await client.request("rpc.q", "two", { timeoutMs: 10000 });
  await serving;
  assert.equal(r1.body.toString(), "echo one");
  assert.equal(r2.body.toString(), "echo two");
  assert.equal(await client.request("nobody.q", "x", { timeoutMs: 300 }), null);
  const tx = await conn.createSession({ transacted: true });
  await assert.rejects(tx.request("rpc.q", "x"), m.InvalidRequestError);
  await conn.close();
});
