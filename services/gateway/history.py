"""The rates' history: the routers' counters sampled on a timer, kept for a
while, and turned into msg/s per queue, per node, per link and for the cluster.

What is sampled, every `gateway.history-interval` (5 s) for the last
`gateway.history-length` (an hour): each queue's messages added (in),
delivered (out, redeliveries and a bridge's included) and acknowledged
(acked), and each link's messages forwarded. The sampler runs as a task of
the gateway on its own timer, never on a request, so a page costs nothing
extra and the history has no holes where nobody was looking.

How a rate is made (`interval_counts`, pure, unit-tested):

* a rate is the counter's increase between two samples over the time between
  them; a counter lower than before is a reset (the node restarted, or the
  queue was deleted and made again): what it counts now was counted since the
  reset, as Prometheus's `rate()` takes it — never a negative rate;
* a queue or link a node did not list in the sample before, while that node
  answered then, starts from 0 (it was made in between);
* zero-filled: an interval where the node answered at both ends has a number,
  0 when nothing moved, and a queue that is gone counts 0;
* a gap (None, drawn as a break in the line) where the node did not answer:
  down, not yet known, or refused the sampler's credentials. A down node is
  not a node at 0 msg/s. The first sample after a gap counts from the last
  one where the node answered, as a rate over that whole time, so what moved
  while the gateway could not see it (a restarted node's first messages) is
  still in the totals.

A node's rates are the sums of its queues' rates (so a message routed to two
queues counts twice, as each queue's counters do), the cluster's the sums of
the nodes'.

Credentials: the routers check the caller of every management call. The
sampler calls as `gateway.sampler-user` when it is configured; otherwise with
the credentials of the most recently used console session or API token that
may view (`Sessions.latest_viewer`), or none (routers without security).
Without a sampler user, with security on and nobody logged in, the samples
are gaps and `SamplerStatus.problem` says why.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from meshmq.link_kinds import ACCEPTED
from meshmq.v1 import management_pb2 as mgpb

from .views import Gatherer

log = logging.getLogger("meshmq.gateway.history")

QUEUE_SERIES = ("in", "out", "acked")
LINK_SERIES = ("forwarded",)

# ("queue", node, queue) or ("link", node, link) -> its counters, in the order of QUEUE_SERIES / LINK_SERIES.
Key = tuple[str, str, str]


@dataclass(frozen=True)
class Sample:
    """The counters at one moment: `nodes` answered; a key of a node not in it is unknown then."""

    at: float
    nodes: frozenset[str]
    counters: dict[Key, tuple[int, ...]] = field(default_factory=dict)


def increase(before: int | None, now: int) -> int:
    """How much a counter rose between two samples: a counter that went down was reset
    (it counts from 0 again), and one not there before started from 0."""
    if before is None or now < before:
        return now
    return now - before


def interval_counts(prev: Sample, cur: Sample, key: Key, width: int) -> tuple[int, ...] | None:
    """The increase of each of `key`'s counters from `prev` to `cur`, or None (a gap)
    when its node did not answer at both. A key gone from `cur` counts 0."""
    node = key[1]
    if node not in prev.nodes or node not in cur.nodes:
        return None
    now = cur.counters.get(key)
    if now is None:
        return (0,) * width
    before = prev.counters.get(key)
    return tuple(increase(before[i] if before is not None else None, now[i]) for i in range(width))


@dataclass
class Series:
    """One subject's rates over the window: the point at `times[i]` counted `counts[i]`
    messages at `per_s[i]` msg/s since the sample before it (None: a gap)."""

    names: tuple[str, ...]
    times: list[float]
    counts: list[tuple[int, ...] | None]
    per_s: list[tuple[float, ...] | None]

    def rates(self, index: int) -> list[float | None]:
        return [None if r is None else round(r[index], 3) for r in self.per_s]

    def total(self, index: int) -> int:
        return sum(c[index] for c in self.counts if c is not None)

    def current(self, index: int) -> float | None:
        rates = self.rates(index)
        return rates[-1] if rates else None


def add_series(parts: Iterable[Series], names: tuple[str, ...], times: list[float]) -> Series:
    """The sum of several series over the same samples: a gap where every part is a gap."""
    counts: list[tuple[int, ...] | None] = [None] * len(times)
    per_s: list[tuple[float, ...] | None] = [None] * len(times)
    for part in parts:
        for i, (c, r) in enumerate(zip(part.counts, part.per_s)):
            if c is not None:
                counts[i] = c if counts[i] is None else tuple(a + b for a, b in zip(counts[i], c))
                per_s[i] = r if per_s[i] is None else tuple(a + b for a, b in zip(per_s[i], r))
    return Series(names, times, counts, per_s)


def node_points(samples: list[Sample], node: str, keys: list[Key], width: int) -> Series:
    """The sum of `keys` (all of `node`) at each sample after the first. A point where
    the node answered counts from the last sample where it answered before: right
    after a gap, what moved while it was down is counted then, as a rate over the
    whole gap (a restart there is a reset as anywhere)."""
    times, counts, per_s = [], [], []
    last = samples[0] if samples and node in samples[0].nodes else None
    for cur in samples[1:]:
        times.append(cur.at)
        if node not in cur.nodes or last is None:
            counts.append(None)
            per_s.append(None)
        else:
            total = [0] * width
            for key in keys:
                for i, v in enumerate(interval_counts(last, cur, key, width)):
                    total[i] += v
            span = cur.at - last.at
            counts.append(tuple(total))
            per_s.append(tuple(v / span if span > 0 else 0.0 for v in total))
        if node in cur.nodes:
            last = cur
    return Series((), times, counts, per_s)


class History:
    """The last `length` seconds of samples, one every `interval` seconds."""

    def __init__(self, interval_s: float, length_s: float) -> None:
        self.interval_s = interval_s
        self.length_s = length_s
        self._samples: deque[Sample] = deque(maxlen=int(length_s // interval_s) + 1)

    def add(self, sample: Sample) -> None:
        self._samples.append(sample)

    @property
    def samples(self) -> list[Sample]:
        return list(self._samples)

    def keys(self, kind: str, node: str | None = None) -> list[Key]:
        """Every `kind` key seen in the window (of `node`), sorted."""
        seen = {k for s in self._samples for k in s.counters if k[0] == kind and (node is None or k[1] == node)}
        return sorted(seen)

    def nodes(self) -> list[str]:
        return sorted({n for s in self._samples for n in s.nodes} |
                      {k[1] for s in self._samples for k in s.counters})

    def series(self, key: Key) -> Series:
        """One queue's or link's series."""
        names = QUEUE_SERIES if key[0] == "queue" else LINK_SERIES
        out = node_points(self.samples, key[1], [key], len(names))
        out.names = names
        return out

    def node_series(self, node: str) -> Series:
        """A node's: the sums of its queues' (0 while it answers with none)."""
        out = node_points(self.samples, node, self.keys("queue", node), len(QUEUE_SERIES))
        out.names = QUEUE_SERIES
        return out

    def cluster_series(self, nodes: list[Series] | None = None) -> Series:
        """The cluster's: the sums of the nodes' (`nodes`: their series, when already made)."""
        times = [s.at for s in self.samples[1:]]
        parts = nodes if nodes is not None else [self.node_series(n) for n in self.nodes()]
        return add_series(parts, QUEUE_SERIES, times)


def take_sample(at: float, nodes: Iterable[str], queues: dict[str, list[mgpb.QueueInfo]],
                links: dict[str, list[mgpb.BridgeInfo]]) -> Sample:
    """A Sample from what the routers answered: `nodes` answered; `queues` and `links` by node."""
    counters: dict[Key, tuple[int, ...]] = {}
    for node, qs in queues.items():
        for q in qs:
            counters[("queue", node, q.name)] = (q.messages_added, q.messages_delivered, q.messages_acknowledged)
    for node, bs in links.items():
        for b in bs:
            counters[("link", node, link_name(b))] = (b.forwarded,)
    return Sample(at, frozenset(nodes), counters)


def link_name(b: mgpb.BridgeInfo) -> str:
    """A link as one name: its connection, the node at the other end, and which end `node` is."""
    arrow = "<-" if b.direction == ACCEPTED else "->"
    return f"{b.cluster_connection} {arrow} {b.target_node_name or b.endpoint}"


@dataclass
class SamplerStatus:
    last_sample_at: float = 0.0
    samples: int = 0
    # Why the last sample has gaps ("" = every node answered).
    problem: str = ""


class Sampler:
    """Samples every router on a timer into `history` (started and stopped with the app)."""

    def __init__(self, gather: Gatherer, history: History, credentials: Callable[[], tuple]) -> None:
        self._gather = gather
        self.history = history
        self._credentials = credentials
        self.status = SamplerStatus()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="gateway rates sampler")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _run(self) -> None:
        interval = self.history.interval_s
        next_at = time.monotonic()
        while True:
            try:
                await self.sample_once()
            except Exception:  # a sampler that dies leaves the charts frozen: log and go on
                log.exception("rates sampler: a sample failed")
            next_at += interval
            now = time.monotonic()
            if next_at < now:  # late (a slow router): skip the ticks missed, keep the cadence
                next_at += ((now - next_at) // interval + 1) * interval
            await asyncio.sleep(next_at - now)

    async def sample_once(self) -> Sample:
        at = time.time()
        md = self._credentials()
        views, replies = await self._gather.nodes(md)
        up = [(v.name, r.member) for v, r in zip(views, replies) if v.up]
        directory = self._gather.directory
        q_replies, l_replies = await asyncio.gather(
            directory.ask_all(md, lambda a: a.list_queues(), [m for _, m in up]),
            directory.ask_all(md, lambda a: a.cluster_state(), [m for _, m in up]))
        answered, queues, links, problems = [], {}, {}, []
        for (name, _), qr, lr in zip(up, q_replies, l_replies):
            if qr.ok and lr.ok:
                answered.append(name)
                queues[name] = list(qr.value)
                links[name] = list(lr.value.bridges)
            else:
                problems.append(f"{name}: {qr.error or lr.error}")
        problems += [f"{v.name}: {v.problem}" for v in views if not v.up and v.problem]
        sample = take_sample(at, answered, queues, links)
        self.history.add(sample)
        self.status = SamplerStatus(last_sample_at=at, samples=self.status.samples + 1, problem="; ".join(problems))
        return sample
