#!/usr/bin/env bash
# Make sure PostgreSQL server binaries (/usr/lib/postgresql/<ver>/bin/postgres)
# are installed, installing Debian's `postgresql` package if they are not.
#
# Why only binaries: the test suite (tests/fixtures/postgres.py) either uses a
# server that already listens on 127.0.0.1:5432 or starts its own private
# server with initdb/postgres in a temporary directory. So this script never
# starts, stops or reconfigures the system cluster; while installing it also
# denies service starts (policy-rc.d) so the package's postinst cannot start
# one either.
#
# Idempotent; prints nothing when the binaries are already there.
set -euo pipefail

prog=ensure_postgres
die() { echo "$prog: error: $*" >&2; exit 1; }

have_server() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; }

have_server && exit 0

[[ $(id -u) -eq 0 ]] || die "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin and not root; run this script as root (or: sudo apt-get install postgresql)"
command -v apt-get >/dev/null || die "no PostgreSQL server binaries and no apt-get; install PostgreSQL 15 by hand"

log=$(mktemp /tmp/ensure_postgres.XXXXXX.log)
created_policy=0
cleanup() {
    if [[ $created_policy -eq 1 ]]; then rm -f /usr/sbin/policy-rc.d; fi
}
trap cleanup EXIT

# Deny service starts during the install (exit 101 = "action forbidden"), but
# only if the machine has no policy of its own (Docker images ship one).
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\n# temporary, from meshmq scripts/ensure_postgres.sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    created_policy=1
fi

apt_opts=(-y -qq -o DPkg::Lock::Timeout=300)
export DEBIAN_FRONTEND=noninteractive

updated=0
apt_update() {
    apt-get update -qq -o DPkg::Lock::Timeout=300 >>"$log" 2>&1 \
        || { cat "$log" >&2; die "apt-get update failed (log: $log)"; }
    updated=1
}

# Refresh the package lists only when apt does not know a candidate yet
# (fresh images ship with empty lists).
if ! apt-cache policy postgresql 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    apt_update
fi

if ! apt-get install "${apt_opts[@]}" postgresql >>"$log" 2>&1; then
    # Stale lists give 404s on download: refresh once and retry.
    [[ $updated -eq 1 ]] && { cat "$log" >&2; die "apt-get install postgresql failed (log: $log)"; }
    apt_update
    apt-get install "${apt_opts[@]}" postgresql >>"$log" 2>&1 \
        || { cat "$log" >&2; die "apt-get install postgresql failed (log: $log)"; }
fi

have_server || { cat "$log" >&2; die "postgresql installed but no /usr/lib/postgresql/*/bin/postgres found (log: $log)"; }
rm -f "$log"
