// Automatic failover with the TypeScript SDK: an idempotent producer keeps
// sending while the node goes away and comes back (kill -9 `meshmq up` and
// start it again on the same data directory, or fail over to a backup), then
// a consumer takes everything: each message confirmed before, during or after
// the failure arrives exactly once.
//
//   meshmq up --data-dir /tmp/fo &
//   node examples/typescript/failover.js [meshmq://127.0.0.1:61616] [count=2000]
//   (meanwhile: kill -9 the node, then `meshmq up --data-dir /tmp/fo` again)
//
// reconnectAttempts=-1 retries for ever; the listener shows each failover.
"use strict";
const { connect } = require("../../sdk/typescript");

async function main(uri, count) {
  const target = uri.startsWith("failover:") ? uri : `failover:(${uri})?reconnectAttempts=-1&retryInterval=200`;
  const conn = await connect(target);
  conn.on("failover", (type, err) => console.log(`failover: ${type}${err ? ` (${err.reason})` : ""}`));
  try {
    const session = await conn.createSession();
    await session.createQueue("failover.demo", "failover.demo");
    const producer = await session.createProducer("failover.demo", { idempotent: true });
    for (let i = 0; i < count; i++) {
      await producer.send(`m-${i}`, { properties: { n: i } });   // resolves once stored; resent after a failover
      if (i % 500 === 499) console.log(`sent ${i + 1}`);
    }
    const consumer = await session.createConsumer("failover.demo");
    const seen = new Map();
    while (seen.size < count) {
      const m = await consumer.receive({ timeoutMs: 10000 });
      if (m === null) break;
      seen.set(m.properties.n, (seen.get(m.properties.n) || 0) + 1);
      await m.ack();
    }
    let extra;
    while ((extra = await consumer.receive({ timeoutMs: 500 })) !== null) {
      seen.set(extra.properties.n, (seen.get(extra.properties.n) || 0) + 1);
      await extra.ack();
    }
    const lost = count - [...seen.keys()].filter((n) => n >= 0 && n < count).length;
    const twice = [...seen.values()].filter((c) => c > 1).length;
    console.log(`received ${seen.size} of ${count}: lost ${lost}, twice ${twice}`);
    if (lost || twice) process.exitCode = 2;
  } finally {
    await conn.close();
  }
}

const [uri = "meshmq://127.0.0.1:61616", count = "2000"] = process.argv.slice(2);
main(uri, Number(count)).catch((e) => { console.error(e); process.exit(1); });
