// URI parsing and options (docs/protocol.md §13): no router needed.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { parseUri, InvalidRequestError, policyFromName, RoundRobinPolicy, FirstElementPolicy, RandomStickyPolicy } = require("../dist/index.js");

test("one server with credentials and options", () => {
  const p = parseUri("meshmq://al%40ice:p%3Ass@Broker.example:61617?consumerWindowSize=0&sslEnabled=true&retryIntervalMultiplier=1.5");
  assert.deepEqual(p.servers, [{ host: "broker.example", port: 61617 }]);
  assert.equal(p.options.username, "al@ice");
  assert.equal(p.options.password, "p:ss");
  assert.equal(p.options.consumerWindowSize, 0);
  assert.equal(p.options.sslEnabled, true);
  assert.equal(p.options.retryIntervalMultiplier, 1.5);
  assert.equal(p.options.callTimeout, 30000);
});

test("default port and a bracketed list sharing options", () => {
  const p = parseUri("(meshmq://h1,meshmq://u:pw@h2:61618)?reconnectAttempts=-1");
  assert.deepEqual(p.servers, [{ host: "h1", port: 61616 }, { host: "h2", port: 61618 }]);
  assert.equal(p.options.reconnectAttempts, -1);
  assert.equal(p.options.username, "u");
  assert.equal(p.anyNodeFailover, false);
});

test("failover: maps ActiveMQ's options with its defaults", () => {
  const p = parseUri("failover:(meshmq://h1:1,meshmq://h2:2)?randomize=false&maxReconnectAttempts=5&startupMaxReconnectAttempts=2&initialReconnectDelay=100&useExponentialBackOff=false&backup=true");
  assert.equal(p.anyNodeFailover, true);
  assert.equal(p.warmBackup, true);
  assert.equal(p.options.connectionLoadBalancingPolicyClassName, "FirstElement");
  assert.equal(p.options.reconnectAttempts, 5);
  assert.equal(p.options.initialConnectAttempts, 3);
  assert.equal(p.options.retryInterval, 100);
  assert.equal(p.options.retryIntervalMultiplier, 1.0);
  const d = parseUri("failover://(meshmq://h1:1)");
  assert.equal(d.options.connectionLoadBalancingPolicyClassName, "Random");
  assert.equal(d.options.reconnectAttempts, -1);
  assert.equal(d.options.initialConnectAttempts, -1);
  assert.equal(d.options.retryIntervalMultiplier, 2.0);
  assert.equal(d.options.maxRetryInterval, 30000);
  assert.equal(d.options.callFailoverTimeout, -1);
  assert.equal(d.options.useTopologyForLoadBalancing, false);
  // meshmq options given too win
  assert.equal(parseUri("failover:(meshmq://h1:1)?reconnectAttempts=7").options.reconnectAttempts, 7);
});

test("bad input is an InvalidRequestError naming what was wrong", () => {
  const bad = {
    "meshmq://h:1?consumerWindowSiz=5": /consumerWindowSiz/,
    "meshmq://h:1?consumerWindowSize=abc": /consumerWindowSize/,
    "meshmq://h:1?confirmationWindowSize=0": /confirmationWindowSize/,
    "meshmq://h:1?connectionLoadBalancingPolicyClassName=Nope": /Nope/,
    "amqp://h:1": /scheme/,
    "meshmq://h:99999": /port/,
    "(meshmq://h1?callTimeout=1,meshmq://h2)": /inside the server list/,
    "failover:(meshmq://h1)?priorityBackup=true": /priorityBackup/,
    "meshmq+etcd://e:2379/c": /discovery/,
    "": /empty/,
  };
  for (const [uri, re] of Object.entries(bad)) {
    assert.throws(() => parseUri(uri), (e) => e instanceof InvalidRequestError && e.reason === "INVALID_REQUEST" && re.test(e.message), uri);
  }
});

test("a password in an error message is masked", () => {
  assert.throws(() => parseUri("(meshmq://u:secret@h:1?a=1,meshmq://h2)"), (e) => /\*\*\*/.test(e.message) && !e.message.includes("secret"));
  assert.throws(() => parseUri("meshmq://u:secret@h:1?nope=1&password=secret2"), (e) => !e.message.includes("secret2"));
});

test("load-balancing policies by name, Artemis class names included", () => {
  assert.ok(policyFromName("RoundRobin") instanceof RoundRobinPolicy);
  assert.ok(policyFromName("org.apache.activemq.artemis.api.core.client.loadbalance.FirstElementConnectionLoadBalancingPolicy") instanceof FirstElementPolicy);
  const rr = policyFromName("RoundRobin");
  const first = rr.select(3);
  assert.deepEqual([rr.select(3), rr.select(3), rr.select(3)], [(first + 1) % 3, (first + 2) % 3, first]);
  const sticky = new RandomStickyPolicy();
  const s = sticky.select(5);
  assert.ok([1, 2, 3].every(() => sticky.select(5) === s));
});

test("connect() options are checked like URI options", async () => {
  const { connect } = require("../dist/index.js");
  await assert.rejects(connect("meshmq://127.0.0.1:1", { consumerWindowSiz: 5 }), (e) => e instanceof InvalidRequestError && /consumerWindowSiz/.test(e.message));
  await assert.rejects(connect("meshmq://127.0.0.1:1", { callTimeout: "5" }), (e) => e instanceof InvalidRequestError && /callTimeout/.test(e.message));
  await assert.rejects(connect("meshmq://127.0.0.1:1", { callTimeout: -5 }), (e) => e instanceof InvalidRequestError && /callTimeout/.test(e.message));
});
