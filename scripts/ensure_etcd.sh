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
# shellcheck source=scripts/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

prog=ensure_etcd
die() { echo "$prog: error: $*" >&2; exit 1; }

command -v etcd >/dev/null && exit 0

apt_install "$prog" "no etcd binary" "install etcd 3.4 or newer by hand" etcd-server

command -v etcd >/dev/null || die "etcd-server installed but no etcd on PATH"
