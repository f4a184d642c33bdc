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
# shellcheck source=scripts/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

prog=ensure_postgres
die() { echo "$prog: error: $*" >&2; exit 1; }

have_server() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; }

have_server && exit 0

apt_install "$prog" "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin" \
    "install PostgreSQL 15 by hand" postgresql

have_server || die "postgresql installed but no /usr/lib/postgresql/*/bin/postgres found"
