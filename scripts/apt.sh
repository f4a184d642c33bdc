# shellcheck shell=bash
# Install Debian packages for setup.sh and the ensure_*.sh scripts, one way for
# all of them. Sourced, not run:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
#   apt_install [--no-install-recommends] [--announce] PROG WHAT BY_HAND PKG...
#
# PROG names the script in messages. WHAT (what is missing) and BY_HAND (what
# to do without apt) make the two errors given before anything is installed:
#   PROG: error: WHAT and not root; run this script as root (or: sudo apt-get install -y PKG...)
#   PROG: error: WHAT and no apt-get; BY_HAND
# Quiet on success (--announce prints "PROG: installing Debian packages: PKG..."
# first); on any failure prints apt's log and exits the script with status 1.
# The caller decides what is missing and checks the result afterwards.
# It holds the EXIT trap while it runs (to remove its policy-rc.d) and gives
# the caller's back when it returns.
#
# While it installs, service starts are denied (policy-rc.d): the scripts never
# start, stop or configure a system service (the tests start their own servers
# in temporary directories), so no package's postinst may start one either.

_apt_created_policy=0

_apt_remove_policy() {
    if [[ $_apt_created_policy -eq 1 ]]; then
        rm -f /usr/sbin/policy-rc.d
        _apt_created_policy=0
    fi
}

# _apt_fail PROG LOG MESSAGE: print LOG (if any) and MESSAGE, exit 1.
_apt_fail() {
    if [[ -n $2 ]]; then cat "$2" >&2; fi
    echo "$1: error: $3" >&2
    exit 1
}

apt_install() {
    local no_recommends=() announce=0
    while [[ ${1:-} == --* ]]; do
        case $1 in
            --no-install-recommends) no_recommends=(--no-install-recommends) ;;
            --announce) announce=1 ;;
            *) _apt_fail apt_install "" "unknown option $1" ;;
        esac
        shift
    done
    local prog=$1 what=$2 by_hand=$3
    shift 3
    local pkgs=("$@")

    [[ $(id -u) -eq 0 ]] \
        || _apt_fail "$prog" "" "$what and not root; run this script as root (or: sudo apt-get install -y ${pkgs[*]})"
    command -v apt-get >/dev/null || _apt_fail "$prog" "" "$what and no apt-get; $by_hand"
    if [[ $announce -eq 1 ]]; then echo "$prog: installing Debian packages: ${pkgs[*]}" >&2; fi

    local log saved_trap
    log=$(mktemp "/tmp/$prog.XXXXXX.log") || _apt_fail "$prog" "" "cannot create a log file in /tmp"
    saved_trap=$(trap -p EXIT)
    trap _apt_remove_policy EXIT

    # Deny service starts during the install (exit 101 = "action forbidden"), but
    # only if the machine has no policy of its own (Docker images ship one).
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\n# temporary, from meshmq scripts/%s.sh\nexit 101\n' "$prog" >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        _apt_created_policy=1
    fi
    # Slim images drop the man directories, and the JDK's postinst fails without this one.
    mkdir -p /usr/share/man/man1

    local -x DEBIAN_FRONTEND=noninteractive
    local opts=(-y -qq "${no_recommends[@]}" -o DPkg::Lock::Timeout=300)
    local updated=0 pkg

    # Refresh the package lists only when apt knows no candidate yet (fresh images ship with empty lists).
    # Not `grep -q`: it stops reading at the match, apt-cache dies of SIGPIPE, and
    # under pipefail the test then fails even when there is a candidate.
    for pkg in "${pkgs[@]}"; do
        if ! apt-cache policy "$pkg" 2>/dev/null | grep 'Candidate: [0-9]' >/dev/null; then
            _apt_update "$prog" "$log"
            updated=1
            break
        fi
    done

    if ! apt-get install "${opts[@]}" "${pkgs[@]}" >>"$log" 2>&1; then
        # Stale lists give 404s on download: refresh once and retry.
        if [[ $updated -eq 1 ]]; then _apt_fail "$prog" "$log" "apt-get install ${pkgs[*]} failed (log: $log)"; fi
        _apt_update "$prog" "$log"
        apt-get install "${opts[@]}" "${pkgs[@]}" >>"$log" 2>&1 \
            || _apt_fail "$prog" "$log" "apt-get install ${pkgs[*]} failed (log: $log)"
    fi

    rm -f "$log"
    _apt_remove_policy
    if [[ -n $saved_trap ]]; then eval "$saved_trap"; else trap - EXIT; fi
}

_apt_update() {
    apt-get update -qq -o DPkg::Lock::Timeout=300 >>"$2" 2>&1 \
        || _apt_fail "$1" "$2" "apt-get update failed (log: $2)"
}
