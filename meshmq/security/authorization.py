"""Authorization: which user may do what on which address (Artemis ``security-settings``).

A node's config grants permissions to roles per address match string, and
gives each user roles::

    users:
      - {username: bob, password: ..., roles: [producers]}
    security-settings:
      "orders.#": {send: [producers], consume: [consumers]}

A user may perform an action on an address when one of their roles is listed
for that permission in the security-setting that applies to the address.
``manage`` implies ``view`` (read-only management), as Artemis's management
roles do: a role listed for ``manage`` needs no ``view`` entry as well.

Which security-setting applies
------------------------------
The match strings use the address-settings wildcards and order
(``meshmq/config/wildcards.py``), but, as in Artemis, only the most
specific match applies, whole: its permissions are not merged with those of
less specific matches. If ``orders.eu`` grants only ``consume`` to role X and
``#`` grants X everything, X cannot send to ``orders.eu``. A permission the
applying setting leaves out is granted to no role, and an address that no
setting matches is closed to everyone.

When there is nothing to check
------------------------------
* ``security-enabled: false``: everything is allowed (there is no user).
* ``security-enabled: true`` with no ``security-settings`` at all: every
  authenticated user has every permission. Artemis's default broker.xml reaches
  the same place by granting everything to role ``amq`` on ``#``; meshmq keeps
  it because configs written before authorization existed must keep working.
  The router warns at start-up that no authorization is configured.

The authorizer trusts the user name it is given: authentication happens
before, in the service that received the call.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from meshmq.config.wildcards import match_syntax_problem, most_specific_first, wildcard_matches
from meshmq.errors import BrokerError, Reason

if TYPE_CHECKING:
    from meshmq.config.models import BrokerConfig


# Artemis's management address: the subject of `manage` (and `view`) for node-wide operations.
MANAGEMENT_ADDRESS = "activemq.management"


class Permission(str, enum.Enum):
    """Artemis's permission types; the values are the YAML keys under a security-setting."""

    SEND = "send"
    CONSUME = "consume"
    CREATE_ADDRESS = "create-address"
    DELETE_ADDRESS = "delete-address"
    CREATE_DURABLE_QUEUE = "create-durable-queue"
    DELETE_DURABLE_QUEUE = "delete-durable-queue"
    CREATE_NON_DURABLE_QUEUE = "create-non-durable-queue"
    DELETE_NON_DURABLE_QUEUE = "delete-non-durable-queue"
    MANAGE = "manage"
    BROWSE = "browse"
    # Read-only management (Artemis's management "view" role); `manage` implies it.
    VIEW = "view"


# What a refusal says the user tried to do, before "address 'x'".
_ACTION = {
    Permission.SEND: "send to",
    Permission.CONSUME: "consume from",
    Permission.CREATE_ADDRESS: "create",
    Permission.DELETE_ADDRESS: "delete",
    Permission.CREATE_DURABLE_QUEUE: "create a durable queue on",
    Permission.DELETE_DURABLE_QUEUE: "delete a durable queue on",
    Permission.CREATE_NON_DURABLE_QUEUE: "create a non-durable queue on",
    Permission.DELETE_NON_DURABLE_QUEUE: "delete a non-durable queue on",
    Permission.MANAGE: "manage",
    Permission.BROWSE: "browse queues on",
    Permission.VIEW: "view",
}

Grants = Mapping[Permission, frozenset[str]]


class Authorizer:
    """Answers "may this user do this on this address" for one node's config.

    Immutable: build a new one when the configuration changes. Which setting
    applies is cached per address (LRU, ``cache_size`` entries) because the
    router asks on every send.
    """

    def __init__(
        self,
        security_settings: Mapping[str, Grants] | None = None,
        user_roles: Mapping[str, frozenset[str]] | None = None,
        *,
        enabled: bool = True,
        cache_size: int = 10_000,
    ) -> None:
        # `manage` implies `view`: whoever may change the broker may look at it.
        settings = {
            pattern: {**grants, Permission.VIEW: grants.get(Permission.VIEW, frozenset())
                      | grants.get(Permission.MANAGE, frozenset())}
            for pattern, grants in (security_settings or {}).items()
        }
        for pattern in settings:
            problem = match_syntax_problem(pattern)
            if problem is not None:
                raise ValueError(f"security-settings {pattern!r}: {problem}")
        self.enabled = enabled
        self._settings = settings
        self._patterns = most_specific_first(settings)
        self._user_roles = dict(user_roles or {})
        self._applying = functools.lru_cache(maxsize=cache_size)(self._most_specific)

    @classmethod
    def from_config(cls, config: BrokerConfig, *, cache_size: int = 10_000) -> Authorizer:
        settings = {
            pattern: {p: frozenset(getattr(setting, p.name.lower())) for p in Permission}
            for pattern, setting in config.security_settings.items()
        }
        user_roles = {user.username: frozenset(user.roles) for user in config.users}
        return cls(settings, user_roles, enabled=config.security_enabled, cache_size=cache_size)

    @property
    def active(self) -> bool:
        """Whether anything is checked (security enabled and some security-settings)."""
        return self.enabled and bool(self._settings)

    def allowed(self, user: str, permission: Permission, address: str) -> bool:
        if not self.enabled or not self._settings:
            return True
        pattern = self._applying(address)
        if pattern is None:
            return False
        granted = self._settings[pattern].get(permission, frozenset())
        return not granted.isdisjoint(self._user_roles.get(user, ()))

    def check(self, user: str, permission: Permission, address: str) -> None:
        """Raise ``BrokerError(PERMISSION_DENIED)`` naming the user, the
        permission, the address and what would have allowed it."""
        if self.allowed(user, permission, address):
            return
        pattern = self._applying(address)
        if pattern is None:
            why = f"no security-settings match {address!r}"
        else:
            roles = ", ".join(sorted(self._settings[pattern].get(permission, ()))) or "none"
            why = f"roles allowed by security-settings {pattern!r}: {roles}"
        raise BrokerError(
            Reason.PERMISSION_DENIED,
            f"user {user!r} may not {_ACTION[permission]} address {address!r} (permission {permission.value}; {why})",
        )

    def _most_specific(self, address: str) -> str | None:
        return next((p for p in self._patterns if wildcard_matches(p, address)), None)
