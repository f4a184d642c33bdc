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
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable

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

    An unknown username costs what a known one with a wrong password costs:
    its password is verified against a dummy stored the way the configured
    users' are (a scrypt hash with their parameters, or plain text when no
    user is hashed). Otherwise the time of a refusal says whether the name
    exists (1.5 ms against 59 ms, measured). With both kinds configured, a
    plain-text user's check also pays the dummy's scrypt, so every refusal
    takes one scrypt.
    """

    def __init__(self, users: dict[str, str], *, remembered: int = REMEMBERED) -> None:
        self._users = dict(users)
        self._remembered = remembered
        self._key = os.urandom(32)
        self._ok: OrderedDict[tuple[str, bytes], None] = OrderedDict()
        # check() runs in worker threads (scrypt releases the GIL): the LRU's moves are not atomic.
        self._lock = threading.Lock()
        self._dummy = _dummy_for(self._users.values())
        self._pad_plain = is_hashed(self._dummy)
        self.full_checks = 0  # how many times a password was really verified (tests, metrics)

    def remembered(self, username: str, password: str) -> bool:
        """Whether this presentation already succeeded (no verification: microseconds)."""
        key = self._presentation(username, password)
        with self._lock:
            if key not in self._ok:
                return False
            self._ok.move_to_end(key)
            return True

    def check(self, username: str, password: str) -> bool:
        if self.remembered(username, password):
            return True
        stored = self._users.get(username)
        self.full_checks += 1
        if stored is None:
            verify_password(self._dummy, password)
            return False
        ok = verify_password(stored, password)
        if self._pad_plain and not is_hashed(stored):
            verify_password(self._dummy, password)
        if not ok:
            return False
        with self._lock:
            self._ok[self._presentation(username, password)] = None
            if len(self._ok) > self._remembered:
                self._ok.popitem(last=False)
        return True

    def _presentation(self, username: str, password: str) -> tuple[str, bytes]:
        return username, hmac.digest(self._key, password.encode(), "sha256")


def _dummy_for(stored: Iterable[str]) -> str:
    """What an unknown user's password is checked against: a hash of a random
    password with the parameters most users' hashes have (the defaults when
    none is hashed but a plain-text one), or a random plain text when no user
    is hashed."""
    params = Counter(_parse(s)[:3] for s in stored if is_hashed(s))
    secret = base64.b64encode(os.urandom(24)).decode()
    if not params:
        return secret
    n, r, p = params.most_common(1)[0][0]
    salt = os.urandom(SALT_BYTES)
    return f"{SCHEME}${n}${r}${p}${_b64(salt)}${_b64(_scrypt(secret, salt, n, r, p))}"


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
