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
    [[ $(id -u) -eq 0 ]] || die "missing ${missing[*]}; run this script as root (or: sudo apt-get install -y ${missing[*]})"
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get; install Docker, docker-compose and debootstrap by hand"
    log=$(mktemp /tmp/ensure_docker.XXXXXX.log)
    created_policy=0
    cleanup() { if [[ $created_policy -eq 1 ]]; then rm -f /usr/sbin/policy-rc.d; fi; }
    trap cleanup EXIT
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\n# temporary, from meshmq scripts/ensure_docker.sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        created_policy=1
    fi
    apt_opts=(-y -qq --no-install-recommends -o DPkg::Lock::Timeout=300)
    export DEBIAN_FRONTEND=noninteractive
    updated=0
    apt_update() {
        apt-get update -qq -o DPkg::Lock::Timeout=300 >>"$log" 2>&1 \
            || { cat "$log" >&2; die "apt-get update failed (log: $log)"; }
        updated=1
    }
    for pkg in "${missing[@]}"; do
        if ! apt-cache policy "$pkg" 2>/dev/null | grep -q 'Candidate: [0-9]'; then apt_update; break; fi
    done
    # containerd, runc and tini come with docker.io; iptables is recommended only,
    # and dockerd runs here without it (--iptables=false).
    if ! apt-get install "${apt_opts[@]}" "${missing[@]}" >>"$log" 2>&1; then
        [[ $updated -eq 1 ]] && { cat "$log" >&2; die "apt-get install ${missing[*]} failed (log: $log)"; }
        apt_update
        apt-get install "${apt_opts[@]}" "${missing[@]}" >>"$log" 2>&1 \
            || { cat "$log" >&2; die "apt-get install ${missing[*]} failed (log: $log)"; }
    fi
    rm -f "$log"
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
