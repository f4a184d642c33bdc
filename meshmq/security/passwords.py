"""Users' passwords at rest: salted scrypt hashes, checked in constant time.

A user's `password` in the config may be a hash made by `meshmq user hash`
(`scrypt$16384$8$1$<salt>$<hash>`, base64) or, still accepted with a
start-up warning, plain text. scrypt comes with Python (hashlib, on
OpenSSL): no new dependency. Its cost (N=2**14, r=8, p=1: 16 MiB, 60-90 ms
measured on the project's 2-core VM) is what makes a stolen config slow to
crack; it is the classic interactive-login setting, and the highest N that
stays under 100 ms there (2**15 took 165 ms). A node pays it once per distinct
(user, password) it sees, because `PasswordChecker` remembers the
presentations that succeeded — a client authenticates on every call.

A plain-text password that happens to begin with `scrypt$` is read as a hash
(and refused as a malformed one when the config loads): hash it instead.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections import OrderedDict

SCHEME = "scrypt"
N, R, P = 2**14, 8, 1
SALT_BYTES = 16
HASH_BYTES = 32
# Successful presentations remembered (LRU). Failures are not: an attacker
# could otherwise fill the cache, and a wrong password must cost a full check.
REMEMBERED = 1024


def hash_password(password: str) -> str:
    """A new salted hash of `password`, in the format the config accepts."""
    salt = os.urandom(SALT_BYTES)
    digest = _scrypt(password, salt, N, R, P)
    return f"{SCHEME}${N}${R}${P}${_b64(salt)}${_b64(digest)}"


def is_hashed(stored: str) -> bool:
    """Whether `stored` claims to be a hash (it may still be malformed: `check_stored`)."""
    return stored.startswith(SCHEME + "$")


def check_stored(stored: str) -> None:
    """ValueError naming what is wrong with a stored hash (config validation)."""
    _parse(stored)


def verify_password(stored: str, password: str) -> bool:
    """Whether `password` matches `stored` (a hash, or plain text), in constant time."""
    if not is_hashed(stored):
        # Digests, not the strings: compare_digest returns early on a length mismatch.
        return hmac.compare_digest(_sha256(stored), _sha256(password))
    n, r, p, salt, digest = _parse(stored)
    return hmac.compare_digest(_scrypt(password, salt, n, r, p), digest)


class PasswordChecker:
    """Checks users' passwords, remembering successful presentations.

    A presentation is remembered by an HMAC of the password under a key made
    for this checker, not a bare SHA-256: a memory dump then holds nothing an
    attacker could crack at SHA-256 speed.
    """

    def __init__(self, users: dict[str, str], *, remembered: int = REMEMBERED) -> None:
        self._users = dict(users)
        self._remembered = remembered
        self._key = os.urandom(32)
        self._ok: OrderedDict[tuple[str, bytes], None] = OrderedDict()
        self.full_checks = 0  # how many times a password was really verified (tests, metrics)

    def check(self, username: str, password: str) -> bool:
        stored = self._users.get(username)
        if stored is None:
            return False
        key = (username, hmac.digest(self._key, password.encode(), "sha256"))
        if key in self._ok:
            self._ok.move_to_end(key)
            return True
        self.full_checks += 1
        if not verify_password(stored, password):
            return False
        self._ok[key] = None
        if len(self._ok) > self._remembered:
            self._ok.popitem(last=False)
        return True


def _parse(stored: str) -> tuple[int, int, int, bytes, bytes]:
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != SCHEME:
        raise ValueError(f"a password hash is {SCHEME}$N$r$p$salt$hash (from `meshmq user hash`); "
                         f"this one has {len(parts)} parts")
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
    except ValueError:
        raise ValueError(f"malformed password hash: N, r and p must be integers, not "
                         f"{parts[1]!r}, {parts[2]!r}, {parts[3]!r}") from None
    salt, digest = _b64decode(parts[4], "salt"), _b64decode(parts[5], "hash")
    if n < 2 or n & (n - 1) or not 1 <= r <= 64 or not 1 <= p <= 16 or n * r > 2**22:
        raise ValueError(f"password hash parameters out of range: N={n} (a power of 2), r={r}, p={p}")
    if not salt or len(digest) != HASH_BYTES:
        raise ValueError(f"password hash has an empty salt or a hash of {len(digest)} bytes, not {HASH_BYTES}")
    return n, r, p, salt, digest


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=2 * 128 * n * r + 2**20,
                          dklen=HASH_BYTES)


def _sha256(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _b64decode(text: str, field: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as exc:
        raise ValueError(f"malformed password hash: its {field} is not base64 ({exc})") from None
