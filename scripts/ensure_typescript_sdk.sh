#!/usr/bin/env bash
# The TypeScript SDK (sdk/typescript) ready for the tests: Node.js and npm
# (Debian's packages when missing), its packages from the npm registry as its
# lockfile pins them (npm ci, again only when the lockfile changed), and built
# (tsc, again only when a source, its config or a client proto changed).
# Idempotent and quiet when everything is already there.
set -euo pipefail
# shellcheck source=scripts/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
cd "$(dirname "$0")/../sdk/typescript"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt_install --announce setup "missing nodejs npm" "install Node.js 20 and npm by hand" nodejs npm
fi
if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
    printf 'setup: installing the TypeScript SDK'"'"'s npm packages (npm ci)\n' >&2
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
stamp=dist/.built
if [[ ! -f $stamp ]] || [[ -n "$(find src scripts package.json package-lock.json tsconfig.json ../../proto/meshmq/v1 \
        -newer "$stamp" -print -quit)" ]]; then
    npm run --silent build >/dev/null
    touch "$stamp"
fi
