// A real meshmq router for the tests: `python -m meshmq.cli.main serve router` on a
// port picked at run time, SQLite journal under a temp dir, stopped by pid.
"use strict";
const { spawn, execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const REPO = path.resolve(__dirname, "..", "..", "..");
const VENV_PYTHON = path.join(REPO, ".venv", "bin", "python");
const PYTHON = process.env.MESHMQ_PYTHON || (fs.existsSync(VENV_PYTHON) ? VENV_PYTHON : "python3");
const ENV = { ...process.env, PYTHONPATH: REPO, PYTHONUNBUFFERED: "1" };

/** Polls `cond` (sync or async) every 20 ms until it gives a truthy value (returned), or fails after `timeoutMs`. */
async function waitFor(cond, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts a router; `extra` is more node YAML, `acceptor` more keys of its acceptor. */
async function startRouter({ name = "ts", extra = "", acceptor = "", dir, port = 0 } = {}) {
  dir = dir || fs.mkdtempSync(path.join(os.tmpdir(), "meshmq-ts-"));
  const cfg = path.join(dir, `${name}.yaml`);
  const ready = path.join(dir, `${name}.ready.json`);
  const log = path.join(dir, `${name}.log`);
  fs.writeFileSync(cfg, `name: ${name}\ndata-directory: ${path.join(dir, name + "-data")}\n` +
    `acceptors:\n  - {name: grpc, host: 127.0.0.1, port: ${port}${acceptor}}\n` +
    `journal:\n  listen: {host: 127.0.0.1, port: 0}\n` + extra);
  const router = { dir, cfg, ready, log, name, proc: null, endpoint: "" };
  router.start = async () => {
    fs.rmSync(ready, { force: true });
    const out = fs.openSync(log, "a");
    const proc = spawn(PYTHON, ["-m", "meshmq.cli.main", "serve", "router", "--config", cfg, "--ready-file", ready, "--quiet"],
      { cwd: dir, env: ENV, stdio: ["ignore", out, out], detached: true });
    fs.closeSync(out);
    router.proc = proc;
    let exited = null;
    proc.on("exit", (code) => { exited = code; });
    await waitFor(() => {
      if (exited !== null) throw new Error(`router exited with ${exited}:\n${fs.readFileSync(log, "utf8").slice(-3000)}`);
      return fs.existsSync(ready);
    }, 60000, "the router to listen");
    router.endpoint = JSON.parse(fs.readFileSync(ready, "utf8")).endpoints[0];
    router.url = `meshmq://${router.endpoint}`;
    return router;
  };
  router.stop = async (signal = "SIGTERM") => {
    const p = router.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once("exit", r));
    process.kill(p.pid, signal);
    const t = setTimeout(() => { try { process.kill(p.pid, "SIGKILL"); } catch {} }, 15000);
    await gone;
    clearTimeout(t);
  };
  router.kill9 = () => router.stop("SIGKILL");
  /** SIGSTOP: the node freezes, so what is sent now stays unconfirmed. */
  router.freeze = () => process.kill(router.proc.pid, "SIGSTOP");
  return router.start();
}

/** A free loopback port (for a node that must come back on the same one): picked by the
 * project's own picker (meshmq/ports.py) below the kernel's ephemeral range, in this test
 * run's slice (MESHMQ_PORT_SLICE), so no outgoing connection or bind to port 0 takes it
 * before the router binds it. */
async function freePort() {
  const out = execFileSync(PYTHON, ["-c", "from meshmq.ports import free_port; print(free_port())"], { env: ENV });
  return Number(String(out).trim());
}

/** A throwaway CA and a server certificate for 127.0.0.1 (meshmq/security/certs.py). */
function makeCerts(dir) {
  execFileSync(PYTHON, ["-c",
    "import sys; from pathlib import Path; from meshmq.security.certs import create_ca, issue; " +
    "d = Path(sys.argv[1]); create_ca(d / 'ca'); issue(d / 'ca', d, 'server', ['127.0.0.1'])", dir], { env: ENV });
  return { ca: path.join(dir, "ca", "ca.pem"), cert: path.join(dir, "server.pem"), key: path.join(dir, "server-key.pem") };
}

module.exports = { startRouter, makeCerts, freePort, waitFor, REPO, PYTHON, ENV };
