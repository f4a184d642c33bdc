"""How long a message given back unacknowledged waits before it is redelivered.

Artemis's backoff, from the address settings in force for its queue:
redelivery-delay x redelivery-delay-multiplier ^ (delivery count - 1), so
the first redelivery waits redelivery-delay and each further one the
multiplier times longer; then spread at random by up to
redelivery-collision-avoidance-factor of itself either way (messages rolled
back together are not redelivered together); then capped at
max-redelivery-delay (unset: redelivery-delay x 10). The cap comes after the
spread, as Artemis applies it, so a delay at the cap is never above it.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from meshmq.config import defaults
from meshmq.config.address_settings import ResolvedAddressSettings


def redelivery_delay(
    settings: ResolvedAddressSettings, delivery_count: int, rand: Callable[[], float] = random.random
) -> int:
    """Milliseconds to wait before redelivering a message delivered
    `delivery_count` times (0: at once). `rand` draws from [0, 1)."""
    base = settings.redelivery_delay
    if base <= 0:
        return 0
    cap = settings.max_redelivery_delay
    if cap is None:
        cap = base * defaults.MAX_REDELIVERY_DELAY_FACTOR
    try:
        delay = base * settings.redelivery_delay_multiplier ** max(delivery_count - 1, 0)
    except OverflowError:  # a message given back thousands of times: long past the cap
        return cap
    factor = settings.redelivery_collision_avoidance_factor
    if factor > 0:
        delay += delay * factor * (2 * rand() - 1)
    return int(min(delay, cap))
