#!/usr/bin/env bash
# Install what is missing (Python deps in .venv, PostgreSQL server binaries),
# then run the whole test suite on pytest-xdist workers (docs/development.md).
#
#   scripts/test.sh              the whole suite, MESHMQ_TEST_WORKERS workers (default 4)
#   scripts/test.sh --quick      the edit-loop tier: the tests marked `quick` (tests/conftest.py)
#   scripts/test.sh ARGS...      extra arguments go to pytest, after the defaults
#                                (`-n 0` runs serially, a path narrows the run)
#
# Four workers on two cores: most tests wait on timers and other processes,
# not on the CPU; four measured shorter than two or six (docs/development.md, "Tests").
# `--dist loadgroup` keeps the tests tests/conftest.py groups on one worker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
args=(-p no:cacheprovider -n "${MESHMQ_TEST_WORKERS:-4}" --dist loadgroup)
if [[ "${1:-}" == "--quick" ]]; then
    shift
    args+=(-m quick)
fi
exec .venv/bin/python -m pytest "${args[@]}" "$@"
