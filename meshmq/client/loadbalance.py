"""Client-side load balancing: which node the next session goes to.

The policies are Artemis's (the Artemis clustering chapter, "Client-Side Load balancing"): each is a
small object with one method, `select(n) -> index`, called with the number of
candidate nodes. RoundRobin is the default. A custom policy is named on the
URI as `connectionLoadBalancingPolicyClassName=package.module:ClassName`.
"""

from __future__ import annotations

import importlib
import random
from typing import Protocol

from meshmq.errors import InvalidRequestError


class LoadBalancingPolicy(Protocol):
    def select(self, n: int) -> int:
        """Index of the node, in 0..n-1, for the next session."""


class RoundRobin:
    """First node at random, then each next one in order."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._pos: int | None = None

    def select(self, n: int) -> int:
        self._pos = self._rng.randrange(n) if self._pos is None else (self._pos + 1) % n
        return self._pos


class Random:
    """Every node chosen at random."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def select(self, n: int) -> int:
        return self._rng.randrange(n)


class RandomSticky:
    """First node at random, then always that one."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._pos: int | None = None

    def select(self, n: int) -> int:
        if self._pos is None or self._pos >= n:
            self._pos = self._rng.randrange(n)
        return self._pos


class FirstElement:
    """Always the first node."""

    def select(self, n: int) -> int:
        return 0


BUILTIN = {
    "RoundRobin": RoundRobin,
    "Random": Random,
    "RandomSticky": RandomSticky,
    "FirstElement": FirstElement,
}


def policy_from_name(name: str) -> LoadBalancingPolicy:
    """A policy from its URI name.

    Accepts our short names, Artemis's class names (with or without the Java
    package, e.g. `RoundRobinConnectionLoadBalancingPolicy`), or `module:Class`
    for a policy of your own (any class with `select(n) -> int`).
    """
    short = name.rsplit(".", 1)[-1].removesuffix("ConnectionLoadBalancingPolicy")
    if ":" not in name and short in BUILTIN:
        return BUILTIN[short]()
    if ":" not in name:
        raise InvalidRequestError(
            f"unknown load-balancing policy {name!r}: use one of {', '.join(BUILTIN)} or 'module:Class'"
        )
    module_name, _, class_name = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InvalidRequestError(f"load-balancing policy {name!r}: cannot import {module_name!r} ({exc})") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise InvalidRequestError(f"load-balancing policy {name!r}: {module_name!r} has no {class_name!r}")
    try:
        policy = cls()
    except Exception as exc:
        raise InvalidRequestError(f"load-balancing policy {name!r} could not be created: {exc}") from None
    if not callable(getattr(policy, "select", None)):
        raise InvalidRequestError(f"load-balancing policy {name!r} has no select(n) method")
    return policy
