#!/usr/bin/env bash
# Install what is missing, then start one meshmq node on the embedded default
# (router + journal in one process, SQLite under ./data). Extra arguments go to
# `meshmq up` (e.g. --port 61617).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/meshmq up "$@"
