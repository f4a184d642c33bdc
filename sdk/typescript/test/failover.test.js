// Automatic failover and reattachment: a node killed with kill -9 and started again
// on its store and port; the session carries on with the same producers and consumers.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { startRouter, freePort, waitFor } = require("./router.js");
const m = require("../dist/index.js");

const OPTS = "reconnectAttempts=-1&retryInterval=100&maxRetryInterval=500&callFailoverTimeout=60000";

test("kill -9 and restart: the consumer gets every message again, listeners hear the failover", async () => {
  const router = await startRouter({ port: await freePort() });
  const conn = await m.connect(`${router.url}?${OPTS}`);
  try {
    const events = [];
    conn.on("failover", (type, err) => events.push([type, err?.reason]));
    const s = await conn.createSession();
    const notices = [];
    s.on("exception", (e) => notices.push(e));
    await s.createQueue("fo.q", "fo.q");
    const p = await s.createProducer("fo.q");
    for (let i = 0; i < 10; i++) await p.send(String(i));
    const c = await s.createConsumer("fo.q");
    const first = [];
    for (let i = 0; i < 3; i++) first.push(await c.receive({ timeoutMs: 5000 }));
    await first[0].ack();
    await router.kill9();
    await router.start();
    // the consumer carries on: what was not acked comes again, each once
    // ("0" was acked just before the kill: an ack has no answer, so it may have been lost and "0" come again)
    const got = new Map();
    const copies = [];
    // (the first waits for the failover itself: a deadline, not a guess)
    for (let msg; (msg = await c.receive({ timeoutMs: got.size === 0 ? 30000 : 3000 })); ) {
      if (got.has(msg.body.toString())) copies.push(msg.body.toString());
      got.set(msg.body.toString(), msg.deliveryCount);
      await msg.ack();
    }
    assert.deepEqual([...got.keys()].filter((k) => k !== "0").sort(), ["1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    assert.deepEqual(copies, []);
    assert.ok(got.get("1") >= 2 && got.get("2") >= 2, `handed before the failure: counted again (${got.get("1")}, ${got.get("2")})`);
    // an ack of a message from the old stream cannot be sent on the new one
    await assert.rejects(first[1].ack(), m.UnblockedError);
    // the producer works on the new stream
    await p.send("after");
    const after = await c.receive({ timeoutMs: 5000 });
    assert.equal(after.body.toString(), "after");
    await after.ack();
    assert.deepEqual(events.map((e) => e[0]), ["FAILURE_DETECTED", "FAILOVER_COMPLETED"]);
    assert.equal(events[0][1], "CONNECTION_FAILED");
    assert.ok(notices.some((e) => e instanceof m.UnblockedError && e.failedOver), "the session's exception listener heard it moved");
  } finally {
    await conn.close();
    await router.stop();
  }
});

test("an idempotent producer sends through a kill -9: every message stored once", async () => {
  const router = await startRouter({ port: await freePort() });
  const conn = await m.connect(`${router.url}?${OPTS}`);
  try {
    const s = await conn.createSession();
    await s.createQueue("idem.q", "idem.q");
    const p = await s.createProducer("idem.q", { idempotent: true });
    const total = 600;
    const sends = [];
    for (let i = 0; i < 100; i++) sends.push(p.send(String(i)));
    await Promise.all(sends);
    // frozen node: the next sends stay unconfirmed until it is killed
    router.freeze();
    for (let i = 100; i < total; i++) sends.push(p.send(String(i)));
    await router.kill9();
    await router.start();
    await Promise.all(sends);
    const c = await s.createConsumer("idem.q", { windowSize: -1 });
    const seen = new Map();
    for (let msg; (msg = await c.receive({ timeoutMs: 2000 })); ) {
      const k = msg.body.toString();
      seen.set(k, (seen.get(k) ?? 0) + 1);
      await msg.ack();
    }
    const dups = [...seen.entries()].filter(([, n]) => n > 1);
    assert.equal(seen.size, total, `received ${seen.size} distinct of ${total}`);
    assert.deepEqual(dups, []);
  } finally {
    await conn.close();
    await router.stop();
  }
});

test("a plain send in flight at the kill raises UnblockedError; resent with its duplicate id it is stored once", async () => {
  const router = await startRouter({ port: await freePort() });
  const conn = await m.connect(`${router.url}?${OPTS}`);
  try {
    const s = await conn.createSession();
    await s.createQueue("unb.q", "unb.q");
    const p = await s.createProducer("unb.q");
    for (let i = 0; i < 100; i++) await p.send(String(i), { duplicateId: `u${i}` });
    router.freeze();
    const sends = [];
    for (let i = 100; i < 3000; i++) sends.push(p.send(String(i), { duplicateId: `u${i}` }).then(() => "ok", (e) => e));
    await router.kill9();
    const results = [...Array(100).fill("ok"), ...(await Promise.all(sends))];
    const failed = results.filter((r) => r !== "ok");
    assert.equal(failed.length, 2900);
    assert.ok(failed.every((e) => e instanceof m.UnblockedError), `unconfirmed sends fail with UnblockedError: ${failed.find((e) => !(e instanceof m.UnblockedError))}`);
    await router.start();
    // resend the unblocked ones with their duplicate ids: each stored once
    const resends = [];
    for (let i = 0; i < 3000; i++) {
      if (results[i] !== "ok") resends.push(p.send(String(i), { duplicateId: `u${i}` }).catch((e) => assert.ok(e instanceof m.DuplicateIdError, String(e))));
    }
    await Promise.all(resends);
    const c = await s.createConsumer("unb.q", { windowSize: -1 });
    const seen = new Set();
    let count = 0;
    for (let msg; (msg = await c.receive({ timeoutMs: 2000 })); count++) { seen.add(msg.body.toString()); await msg.ack(); }
    assert.equal(seen.size, 3000);
    assert.equal(count, 3000);
  } finally {
    await conn.close();
    await router.stop();
  }
});

test("a transaction with work when the node fails is rolled back: commit raises TransactionRolledBackError, the redo commits", async () => {
  const router = await startRouter({ port: await freePort() });
  const conn = await m.connect(`${router.url}?${OPTS}`);
  try {
    const tx = await conn.createSession({ transacted: true });
    await tx.createQueue("txfo.q", "txfo.q");
    const p = await tx.createProducer("txfo.q");
    const batch = [["t1", "a"], ["t2", "b"]];
    for (const [dup, body] of batch) await p.send(body, { duplicateId: dup });
    await router.kill9();
    await router.start();
    await assert.rejects(tx.commit(), m.TransactionRolledBackError);
    for (const [dup, body] of batch) await p.send(body, { duplicateId: dup });
    await tx.commit();
    const s = await conn.createSession();
    const c = await s.createConsumer("txfo.q");
    const got = [];
    for (let msg; (msg = await c.receive({ timeoutMs: 500 })); ) { got.push(msg.body.toString()); await msg.ack(); }
    assert.deepEqual(got, ["a", "b"]);
  } finally {
    await conn.close();
    await router.stop();
  }
});

test("reconnectAttempts=0: a lost node fails the session with ConnectionFailedError, no failover events", async () => {
  const router = await startRouter({ port: await freePort() });
  const conn = await m.connect(router.url);
  try {
    const events = [];
    conn.on("failover", (t) => events.push(t));
    const s = await conn.createSession();
    const c = await s.createConsumer("nofo.q");
    const gone = new Promise((resolve) => s.once("exception", resolve));
    await router.kill9();
    assert.ok((await gone) instanceof m.ConnectionFailedError);
    await assert.rejects(c.receive({ timeoutMs: 1000 }), m.ConnectionFailedError);
    assert.deepEqual(events, []);
  } finally {
    await conn.close();
    await router.stop();
  }
});

test("failover:(a,b): with a gone for good the session moves to b, listeners hear it", async () => {
  const a = await startRouter({ name: "anya" });
  const b = await startRouter({ name: "anyb" });
  const conn = await m.connect(`failover:(meshmq://${a.endpoint},meshmq://${b.endpoint})?randomize=false&initialReconnectDelay=100&maxReconnectDelay=500&backup=true`);
  try {
    const events = [];
    conn.on("failover", (type) => events.push(type));
    const s = await conn.createSession();
    assert.equal(s.node.target, a.endpoint);
    const p = await s.createProducer("any.q");
    const c = await s.createConsumer("any.q");
    const detected = new Promise((resolve) => conn.once("failover", resolve));
    await a.kill9();
    await detected;
    // a send made while the session fails over waits for it (callFailoverTimeout), then goes to b
    await p.send("on b");
    const msg = await c.receive({ timeoutMs: 30000 });
    assert.equal(msg.body.toString(), "on b");
    await msg.ack();
    assert.equal(s.node.target, b.endpoint);
    assert.equal(s.nodeId, (await m.connect(`meshmq://${b.endpoint}`).then(async (x) => { const id = x.nodeInfo.nodeId; await x.close(); return id; })));
    assert.deepEqual(events, ["FAILURE_DETECTED", "FAILOVER_COMPLETED"]);
  } finally {
    await conn.close();
    await a.stop();
    await b.stop();
  }
});

test("a window-0 consumer waiting in receive() across a failover gets the message sent after it", async () => {
  const router = await startRouter({ port: await freePort() });
  const conn = await m.connect(`${router.url}?${OPTS}&consumerWindowSize=0`);
  try {
    const s = await conn.createSession();
    await s.createQueue("w0.q", "w0.q");
    const c = await s.createConsumer("w0.q");
    const waiting = c.receive({ timeoutMs: 60000 });
    await router.kill9();
    await router.start();
    const other = await m.connect(`${router.url}?initialConnectAttempts=-1&retryInterval=100`);
    const p = await (await other.createSession()).createProducer("w0.q");
    await p.send("after");
    const msg = await waiting;
    assert.equal(msg?.body.toString(), "after");
    await other.close();
  } finally {
    await conn.close();
    await router.stop();
  }
});

// A link to `target` that delays every chunk `delayMs` each way (in order), and can be cut.
function delayedLink(target, delayMs) {
  const net = require("node:net");
  const at = target.lastIndexOf(":");
  const sockets = new Set();
  const server = net.createServer((client) => {
    const up = net.connect(Number(target.slice(at + 1)), target.slice(0, at));
    sockets.add(client).add(up);
    const end = () => { client.destroy(); up.destroy(); };
    for (const [from, to] of [[client, up], [up, client]]) {
      from.on("data", (d) => setTimeout(() => { if (!to.destroyed) to.write(d); }, delayMs));
      from.on("error", end);
      from.on("close", () => setTimeout(end, delayMs));
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({
    endpoint: `127.0.0.1:${server.address().port}`,
    cut() { server.close(); for (const s of sockets) s.resetAndDestroy(); },
  })));
}

async function sessionsOn(router) {
  const w = await m.connect(`meshmq://${router.endpoint}`);
  try {
    const res = await w.unary(w.nodeFor(router.endpoint), "ListConnections", {});
    return (res.connections || []).reduce((n, c) => n + Number(c.session_count || 0), 0);
  } finally {
    await w.close();
  }
}

test("an attempt that loses its node after the open moves on to the next node with the producer and consumer", async () => {
  const a = await startRouter({ name: "lopa" });
  const b = await startRouter({ name: "lopb" });
  const c = await startRouter({ name: "lopc" });
  const delay = 1500; // the cut below has 1.5 s on either side of it, for a loaded machine
  const link = await delayedLink(b.endpoint, delay);
  const conn = await m.connect(`failover:(meshmq://${a.endpoint},meshmq://${link.endpoint},meshmq://${c.endpoint})` +
    "?randomize=false&initialReconnectDelay=100&maxReconnectDelay=200&connectionLoadBalancingPolicyClassName=FirstElement");
  try {
    const events = [];
    conn.on("failover", (type) => events.push(type));
    const s = await conn.createSession();
    assert.equal(s.node.target, a.endpoint);
    const p = await s.createProducer("lop.q");
    const consumer = await s.createConsumer("lop.q");
    await a.kill9();
    // b takes the open; its answer reaches the client `delay` later, the creates then sent reach b
    // another `delay` later and their answers the client a third: cut halfway through that window.
    const opened = await waitFor(async () => (await sessionsOn(b)) > 0 && Date.now(), 30000, "the failover's open to reach b");
    await new Promise((r) => setTimeout(r, Math.max(0, opened + 2 * delay - Date.now())));
    link.cut();
    await p.send("on c"); // waits for the failover (callFailoverTimeout), then goes to c
    const msg = await consumer.receive({ timeoutMs: 30000 });
    assert.equal(msg.body.toString(), "on c");
    await msg.ack();
    // On c, or on b at the address b gave itself (the topology the open brought): not through the cut link.
    assert.ok([c.endpoint, b.endpoint].includes(s.node.target), s.node.target);
    assert.deepEqual(events, ["FAILURE_DETECTED", "FAILOVER_COMPLETED"]);
    // One session in all: the one the cut attempt opened on b is gone.
    await waitFor(async () => (await sessionsOn(b)) + (await sessionsOn(c)) === 1, 10000, "one session left on b and c");
  } finally {
    await conn.close();
    link.cut();
    await a.stop();
    await b.stop();
    await c.stop();
  }
});
