// Copies the client-facing protos from the repository's proto/ into dist/proto,
// so the built package carries them; test/proto_drift.test.js checks the copy.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const FILES = ["broker.proto", "messages.proto", "management.proto"];
const src = path.resolve(__dirname, "..", "..", "..", "proto", "meshmq", "v1");
const dst = path.resolve(__dirname, "..", "dist", "proto", "meshmq", "v1");
fs.mkdirSync(dst, { recursive: true });
for (const f of FILES) fs.copyFileSync(path.join(src, f), path.join(dst, f));
