#!/usr/bin/env node
// End-to-end throughput of the TypeScript SDK: the same run as bench/throughput.py's
// `durable` mode (meshmq/perf.py `client`): one producer and one consumer at once, in one
// process, each on its own connection, COUNT messages of SIZE bytes, durable, sent as fast
// as the confirmation window allows; prints one JSON line with msg/s.
//
//   node bench/throughput.js [--url meshmq://host:port] [--count 200000] [--size 1024] [--python]
//
// Without --url it starts a fresh node as bench/throughput.py does (SQLite, journal sync on:
// a durable confirm means the commit reached the disk). --python also runs the Python SDK's
// identical client (`meshmq perf client`, the code bench/throughput.py runs) against the same
// node, before and after, so both SDKs are measured side by side on one node.
"use strict";
const { execFileSync } = require("node:child_process");
const os = require("node:os");
const { connect } = require("../dist/index.js");
const { startRouter, ENV, PYTHON } = require("../test/router.js");

function args() {
  const a = { count: 200000, size: 1024, url: "", python: false, address: "bench.durable" };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    const k = v[i];
    if (k === "--python") a.python = true;
    else if (k === "--count") a.count = Number(v[++i]);
    else if (k === "--size") a.size = Number(v[++i]);
    else if (k === "--url") a.url = v[++i];
    else if (k === "--address") a.address = v[++i];
    else throw new Error(`unknown argument ${k}; usage: throughput.js [--url URL] [--count N] [--size BYTES] [--python]`);
  }
  if (!Number.isInteger(a.count) || a.count < 1) throw new Error("--count must be a positive integer");
  return a;
}

/** User+system CPU seconds of a process and its children so far (Linux /proc). */
function cpuSeconds(pid) {
  const fs = require("node:fs");
  const hz = 100;
  const read = (p) => {
    const f = fs.readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1].split(" ");
    return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / hz };
  };
  let total = 0;
  const want = new Set([pid]);
  total += read(pid).cpu;
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d) || Number(d) === pid) continue;
    try { const s = read(d); if (want.has(s.ppid)) total += s.cpu; } catch {}
  }
  return total;
}

function percentile(data, p) {
  if (!data.length) return NaN;
  const s = [...data].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.round((p / 100) * (s.length - 1))))];
}

async function produce(url, address, count, size) {
  const conn = await connect(url);
  const session = await conn.createSession();
  const producer = await session.createProducer(address);
  const body = Buffer.alloc(size, "x");
  const lat = [];
  let last;
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const { confirmed } = await producer.sendAsync(body, { durable: true, routingType: "ANYCAST" });
    if (i % 10 === 0) {
      const t = performance.now();
      confirmed.then(() => lat.push(performance.now() - t));
    }
    last = confirmed;
  }
  await last;
  const seconds = (performance.now() - start) / 1000;
  await conn.close();
  return { messages: count, seconds, lat };
}

async function consume(url, queue, count) {
  const conn = await connect(url);
  const session = await conn.createSession();
  const consumer = await session.createConsumer(queue);
  let start = null;
  let got = 0;
  const lat = [];
  while (got < count) {
    const msg = await consumer.receive({ timeoutMs: 30000 });
    if (!msg) break;
    if (start === null) start = performance.now();
    if (got % 10 === 0) lat.push(Date.now() - msg.timestamp);
    msg.ack();
    got++;
  }
  const seconds = (performance.now() - (start ?? performance.now())) / 1000;
  await consumer.close();
  await conn.close();
  return { messages: got, seconds, lat };
}

async function runTypeScript(url, address, count, size) {
  const cpu0 = process.cpuUsage();
  const consumed = consume(url, address, count);
  const prod = await produce(url, address, count, size);
  const cons = await consumed;
  const total = cons.messages / Math.max(prod.seconds, cons.seconds);
  return {
    sdk: "typescript", mode: "durable", messages: cons.messages, msg_per_s: Math.round(total),
    producer_msg_per_s: Math.round(prod.messages / prod.seconds), consumer_msg_per_s: Math.round(cons.messages / cons.seconds),
    confirm_p50_ms: +percentile(prod.lat, 50).toFixed(2), confirm_p99_ms: +percentile(prod.lat, 99).toFixed(2),
    e2e_p50_ms: percentile(cons.lat, 50), e2e_p99_ms: percentile(cons.lat, 99),
    client_cpu_us_per_msg: +(((u) => (u.user + u.system) / count)(process.cpuUsage(cpu0))).toFixed(1),
  };
}

function runPython(url, address, count, size) {
  const out = execFileSync(PYTHON, ["-m", "meshmq.cli.main", "perf", "client", "--url", url, "--count", String(count),
    "--size", String(size), "--address", address, "--durable", "--json"], { env: ENV, encoding: "utf8" });
  const lines = out.trim().split("\n").map((l) => JSON.parse(l));
  const total = lines.find((l) => l.role === "end-to-end") ?? lines[lines.length - 1];
  const prod = lines.find((l) => l.role === "producer") ?? {};
  return { sdk: "python", mode: "durable", messages: total.messages, msg_per_s: Math.round(total.rate), confirm_p50_ms: prod.p50_ms, confirm_p99_ms: prod.p99_ms, detail: lines };
}

async function main() {
  const a = args();
  console.log(`# machine: ${os.hostname()} ${os.arch()} ${os.cpus().length} cores, Node ${process.version}`);
  const router = a.url ? null : await startRouter({ name: "bench", extra: "" });
  const url = a.url || router.url;
  try {
    const results = [];
    const measured = async (run) => {
      const before = router ? cpuSeconds(router.proc.pid) : 0;
      const r = await run();
      if (router) r.router_cpu_us_per_msg = +(((cpuSeconds(router.proc.pid) - before) / a.count) * 1e6).toFixed(1);
      results.push(r);
    };
    if (a.python) await measured(() => runPython(url, `${a.address}.py1`, a.count, a.size));
    await measured(() => runTypeScript(url, `${a.address}.ts`, a.count, a.size));
    if (a.python) await measured(() => runPython(url, `${a.address}.py2`, a.count, a.size));
    for (const r of results) {
      const { detail, ...line } = r;
      console.log(JSON.stringify(line));
    }
  } finally {
    await router?.stop();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
