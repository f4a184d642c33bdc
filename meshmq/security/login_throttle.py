"""Back-off for failed log-ins, per username and per source address.

Shared by the router (every gRPC call's credentials) and the admin gateway
(its log-in form and token endpoint). Without it, scrypt's ~60 ms was the only
brake: 20-40 guesses a second per connection, more with several connections.

Each failed log-in counts against two keys, the username (known or not: the
throttle must never tell an existing user from an unknown one) and the caller's
address. Up to `free-attempts` failures cost nothing; after that, every attempt
on that key first waits `initial-delay`, doubling with each further failure up
to `max-delay`. A key whose last failure is older than `forget-after` starts
over.

The two keys are throttled differently, on purpose:

- An address's waits queue up: concurrent attempts from one address take
  turns, one per delay, so opening more connections does not multiply its
  guessing rate.
- A username's wait never queues and never exceeds `max-delay`, whoever else
  is guessing at it: its real owner, from another address, always gets their
  password checked within `max-delay`. A lock-out would let anyone lock any user
  out by guessing at their name; this only slows the guesser.

A success forgets the username's failures (its owner came back), not the
address's: otherwise an attacker holding one account could log in with it
between guesses at others. Only checks that reach a full password verification
pass through here: a client presenting a password that already succeeded (the
checker's cache) is never slowed, whatever happens to its username.

Memory is bounded: each table keeps at most `max-entries` keys, dropping the
least recently failed. `LoginThrottle` only decides (plain data, an injected
clock); `Authenticator` and the gateway's `Users` do the waiting, with
`asyncio.sleep`, never blocking the event loop.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from meshmq.config import defaults


@dataclass(frozen=True)
class ThrottlePolicy:
    """The `login-throttle` config section, in seconds."""

    free_attempts: int = defaults.LOGIN_THROTTLE_FREE_ATTEMPTS
    initial_delay_s: float = defaults.LOGIN_THROTTLE_INITIAL_DELAY / 1000
    max_delay_s: float = defaults.LOGIN_THROTTLE_MAX_DELAY / 1000
    forget_after_s: float = defaults.LOGIN_THROTTLE_FORGET_AFTER / 1000
    max_entries: int = defaults.LOGIN_THROTTLE_MAX_ENTRIES

    @classmethod
    def from_config(cls, section) -> ThrottlePolicy:
        """From a `meshmq.config.models.LoginThrottle` (milliseconds)."""
        return cls(free_attempts=section.free_attempts, initial_delay_s=section.initial_delay / 1000,
                   max_delay_s=section.max_delay / 1000, forget_after_s=section.forget_after / 1000,
                   max_entries=section.max_entries)

    def delay(self, failures: int) -> float:
        """The wait before an attempt on a key with `failures` recent failures."""
        over = failures - self.free_attempts
        if over < 0:
            return 0.0
        return min(self.initial_delay_s * 2.0 ** min(over, 64), self.max_delay_s)


@dataclass
class _Failures:
    count: int = 0
    last: float = -math.inf
    # An address's next free turn (attempts from one address take turns).
    turn: float = -math.inf


class LoginThrottle:
    """Failed log-ins per username and per address, and how long the next attempt waits."""

    def __init__(self, policy: ThrottlePolicy | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy or ThrottlePolicy()
        self._clock = clock
        self._users: OrderedDict[str, _Failures] = OrderedDict()
        self._sources: OrderedDict[str, _Failures] = OrderedDict()
        # Counted since start, for the metrics.
        self.failures = 0
        self.throttled = 0

    def wait(self, username: str, source: str) -> float:
        """Seconds this attempt waits before its password is checked (0: none).
        Takes the address's next turn, so call it once per attempt."""
        now = self._clock()
        user = self._recent(self._users, username, now)
        by_user = self.policy.delay(user.count) if user else 0.0
        by_source = 0.0
        src = self._recent(self._sources, source, now)
        delay = self.policy.delay(src.count) if src else 0.0
        if src and delay:
            src.turn = max(now, src.turn) + delay
            by_source = src.turn - now
        wait = max(by_user, by_source)
        if wait:
            self.throttled += 1
        return wait

    def failed(self, username: str, source: str) -> None:
        now = self._clock()
        self.failures += 1
        for table, key in ((self._users, username), (self._sources, source)):
            entry = self._recent(table, key, now) or _Failures()
            entry.count += 1
            entry.last = now
            table[key] = entry
            table.move_to_end(key)
            while len(table) > self.policy.max_entries:
                table.popitem(last=False)

    def succeeded(self, username: str, source: str) -> None:
        self._users.pop(username, None)

    def tracked(self) -> tuple[int, int]:
        """(usernames, addresses) with failures remembered (tests: the tables stay bounded)."""
        return len(self._users), len(self._sources)

    def _recent(self, table: OrderedDict[str, _Failures], key: str, now: float) -> _Failures | None:
        entry = table.get(key)
        if entry is not None and now - entry.last > self.policy.forget_after_s and now >= entry.turn:
            del table[key]
            return None
        return entry

