"""Throughput and latency measurement through the real SDK (`meshmq perf`).

Producer figures: messages/s and confirm latency (send_async -> confirm),
sampled on every 10th message. Consumer figures: messages/s and end-to-end
latency from the router's accept timestamp to receipt (millisecond
resolution, same sampling).

Two ways to load the node:

* saturation (no `rate`): the producer sends as fast as its confirmation
  window lets it. This finds the most msg/s; the confirm latency it shows is
  mostly time spent queued behind the window (Little's law: in-flight bytes
  / throughput), so it says more about the window than about the broker.
* fixed rate (`rate` msg/s, open loop): messages are due on a schedule and
  sent when due; a message's latency is counted from when it was *due*, not
  from when the producer got round to it, so a stalled broker shows as
  latency instead of silently slowing the schedule (no coordinated omission).
  This is the latency a user sending at that rate sees.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from meshmq.client import connect


@dataclass
class PerfResult:
    role: str
    messages: int
    seconds: float
    latencies_ms: list[float] = field(default_factory=list, repr=False)

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, p: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        data = sorted(self.latencies_ms)
        k = min(len(data) - 1, max(0, int(round(p / 100 * (len(data) - 1)))))
        return data[k]

    def summary(self) -> dict:
        d = asdict(self)
        d.pop("latencies_ms")
        d.update(
            rate=round(self.rate, 1),
            p50_ms=round(self.percentile(50), 3),
            p99_ms=round(self.percentile(99), 3),
            max_ms=round(max(self.latencies_ms), 3) if self.latencies_ms else None,
        )
        return d


Progress = Callable[[int], None]


# Confirm latency is recorded for one message in SAMPLE_EVERY: a 10% sample
# gives the same percentiles without the harness costing as much as the broker.
SAMPLE_EVERY = 10
# Shortest pause between bursts of a paced producer (1 ms).
RATE_TICK_S = 0.001


async def produce(
    url: str,
    address: str,
    count: int,
    size: int,
    durable: bool,
    progress: Progress | None = None,
    rate: float | None = None,
    idempotent: bool = False,
) -> PerfResult:
    """Send `count` messages; `rate` msg/s paces them (see the module docstring)."""
    body = b"x" * size
    lat: list[float] = []
    failures: list[BaseException] = []
    async with await connect(url) as conn:
        session = await conn.session()
        producer = await session.create_producer(address, idempotent=idempotent)
        clock = time.perf_counter

        def done(f: asyncio.Future, t: float) -> None:
            if f.exception() is not None:
                failures.append(f.exception())
            else:
                lat.append((clock() - t) * 1000)

        start = clock()
        i = 0
        while i < count:
            # Everything due by now goes out at once; then sleep until the next is due.
            due = count if rate is None else min(count, int((clock() - start) * rate) + 1)
            while i < due:
                fut = await producer.send_async(body, durable=durable, routing_type="anycast")
                if i % SAMPLE_EVERY == 0:
                    sent_at = clock() if rate is None else start + i / rate
                    fut.add_done_callback(lambda f, t=sent_at: done(f, t))
                i += 1
                if progress and i % 1000 == 0:
                    progress(1000)
            if i < count:
                # At least a tick between bursts, as a timer-driven sender would;
                # the wait counts in the latency of the messages it delays.
                await asyncio.sleep(max(RATE_TICK_S, start + i / rate - clock()))
        await producer.flush()
        elapsed = clock() - start
    if failures:
        raise failures[0]
    return PerfResult("producer", count, elapsed, lat)


async def consume(url: str, queue: str, count: int, timeout: float = 30.0, progress: Progress | None = None) -> PerfResult:
    lat: list[float] = []
    async with await connect(url) as conn:
        session = await conn.session()
        consumer = await session.create_consumer(queue)
        clock = time.perf_counter
        start = None
        got = 0
        while got < count:
            batch = await consumer.receive_batch(count - got, timeout)
            if not batch:
                break
            if start is None:
                start = clock()
            for msg in batch:
                if got % SAMPLE_EVERY == 0:
                    lat.append(time.time() * 1000 - msg.timestamp)
                msg.ack()
                got += 1
                if progress and got % 1000 == 0:
                    progress(1000)
        elapsed = clock() - (start or clock())
        await consumer.close()
    return PerfResult("consumer", got, elapsed, lat)


async def client(
    url: str,
    address: str,
    count: int,
    size: int,
    durable: bool,
    progress: Progress | None = None,
    rate: float | None = None,
    idempotent: bool = False,
):
    """Producer and consumer at once on one address (the end-to-end figure)."""
    consumer_task = asyncio.create_task(consume(url, address, count))
    await asyncio.sleep(0)
    producer_result = await produce(url, address, count, size, durable, progress, rate, idempotent)
    consumer_result = await consumer_task
    total = PerfResult("end-to-end", consumer_result.messages, max(producer_result.seconds, consumer_result.seconds))
    total.latencies_ms = producer_result.latencies_ms
    return producer_result, consumer_result, total
