#!/usr/bin/env bash
# Make sure a Docker engine answers and docker-compose is installed, for
# tests/deploy/test_compose_up.py and docs/docker.md:
#   - installs Debian's docker.io, docker-compose (1.29) and debootstrap when missing
#     (with service starts denied, so no systemd-less postinst tries to start one);
#   - starts dockerd by hand when no engine answers on /var/run/docker.sock:
#       dockerd --iptables=false --ip6tables=false --bridge=none
#     (no default bridge and no iptables rules: compose creates its own networks,
#     and ports are published by docker-proxy on 127.0.0.1), its pid in
#     /var/run/meshmq-dockerd.pid and its log in /var/log/meshmq-dockerd.log;
#   - waits for it with a deadline (DOCKER_START_TIMEOUT, default 60 s).
#
# The dockerd it starts keeps running (images and the build cache live in
# /var/lib/docker, so later runs are warm). Stop it with:
#   kill "$(cat /var/run/meshmq-dockerd.pid)"
#
# Idempotent; prints nothing when everything is already there and running.
set -euo pipefail
# shellcheck source=scripts/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

prog=ensure_docker
die() { echo "$prog: error: $*" >&2; exit 1; }

PIDFILE=/var/run/meshmq-dockerd.pid
LOG=/var/log/meshmq-dockerd.log
DEADLINE=${DOCKER_START_TIMEOUT:-60}

# The engine's own client: a newer `docker` elsewhere on PATH also works (it
# negotiates the API version), but /usr/bin/docker always matches dockerd.
docker_cli() { if [[ -x /usr/bin/docker ]]; then /usr/bin/docker "$@"; else docker "$@"; fi; }
engine_answers() { docker_cli version --format '{{.Server.Version}}' >/dev/null 2>&1; }

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)

if [[ ${#missing[@]} -gt 0 ]]; then
    # containerd, runc and tini come with docker.io; iptables is recommended only,
    # and dockerd runs here without it (--iptables=false).
    apt_install --no-install-recommends "$prog" "missing ${missing[*]}" \
        "install Docker, docker-compose and debootstrap by hand" "${missing[@]}"
fi

engine_answers && exit 0

[[ $(id -u) -eq 0 ]] || die "no Docker engine answers and not root: start dockerd (sudo dockerd --iptables=false --ip6tables=false --bridge=none)"
if [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "$prog: dockerd (pid $(cat "$PIDFILE")) is running but does not answer yet; waiting" >&2
else
    # setsid: the engine outlives the shell (and the test) that started it.
    setsid dockerd --iptables=false --ip6tables=false --bridge=none --pidfile "$PIDFILE" \
        </dev/null >>"$LOG" 2>&1 &
fi
for ((i = 0; i < DEADLINE * 4; i++)); do
    engine_answers && exit 0
    sleep 0.25
done
tail -n 30 "$LOG" >&2 || true
die "dockerd did not answer within ${DEADLINE}s (log: $LOG)"
