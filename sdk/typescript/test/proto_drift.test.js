// The protos the build copied into dist/proto are the repository's (a stale build fails here).
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

test("dist/proto matches proto/meshmq/v1", () => {
  for (const f of ["broker.proto", "messages.proto", "management.proto"]) {
    const built = fs.readFileSync(path.join(__dirname, "..", "dist", "proto", "meshmq", "v1", f), "utf8");
    const repo = fs.readFileSync(path.join(__dirname, "..", "..", "..", "proto", "meshmq", "v1", f), "utf8");
    assert.equal(built, repo, `${f} changed since the build: run npm run build`);
  }
});
