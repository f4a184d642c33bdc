#!/usr/bin/env bash
# Install what is missing (Python deps in .venv, PostgreSQL server binaries),
# then run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
