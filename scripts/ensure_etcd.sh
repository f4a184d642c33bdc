#!/usr/bin/env bash
# Make sure the `etcd` server binary is installed, installing Debian's
# `etcd-server` package if it is not.
#
# The tests (tests/fixtures/etcd.py) and the local launcher start their own
# etcd on loopback with a temporary data dir, so this script never starts,
# stops or configures the system service; while installing it also denies
# service starts (policy-rc.d) so the package's postinst cannot start one.
#
# Idempotent; prints nothing when etcd is already there.
set -euo pipefail

prog=ensure_etcd
die() { echo "$prog: error: $*" >&2; exit 1; }

command -v etcd >/dev/null && exit 0

[[ $(id -u) -eq 0 ]] || die "no etcd binary and not root; run this script as root (or: sudo apt-get install etcd-server)"
command -v apt-get >/dev/null || die "no etcd binary and no apt-get; install etcd 3.4 or newer by hand"

log=$(mktemp /tmp/ensure_etcd.XXXXXX.log)
created_policy=0
cleanup() {
    if [[ $created_policy -eq 1 ]]; then rm -f /usr/sbin/policy-rc.d; fi
}
trap cleanup EXIT

# Deny service starts during the install (exit 101 = "action forbidden"), but
# only if the machine has no policy of its own (Docker images ship one).
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\n# temporary, from meshmq scripts/ensure_etcd.sh\nexit 101\n' >/usr/sbin/policy-rc.d
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
if ! apt-cache policy etcd-server 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    apt_update
fi

if ! apt-get install "${apt_opts[@]}" etcd-server >>"$log" 2>&1; then
    # Stale lists give 404s on download: refresh once and retry.
    [[ $updated -eq 1 ]] && { cat "$log" >&2; die "apt-get install etcd-server failed (log: $log)"; }
    apt_update
    apt-get install "${apt_opts[@]}" etcd-server >>"$log" 2>&1 \
        || { cat "$log" >&2; die "apt-get install etcd-server failed (log: $log)"; }
fi

command -v etcd >/dev/null || { cat "$log" >&2; die "etcd-server installed but no etcd on PATH (log: $log)"; }
rm -f "$log"
