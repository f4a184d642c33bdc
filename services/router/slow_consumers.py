"""Slow consumers (Artemis's slow-consumer-threshold, -policy, -check-period).

Every `slow-consumer-check-period` seconds each client consumer of a queue
whose address settings set `slow-consumer-threshold` (messages per second,
-1 = no check) is measured: the messages it acknowledged since the last
measure, over the time since. Below the threshold it is slow — but only if
its queue had messages for it at the measure (waiting in the queue, or
handed to it unacknowledged): a consumer with nothing to consume is idle,
not slow. A consumer is measured first one whole period after it is seen.

`slow-consumer-policy` KILL closes the consumer and tells its session why
(SLOW_CONSUMER, `SlowConsumerError` in the SDK; its unacknowledged messages
go back to the queue). Artemis KILL closes the client's whole connection;
here the consumer alone is closed: the session's producers and other
consumers did nothing wrong. NOTIFY logs a warning naming the queue, the
session and the rate, and counts it (`meshmq_queue_slow_consumers_total`).

The acknowledgements are the count the session keeps anyway
(`ServerConsumer.messages_acknowledged`): the delivery path pays nothing for
this check, and nothing runs at all when no address settings set a threshold.
Cluster bridges and network links are consumers too but are never measured:
their pace is the other node's.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from meshmq.errors import BrokerError, Reason

from .consumer import ServerConsumer

if TYPE_CHECKING:
    from .broker import Broker

log = logging.getLogger("meshmq.router.slow_consumers")

KILL, NOTIFY = "KILL", "NOTIFY"


def is_slow(acknowledged: int, elapsed: float, threshold: int, had_messages: bool) -> bool:
    """Whether a consumer that acknowledged `acknowledged` messages in `elapsed`
    seconds is below `threshold` messages/s (-1: never) while its queue had
    messages for it."""
    if threshold < 0 or elapsed <= 0 or not had_messages:
        return False
    return acknowledged / elapsed < threshold


@runtime_checkable
class ClientTarget(Protocol):
    """A client session (session.py), the only kind of consumer owner measured."""

    def close_slow_consumer(self, consumer: ServerConsumer, err: BrokerError) -> None: ...


@dataclass(slots=True)
class _Mark:
    acknowledged: int
    at: float


class SlowConsumerReaper:
    def __init__(self, broker: Broker, tick: float) -> None:
        self._broker = broker
        self._tick = tick
        self._marks: dict[int, _Mark] = {}  # by id(consumer): rebuilt each check from the live ones

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._tick)
            self.check(loop.time())

    def check(self, now: float) -> None:
        seen: dict[int, _Mark] = {}
        for q in list(self._broker.queues.values()):
            settings = self._broker.settings(q.address)
            if settings.slow_consumer_threshold < 0 or not q.consumers:
                continue
            for c in list(q.consumers):
                if not isinstance(c.target, ClientTarget):
                    continue
                mark = self._marks.get(id(c))
                if mark is None or now - mark.at < settings.slow_consumer_check_period - 0.01:
                    seen[id(c)] = mark or _Mark(c.messages_acknowledged, now)
                    continue
                acked, elapsed = c.messages_acknowledged - mark.acknowledged, now - mark.at
                seen[id(c)] = _Mark(c.messages_acknowledged, now)
                if is_slow(acked, elapsed, settings.slow_consumer_threshold, bool(q.waiting or c.delivering)):
                    self._act(q, c, acked / elapsed, settings.slow_consumer_threshold, settings.slow_consumer_policy)
        self._marks = seen

    def _act(self, q, c: ServerConsumer, rate: float, threshold: int, policy: str) -> None:
        why = (f"consumer {c.id} on queue {q.name!r} acknowledged {rate:.2f} messages/s, below the "
               f"slow-consumer-threshold of {threshold} messages/s")
        q.slow_consumers += 1
        if policy == KILL:
            log.warning("closing slow consumer: %s (session %s)", why, c.target.id)
            c.target.close_slow_consumer(c, BrokerError(Reason.SLOW_CONSUMER, f"{why}: closed (slow-consumer-policy KILL)"))
        else:
            log.warning("slow consumer: %s (session %s, slow-consumer-policy NOTIFY)", why, c.target.id)
