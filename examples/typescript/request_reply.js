// Request-reply with the TypeScript SDK: a responder answers on "service.upper",
// a requester sends five requests and waits for each reply (with a timeout).
//
//   meshmq up &                          # one node on 127.0.0.1:61616
//   node examples/typescript/request_reply.js [meshmq://127.0.0.1:61616]
//
// The requester's reply queue is a temporary queue of its session; the
// responder answers to the request's reply-to with its correlation id.
"use strict";
const { connect } = require("../../sdk/typescript");

async function main(uri) {
  const conn = await connect(uri);
  try {
    const serving = await conn.createSession();
    await serving.createQueue("service.upper", "service.upper");
    const requests = await serving.createConsumer("service.upper");
    const responder = (async () => {
      for await (const req of requests) {            // ends when the consumer closes
        await serving.reply(req, req.body.toString().toUpperCase());
        await req.ack();
      }
    })();

    const asking = await conn.createSession();
    for (const word of ["alpha", "beta", "gamma", "delta", "epsilon"]) {
      const reply = await asking.request("service.upper", word, { timeoutMs: 5000 });
      if (reply === null) throw new Error(`no reply to ${word} within 5 s`);
      console.log(`${word} -> ${reply.body.toString()}`);
    }
    await requests.close();
    await responder;
  } finally {
    await conn.close();
  }
}

main(process.argv[2] || "meshmq://127.0.0.1:61616").catch((e) => { console.error(e); process.exit(1); });
