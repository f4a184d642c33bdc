#!/bin/sh
# Installs the locked packages (npm ci; skipped when node_modules is already there, so it
# runs offline after the first time), builds with tsc and runs the node --test suite
# against real routers (started by test/router.js with the repository's Python:
# MESHMQ_PYTHON, else the repository's .venv/bin/python, else python3).
set -eu
cd "$(dirname "$0")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run build
exec node --test --test-concurrency=1 test/*.test.js
