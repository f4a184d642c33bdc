#!/usr/bin/env bash
# Build the Debian base image the compose stack can build FROM on a machine
# that reaches no image registry, only Debian's mirror and PyPI:
#
#   debootstrap --variant=minbase bookworm  ->  docker import  ->  meshmq-base:bookworm
#
# Usage: scripts/docker_base.sh [TAG]      (default meshmq-base:bookworm)
# Then:  BASE_IMAGE=meshmq-base:bookworm docker-compose -f deploy/docker-compose.yml build
#
# Skipped (in well under a second) when the tag already exists: the image is
# the cache that keeps tests/deploy/test_compose_up.py at minutes. Delete it
# (docker rmi meshmq-base:bookworm) to build it again, e.g. for security updates.
#
# The mirror is the one apt on this machine uses (the first Debian URI in
# /etc/apt/sources.list*), or DEBIAN_MIRROR when set; the image's own apt
# sources name it too, with bookworm-updates and bookworm-security.
# Needs root, debootstrap and a running engine (scripts/ensure_docker.sh).
set -euo pipefail

prog=docker_base
die() { echo "$prog: error: $*" >&2; exit 1; }
say() { echo "$prog: $*" >&2; }

TAG=${1:-meshmq-base:bookworm}
SUITE=bookworm

docker_cli() { if [[ -x /usr/bin/docker ]]; then /usr/bin/docker "$@"; else docker "$@"; fi; }
have_image() { docker_cli image inspect "$TAG" >/dev/null 2>&1; }

have_image && exit 0
[[ $(id -u) -eq 0 ]] || die "debootstrap needs root"
command -v debootstrap >/dev/null || die "no debootstrap (scripts/ensure_docker.sh installs it)"

# One build at a time on this machine; a second caller waits, then finds the image.
exec 9>/var/lock/meshmq-docker-base.lock
flock -w 1800 9 || die "timed out waiting for another $prog run"
have_image && exit 0

# "URIs: http://deb.debian.org/debian" (deb822) or "deb [opts] http://... bookworm main".
apt_uris() {
    { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } \
        | sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
                 -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p'
}
mirror=${DEBIAN_MIRROR:-$(apt_uris | grep -E '/debian/?$' | head -n1 || true)}
mirror=${mirror:-http://deb.debian.org/debian}
mirror=${mirror%/}
security=${DEBIAN_SECURITY_MIRROR:-$(apt_uris | grep -E '/debian-security/?$' | head -n1 || true)}
security=${security:-http://deb.debian.org/debian-security}
security=${security%/}

work=$(mktemp -d /var/tmp/meshmq-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
log=$work/debootstrap.log

say "debootstrap --variant=minbase $SUITE from $mirror (a few minutes, once)"
debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$log" 2>&1 \
    || { tail -n 40 "$log" >&2; die "debootstrap failed"; }

cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $SUITE main
deb $mirror $SUITE-updates main
deb $security $SUITE-security main
EOF
# As Debian's own images: no recommends, no caches left in layers, no service starts.
cat >"$root/etc/apt/apt.conf.d/90meshmq-image" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
EOF
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/* "$root"/tmp/*

say "docker import -> $TAG"
tar -C "$root" --numeric-owner -c . \
    | docker_cli import \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' \
        --message "debootstrap --variant=minbase $SUITE $mirror (meshmq scripts/docker_base.sh)" \
        - "$TAG" >/dev/null
have_image || die "docker import did not produce $TAG"
say "built $TAG"
