// A connection's temporary queues (JMS createTemporaryQueue, docs/protocol.md §6.7) on real
// routers: it outlives the session that made it and its consumers, any session of the
// connection consumes from it and no other connection does, delete() is refused while a
// consumer is on it, it goes with the connection, and a failover makes it again.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { startRouter, freePort, waitFor } = require("./router.js");
const m = require("../dist/index.js");

/** The router's queues as its management API lists them (ListQueues), from a connection of the test's own. */
async function queues(router) {
  const obs = await m.connect(router.url);
  try {
    return (await obs.unary(obs.nodeFor(router.endpoint), "ListQueues", {})).queues;
  } finally {
    await obs.close();
  }
}

async function queueInfo(router, name) {
  return (await queues(router)).find((q) => q.name === name);
}

/** Waits (with a deadline) until `cond` holds of the router's queue `name` (undefined: none). */
async function waitForQueue(router, name, cond, what) {
  const deadline = Date.now() + 15000;
  for (;;) {
    let q;
    let err = null;
    try {
      q = await queueInfo(router, name);
      if (cond(q)) return q;
    } catch (e) {
      if (!(e instanceof m.ConnectionFailedError)) throw e; // a restarted router not reachable yet
      err = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (queue now: ${JSON.stringify(q)}, ${err})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function sendTo(conn, address, bodies) {
  const s = await conn.createSession();
  const p = await s.createProducer(address);
  for (const b of bodies) await p.send(b, { durable: false });
  await s.close();
}

async function take(consumer, n) {
  const got = [];
  for (let i = 0; i < n; i++) {
    const msg = await consumer.receive({ timeoutMs: 5000 });
    assert.ok(msg, `only ${got.length} of ${n} came`);
    await msg.ack();
    got.push(msg.body.toString());
  }
  assert.equal(await consumer.receive({ timeoutMs: 200 }), null);
  return got;
}

test.describe("one router", () => {
  let router;
  test.before(async () => { router = await startRouter({ name: "tq" }); });
  test.after(async () => { await router?.stop(); });

  test("it outlives its session and consumers, only its connection consumes, it goes with the connection", async () => {
    const conn = await m.connect(router.url);
    const other = await m.connect(router.url);
    try {
      assert.match(conn.connectionId, /^[0-9a-f-]{36}$/);
      assert.notEqual(conn.connectionId, other.connectionId);
      const first = await conn.createSession();
      const tq = await first.createTemporaryQueue();
      assert.ok(tq instanceof m.TemporaryQueue);
      assert.equal(String(tq), tq.name);
      assert.equal(tq.deleted, false);
      const info = await queueInfo(router, tq.name);
      assert.ok(info && info.temporary && !info.durable, JSON.stringify(info));
      assert.equal(info.address, tq.name);
      await sendTo(other, String(tq), ["a", "b", "c"]); // anyone may send to it
      await first.close(); // the session that made it ends: the queue stays, with what it holds
      assert.equal(Number((await queueInfo(router, tq.name)).message_count), 3);
      const second = await conn.createSession();
      const c = await second.createConsumer(tq); // a TemporaryQueue
      assert.deepEqual(await take(c, 3), ["a", "b", "c"]);
      await c.close();
      await sendTo(other, tq.name, ["d"]); // its last consumer left: still there
      const byName = await second.createConsumer(tq.name); // or its name
      assert.deepEqual(await take(byName, 1), ["d"]);
      await byName.close();
      // another connection may not consume it
      const stranger = await other.createSession();
      await assert.rejects(stranger.createConsumer(tq.name), (e) => e instanceof m.PermissionDeniedError && e.reason === "PERMISSION_DENIED");
      await conn.close();
      await waitForQueue(router, tq.name, (q) => q === undefined, "the temporary queue to go with its connection");
      assert.equal(tq.deleted, true);
    } finally {
      await conn.close();
      await other.close();
    }
  });

  test("delete() is refused while a consumer is on it, then deletes it; twice is a no-op", async () => {
    const conn = await m.connect(router.url);
    try {
      const s = await conn.createSession();
      const tq = await conn.createTemporaryQueue();
      await sendTo(conn, tq.name, ["x"]);
      const c = await s.createConsumer(tq);
      await assert.rejects(tq.delete(), (e) => e instanceof m.QueueInUseError && e.reason === "QUEUE_IN_USE");
      assert.equal(tq.deleted, false);
      assert.ok(await queueInfo(router, tq.name), "still there after the refused delete");
      await c.close();
      await tq.delete(); // on both nodes holding it: the anchor's and s's (the same router here)
      assert.equal(tq.deleted, true);
      assert.equal(await queueInfo(router, tq.name), undefined);
      await tq.delete();
      // another temporary queue of the connection is untouched
      const kept = await conn.createTemporaryQueue();
      assert.ok(await queueInfo(router, kept.name));
    } finally {
      await conn.close();
    }
  });

  test("a consumer closed on one session is gone for a delete sent on another, right after (protocol 4)", async () => {
    // The close travels behind 1,000 unconfirmed sends on its own session; the delete goes on the
    // queue's anchor session. close() resolves once the router answered it, and on a router speaking
    // 4 the SDK does not ask again on QUEUE_IN_USE: a close still on its way would fail this at once.
    const conn = await m.connect(router.url);
    try {
      const busy = await conn.createSession();
      for (let round = 0; round < 3; round++) {
        const tq = await conn.createTemporaryQueue();
        const c = await busy.createConsumer(tq);
        const p = await busy.createProducer(`busy.${tq.name}`); // (no queue there: dropped once routed)
        const confirms = [];
        for (let i = 0; i < 1000; i++) confirms.push((await p.sendAsync("x".repeat(200), { durable: false })).confirmed);
        await c.close();
        await tq.delete();
        assert.equal(await queueInfo(router, tq.name), undefined, `round ${round}`);
        await Promise.all(confirms);
      }
    } finally {
      await conn.close();
    }
  });

  test("a router speaking a protocol below 3 is refused with UnsupportedVersionError", async () => {
    assert.equal(m.PROTOCOL_VERSION, 4);
    const conn = await m.connect(router.url);
    try {
      const s = await conn.createSession();
      assert.ok(s.routerProtocol >= 3, `the router says ${s.routerProtocol}`);
      const tq = await conn.createTemporaryQueue(); // on the anchor session
      s.routerProtocol = 2; // as an older router would have said in SessionOpened
      await assert.rejects(s.createConsumer(tq), (e) => e instanceof m.UnsupportedVersionError && e.reason === "UNSUPPORTED_VERSION");
    } finally {
      await conn.close();
    }
  });
});

test("after a kill -9 and restart the sessions make it again before their consumers", async () => {
  const router = await startRouter({ name: "tqfo", port: await freePort() });
  const conn = await m.connect(`${router.url}?reconnectAttempts=-1&retryInterval=100&maxRetryInterval=500&callFailoverTimeout=60000`);
  let other = null;
  try {
    const events = [];
    conn.on("failover", (type) => events.push(type));
    const s = await conn.createSession();
    const tq = await s.createTemporaryQueue();
    const c = await s.createConsumer(tq);
    await router.kill9();
    await router.start();
    // not stored: the restarted node has it only because the sessions asked for it again, and the consumer is on it
    const info = await waitForQueue(router, tq.name, (q) => q !== undefined && q.consumer_count === 1,
      "the temporary queue made again, with its consumer");
    assert.ok(info.temporary && !info.durable, JSON.stringify(info));
    await waitFor(() => events.includes("FAILOVER_COMPLETED"), 30000, "the failover to complete");
    other = await m.connect(router.url);
    await sendTo(other, tq.name, ["after"]);
    const msg = await c.receive({ timeoutMs: 10000 });
    assert.equal(msg?.body.toString(), "after");
    await msg.ack();
    // still the connection's own
    const stranger = await other.createSession();
    await assert.rejects(stranger.createConsumer(tq.name), m.PermissionDeniedError);
    await c.close();
    await conn.close();
    await waitForQueue(router, tq.name, (q) => q === undefined, "the temporary queue to go with its connection");
  } finally {
    await conn.close();
    await other?.close();
    await router.stop();
  }
});

test("two clustered nodes: a session on the other node consumes it; delete() and close remove it on both", async () => {
  const ports = { tqa: await freePort(), tqb: await freePort() };
  const yaml = (name) => {
    const peer = name === "tqa" ? "tqb" : "tqa";
    return `connectors:\n  ${peer}: 127.0.0.1:${ports[peer]}\n` +
      `cluster-connections:\n  cc: {static-connectors: [${peer}], message-load-balancing: ON_DEMAND}\n`;
  };
  const [a, b] = await Promise.all(["tqa", "tqb"].map((name) => startRouter({ name, port: ports[name], extra: yaml(name) })));
  const byTarget = { [a.endpoint]: a, [b.endpoint]: b };
  const conn = await m.connect(`(${a.url},${b.url})?useTopologyForLoadBalancing=false&connectionLoadBalancingPolicyClassName=RoundRobin`);
  const sender = await m.connect(`${a.url}?useTopologyForLoadBalancing=false`);
  try {
    const tq = await conn.createTemporaryQueue();
    const home = byTarget[[...tq.holders][0].node.target]; // the anchor session's node
    const away = home === a ? b : a;
    let s = await conn.createSession();
    while (byTarget[s.node.target] !== away) s = await conn.createSession(); // round robin: the next is on the other node
    assert.equal(await queueInfo(away, tq.name), undefined, "not on the other node before a session there asks for it");
    const c = await s.createConsumer(tq);
    const there = await queueInfo(away, tq.name);
    assert.ok(there && there.temporary, JSON.stringify(there));
    await sendTo(sender, tq.name, ["one", "two"]); // sent on a; reaches the consumer on the other node, whichever it is
    const got = [];
    for (let msg; got.length < 2 && (msg = await c.receive({ timeoutMs: 15000 })); ) {
      got.push(msg.body.toString());
      await msg.ack();
    }
    assert.deepEqual(got.sort(), ["one", "two"]);
    await assert.rejects(tq.delete(), m.QueueInUseError);
    await c.close();
    await tq.delete(); // on both nodes holding it
    assert.equal(await queueInfo(a, tq.name), undefined);
    assert.equal(await queueInfo(b, tq.name), undefined);
    // another one, consumed on the other node too: closing the connection removes both copies
    const kept = await conn.createTemporaryQueue();
    await (await s.createConsumer(kept)).close();
    assert.ok(await queueInfo(away, kept.name));
    await conn.close();
    await waitForQueue(a, kept.name, (q) => q === undefined, "the copy on a to go with the connection");
    await waitForQueue(b, kept.name, (q) => q === undefined, "the copy on b to go with the connection");
  } finally {
    await conn.close();
    await sender.close();
    await Promise.all([a.stop(), b.stop()]);
  }
});
