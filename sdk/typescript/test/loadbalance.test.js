// Client-side load balancing over two real routers, and the topology push.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { startRouter, freePort } = require("./router.js");
const m = require("../dist/index.js");

let a;
let b;
test.before(async () => {
  [a, b] = await Promise.all([startRouter({ name: "lba" }), startRouter({ name: "lbb" })]);
});
test.after(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

async function nodesOfSessions(conn, n) {
  const names = [];
  for (let i = 0; i < n; i++) {
    const s = await conn.createSession();
    names.push(s.node.target);
    await s.close();
  }
  return names;
}

test("RoundRobin over the listed nodes alternates sessions between them", async () => {
  const conn = await m.connect(`(meshmq://${a.endpoint},meshmq://${b.endpoint})?useTopologyForLoadBalancing=false`);
  const t = await nodesOfSessions(conn, 4);
  assert.notEqual(t[0], t[1]);
  assert.deepEqual([t[2], t[3]], [t[0], t[1]]);
  assert.deepEqual(new Set(t), new Set([a.endpoint, b.endpoint]));
  await conn.close();
});

test("FirstElement always picks the first node; an unreachable first one is passed over", async () => {
  const conn = await m.connect(`(meshmq://${a.endpoint},meshmq://${b.endpoint})?useTopologyForLoadBalancing=false&connectionLoadBalancingPolicyClassName=FirstElement`);
  assert.deepEqual(await nodesOfSessions(conn, 3), [a.endpoint, a.endpoint, a.endpoint]);
  await conn.close();
  const dead = `127.0.0.1:${await freePort()}`;
  const conn2 = await m.connect(`(meshmq://${dead},meshmq://${b.endpoint})?useTopologyForLoadBalancing=false&connectionLoadBalancingPolicyClassName=FirstElement&callTimeout=5000`);
  assert.deepEqual(await nodesOfSessions(conn2, 2), [b.endpoint, b.endpoint]);
  await conn2.close();
});

test("RandomSticky keeps to one node; a policy object of your own is used as given", async () => {
  const conn = await m.connect(`(meshmq://${a.endpoint},meshmq://${b.endpoint})?useTopologyForLoadBalancing=false&connectionLoadBalancingPolicyClassName=RandomSticky`);
  const t = await nodesOfSessions(conn, 4);
  assert.equal(new Set(t).size, 1);
  await conn.close();
  const picks = [];
  const mine = { select(n) { picks.push(n); return n - 1; } };
  const conn2 = await m.connect(`(meshmq://${a.endpoint},meshmq://${b.endpoint})?useTopologyForLoadBalancing=false`, { loadBalancingPolicy: mine });
  assert.deepEqual(await nodesOfSessions(conn2, 2), [b.endpoint, b.endpoint]);
  assert.deepEqual(picks, [2, 2]);
  await conn2.close();
});

test("the topology push names the node; balancing over it keeps sessions on its members", async () => {
  const conn = await m.connect(`(meshmq://${a.endpoint},meshmq://${b.endpoint})?connectionLoadBalancingPolicyClassName=FirstElement`);
  const members = await conn.waitForTopology();
  assert.equal(members.length, 1);
  assert.equal(members[0].connector, a.endpoint);
  assert.equal(members[0].nodeId, conn.nodeInfo.nodeId);
  assert.equal(members[0].name, "lba");
  // a's topology lists only a: every session goes there, b is not a member
  assert.deepEqual(await nodesOfSessions(conn, 3), [a.endpoint, a.endpoint, a.endpoint]);
  await conn.close();
});

test("first contact passes over an unreachable server; none reachable is ConnectionFailedError", async () => {
  const dead = `127.0.0.1:${await freePort()}`;
  const conn = await m.connect(`(meshmq://${dead},meshmq://${a.endpoint})?callTimeout=5000`);
  assert.equal(conn.nodeInfo.name, "lba");
  await conn.close();
  await assert.rejects(m.connect(`meshmq://${dead}?callTimeout=2000`), m.ConnectionFailedError);
});
