#!/usr/bin/env bash
# Install whatever is missing to run meshmq from this checkout, and nothing else:
#   - Debian packages: python3-venv (if venv is missing), openssl;
#     with --test also PostgreSQL's server binaries (scripts/ensure_postgres.sh)
#     and etcd (scripts/ensure_etcd.sh), Java 17 and the JDBC driver jars for
#     Spark (scripts/ensure_spark.sh), chromium for the console's browser test,
#     Prometheus for the alert rules' test, Node.js and npm with the TypeScript
#     SDK's packages (npm ci by its lockfile) and its build (scripts/ensure_typescript_sdk.sh)
#   - a virtualenv in .venv with meshmq installed in editable mode
# Idempotent and quiet when everything is already there.
set -euo pipefail
# shellcheck source=scripts/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"   # before the cd: the path may be relative
cd "$(dirname "$0")/.."

want_test=0
[[ "${1:-}" == "--test" ]] && want_test=1

say() { printf 'setup: %s\n' "$*" >&2; }

# Unlike the ensure_*.sh scripts, setup says what it installs.
apt_install_missing() { apt_install --announce setup "missing $*" "install them by hand" "$@"; }

PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
    apt_install_missing python3 python3-venv
fi
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    say "meshmq needs Python 3.11 or newer; $PY is $("$PY" --version 2>&1)"
    exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
    if ! "$PY" -m venv .venv >/dev/null 2>&1; then
        rm -rf .venv
        apt_install_missing python3-venv
        "$PY" -m venv .venv
    fi
fi
command -v openssl >/dev/null 2>&1 || apt_install_missing openssl

stamp=.venv/.meshmq-installed
extras=""
[[ $want_test -eq 1 ]] && extras="[dev]"
fingerprint="$extras $(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
if [[ ! -f $stamp ]] || [[ "$(cat "$stamp")" != "$fingerprint" ]]; then
    say "installing Python packages into .venv"
    .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
    .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".${extras}" \
        || { say "pip install failed"; exit 1; }
    echo "$fingerprint" > "$stamp"
fi
# Byte-compile the project as pip does an installed package (an editable install
# is not): every `meshmq` process -- a router and its journal writer, each CLI
# call -- otherwise compiles its ~160 modules again when PYTHONDONTWRITEBYTECODE
# is set, about a quarter of a router's start-up CPU. Only what changed is compiled.
.venv/bin/python -m compileall -q meshmq services spark >/dev/null

if [[ $want_test -eq 1 ]]; then
    bash scripts/ensure_postgres.sh
    bash scripts/ensure_etcd.sh
    bash scripts/ensure_spark.sh
    # The console's browser test drives Debian's chromium (Playwright never downloads a browser here).
    command -v chromium >/dev/null 2>&1 || apt_install_missing chromium
    # The alert rules in deploy/monitoring/ are checked by Debian's Prometheus (tests/metrics/test_alert_rules.py).
    command -v prometheus >/dev/null 2>&1 || apt_install_missing prometheus
    # The TypeScript SDK, built: tests/sdk runs its node tests, tests/conformance its driver.
    bash scripts/ensure_typescript_sdk.sh
fi
