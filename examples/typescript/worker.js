// Competing workers on a job queue with the TypeScript SDK: each job goes to
// one worker, acknowledged once done; a job whose worker fails (nack) comes
// back with a higher delivery count for another try.
//
//   meshmq up &
//   node examples/typescript/worker.js [meshmq://127.0.0.1:61616] [jobs=20] [workers=3]
//
// Prints one line per job done and, at the end, how many each worker did.
"use strict";
const { connect } = require("../../sdk/typescript");

async function main(uri, jobs, workers) {
  const conn = await connect(uri);
  try {
    const session = await conn.createSession();
    await session.createQueue("jobs", "jobs");
    const producer = await session.createProducer("jobs");
    for (let i = 0; i < jobs; i++) await producer.send(`job-${i}`, { properties: { n: i } });

    const done = new Map();
    const counts = {};
    await Promise.all(Array.from({ length: workers }, async (_, w) => {
      const name = `worker-${w}`;
      counts[name] = 0;
      const s = await conn.createSession();            // a session each: they compete for the jobs
      const consumer = await s.createConsumer("jobs", { windowSize: 0 });   // one job at a time
      while (done.size < jobs) {
        const job = await consumer.receive({ timeoutMs: 500 });
        if (job === null) continue;
        const n = job.properties.n;
        if (n % 7 === 3 && job.deliveryCount === 1) {     // a failure on the first try: given back
          await job.nack();
          continue;
        }
        done.set(n, name);
        counts[name] += 1;
        await job.ack();
        console.log(`${name} did ${job.body.toString()} (try ${job.deliveryCount})`);
      }
      await consumer.close();
    }));
    console.log(`done ${done.size} of ${jobs}:`, JSON.stringify(counts));
  } finally {
    await conn.close();
  }
}

const [uri = "meshmq://127.0.0.1:61616", jobs = "20", workers = "3"] = process.argv.slice(2);
main(uri, Number(jobs), Number(workers)).catch((e) => { console.error(e); process.exit(1); });
