"""Hierarchical address-settings merging: the settings in force for one address.

Which match strings apply to an address, and in which order, is decided by the
Artemis wildcards in ``wildcards.py``.

Merging
-------
Artemis merges the ordered settings: each field takes its value from the most
specific entry that sets it, then the next one, and so on; a field no entry
sets takes the default from ``defaults.py``. ``max-redelivery-delay`` left
unset stays None: it is the merged ``redelivery-delay`` times 10, as Artemis
reads it. ``id-cache-size`` falls back to the broker-wide ``id-cache-size``. An empty string for ``dead-letter-address`` or
``expiry-address`` sets it to "none" explicitly, so a specific match can turn
off a dead-letter address a broader one set (e.g. for the DLQ itself).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from meshmq.config import defaults
from meshmq.config.models import AddressSettings, BrokerConfig
from meshmq.config.wildcards import DELIMITER, compile_match, has_wildcards, match_syntax_problem, most_specific_first


@dataclasses.dataclass(frozen=True)
class ResolvedAddressSettings:
    """The settings in force for one address; every field has a value.

    ``matched`` lists the address-settings keys that matched, most specific first.
    """

    dead_letter_address: str | None = defaults.DEAD_LETTER_ADDRESS
    expiry_address: str | None = defaults.EXPIRY_ADDRESS
    expiry_delay: int = defaults.EXPIRY_DELAY
    max_delivery_attempts: int = defaults.MAX_DELIVERY_ATTEMPTS
    redelivery_delay: int = defaults.REDELIVERY_DELAY
    redelivery_delay_multiplier: float = defaults.REDELIVERY_DELAY_MULTIPLIER
    # None: the merged redelivery-delay x 10, as Artemis reads it (services/router/redelivery.py).
    max_redelivery_delay: int | None = defaults.MAX_REDELIVERY_DELAY
    redelivery_collision_avoidance_factor: float = defaults.REDELIVERY_COLLISION_AVOIDANCE_FACTOR
    redistribution_delay: int = defaults.REDISTRIBUTION_DELAY
    auto_create_queues: bool = defaults.AUTO_CREATE_QUEUES
    auto_create_addresses: bool = defaults.AUTO_CREATE_ADDRESSES
    auto_delete_queues: bool = defaults.AUTO_DELETE_QUEUES
    auto_delete_queues_delay: int = defaults.AUTO_DELETE_QUEUES_DELAY
    auto_delete_queues_message_count: int = defaults.AUTO_DELETE_QUEUES_MESSAGE_COUNT
    auto_delete_addresses: bool = defaults.AUTO_DELETE_ADDRESSES
    auto_delete_addresses_delay: int = defaults.AUTO_DELETE_ADDRESSES_DELAY
    default_address_routing_type: str = defaults.DEFAULT_ADDRESS_ROUTING_TYPE
    default_queue_routing_type: str = defaults.DEFAULT_QUEUE_ROUTING_TYPE
    send_to_dla_on_no_route: bool = defaults.SEND_TO_DLA_ON_NO_ROUTE
    id_cache_size: int = defaults.ID_CACHE_SIZE
    max_size_bytes: int = defaults.MAX_SIZE_BYTES
    max_size_messages: int = defaults.MAX_SIZE_MESSAGES
    page_size_bytes: int = defaults.PAGE_SIZE_BYTES
    address_full_policy: str = defaults.ADDRESS_FULL_POLICY
    default_last_value_key: str | None = defaults.DEFAULT_LAST_VALUE_KEY
    default_last_value_queue: bool = defaults.DEFAULT_LAST_VALUE_QUEUE
    default_non_destructive: bool = defaults.DEFAULT_NON_DESTRUCTIVE
    default_exclusive_queue: bool = defaults.DEFAULT_EXCLUSIVE_QUEUE
    default_group_rebalance: bool = defaults.DEFAULT_GROUP_REBALANCE
    default_group_rebalance_pause_dispatch: bool = defaults.DEFAULT_GROUP_REBALANCE_PAUSE_DISPATCH
    default_group_buckets: int = defaults.DEFAULT_GROUP_BUCKETS
    default_group_first_key: str | None = defaults.DEFAULT_GROUP_FIRST_KEY
    slow_consumer_threshold: int = defaults.SLOW_CONSUMER_THRESHOLD
    slow_consumer_policy: str = defaults.SLOW_CONSUMER_POLICY
    slow_consumer_check_period: int = defaults.SLOW_CONSUMER_CHECK_PERIOD
    matched: tuple[str, ...] = ()


_SETTING_FIELDS = tuple(f.name for f in dataclasses.fields(ResolvedAddressSettings) if f.name != "matched")
# Empty string = explicitly "no address" (see the module docstring).
_EMPTY_MEANS_NONE = frozenset({"dead_letter_address", "expiry_address", "default_last_value_key",
                               "default_group_first_key"})


class AddressSettingsResolver:
    """Answers "which settings apply to this address" for one node's config.

    Immutable: build a new resolver when the configuration changes. Results are
    cached per address (LRU, ``cache_size`` entries) because the router asks on
    every routing decision.
    """

    def __init__(
        self,
        address_settings: Mapping[str, AddressSettings] | None = None,
        *,
        id_cache_size: int = defaults.ID_CACHE_SIZE,
        cache_size: int = 10_000,
    ) -> None:
        settings = dict(address_settings or {})
        for pattern in settings:
            problem = match_syntax_problem(pattern)
            if problem is not None:
                raise ValueError(f"address-settings {pattern!r}: {problem}")
        self._exact = {p: s for p, s in settings.items() if not has_wildcards(p)}
        self._wildcards = [(p, compile_match(p), settings[p]) for p in most_specific_first(settings) if has_wildcards(p)]
        self._id_cache_size = id_cache_size
        self._policies = frozenset(s.address_full_policy for s in settings.values() if s.address_full_policy)
        self.checks_slow_consumers = any(
            s.slow_consumer_threshold is not None and s.slow_consumer_threshold >= 0 for s in settings.values())
        # The shortest check period any match can have (the default counts), for the reaper's tick.
        self.slow_consumer_tick = min(
            [s.slow_consumer_check_period for s in settings.values() if s.slow_consumer_check_period]
            + [defaults.SLOW_CONSUMER_CHECK_PERIOD])
        # `resolve(address)`: the settings for one address. The cached function
        # itself, not a method around it: the router calls it for every message.
        self.resolve: Callable[[str], ResolvedAddressSettings] = functools.lru_cache(maxsize=cache_size)(self._resolve)

    @classmethod
    def from_config(cls, config: BrokerConfig, *, cache_size: int = 10_000) -> AddressSettingsResolver:
        return cls(config.address_settings, id_cache_size=config.id_cache_size, cache_size=cache_size)

    def uses_policy(self, policy: str) -> bool:
        """Whether any address can have this address-full-policy (the default counts)."""
        return policy in self._policies or policy == defaults.ADDRESS_FULL_POLICY

    def matching(self, address: str) -> tuple[str, ...]:
        """The keys that match ``address``, most specific first."""
        return self.resolve(address).matched

    def explain(self, address: str) -> list[tuple[str, Any, str]]:
        """Each setting in force for ``address`` as (field name, value, the
        match it came from — "" for the default): what an operator asks when a
        setting is not what they expected (the gateway's effective settings)."""
        resolved = self.resolve(address)
        chain = self._chain(address)
        explained = []
        for name in _SETTING_FIELDS:
            source = next((p for p, entry in chain if getattr(entry, name) is not None), "")
            explained.append((name, getattr(resolved, name), source))
        return explained

    def _chain(self, address: str) -> list[tuple[str, AddressSettings]]:
        """The (match, settings) that apply to ``address``, most specific first."""
        chain: list[tuple[str, AddressSettings]] = []
        if address in self._exact:
            chain.append((address, self._exact[address]))
        subject = DELIMITER + address
        chain.extend((p, s) for p, regex, s in self._wildcards if regex.fullmatch(subject))
        return chain

    def _resolve(self, address: str) -> ResolvedAddressSettings:
        chain = self._chain(address)
        values: dict[str, Any] = {"id_cache_size": self._id_cache_size}
        for name in _SETTING_FIELDS:
            for _, entry in chain:
                value = getattr(entry, name)
                if value is not None:
                    values[name] = None if (name in _EMPTY_MEANS_NONE and value == "") else value
                    break
        return ResolvedAddressSettings(**values, matched=tuple(p for p, _ in chain))
