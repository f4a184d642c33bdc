// TLS (trustStorePath) and credentials against a secured router.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { startRouter, makeCerts } = require("./router.js");
const m = require("../dist/index.js");

const SECURE = `
security-enabled: true
users:
  - {username: app, password: app-secret, roles: [apps]}
  - {username: reader, password: reader-secret, roles: [readers]}
security-settings:
  "sec.#": {send: [apps], consume: [apps, readers], create-address: [apps], create-durable-queue: [apps],
            create-non-durable-queue: [apps]}
`;

let router;
let certs;
test.before(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshmq-ts-sec-"));
  certs = makeCerts(dir);
  router = await startRouter({ dir, extra: SECURE, acceptor: `, ssl-enabled: true, cert-path: ${certs.cert}, key-path: ${certs.key}` });
});
test.after(async () => {
  await router?.stop();
});

test("TLS with the CA and the right credentials: messages flow", async () => {
  const conn = await m.connect(`meshmq://app:app-secret@${router.endpoint}?sslEnabled=true&trustStorePath=${certs.ca}`);
  const s = await conn.createSession();
  await s.createQueue("sec.q", "sec.q");
  const p = await s.createProducer("sec.q");
  await p.send("secret message");
  const c = await s.createConsumer("sec.q");
  const msg = await c.receive({ timeoutMs: 5000 });
  assert.equal(msg.body.toString(), "secret message");
  assert.equal(msg.userId, "app");
  await msg.ack();
  await conn.close();
});

test("credentials given as options work as in the URI", async () => {
  const conn = await m.connect(`meshmq://${router.endpoint}`, { username: "app", password: "app-secret", sslEnabled: true, trustStorePath: certs.ca });
  assert.equal(conn.nodeInfo.name, "ts");
  await conn.close();
});

test("a wrong password is AuthenticationError (UNAUTHENTICATED)", async () => {
  await assert.rejects(m.connect(`meshmq://app:wrong@${router.endpoint}?sslEnabled=true&trustStorePath=${certs.ca}`),
    (e) => e instanceof m.AuthenticationError && e.reason === "UNAUTHENTICATED");
});

test("a user without the send permission gets PermissionDeniedError on send", async () => {
  const conn = await m.connect(`meshmq://reader:reader-secret@${router.endpoint}?sslEnabled=true&trustStorePath=${certs.ca}`);
  const s = await conn.createSession();
  const p = await s.createProducer("sec.q");
  await assert.rejects(p.send("no"), (e) => e instanceof m.PermissionDeniedError && /reader/.test(e.message));
  await conn.close();
});

test("a plain channel to a TLS acceptor fails as a lost connection", async () => {
  await assert.rejects(m.connect(`meshmq://app:app-secret@${router.endpoint}?callTimeout=3000`),
    (e) => e instanceof m.ConnectionFailedError);
});

test("TLS without the cluster's CA is refused", async () => {
  await assert.rejects(m.connect(`meshmq://app:app-secret@${router.endpoint}?sslEnabled=true&callTimeout=3000`),
    (e) => e instanceof m.ConnectionFailedError);
});

test("a missing trustStorePath file is an InvalidRequestError naming it", async () => {
  await assert.rejects(m.connect(`meshmq://${router.endpoint}?sslEnabled=true&trustStorePath=/nonexistent/ca.pem`),
    (e) => e instanceof m.InvalidRequestError && /trustStorePath/.test(e.message));
});
