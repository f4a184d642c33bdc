"""What a `meshmq verify` run found: the ledger of what was sent and received,
and the tally over it (a pure decider: plain data in, a Report out).

Every message a verify producer sends carries its run id, producer index and
sequence number as properties, and `<run>-p<producer>-<seq>` as its duplicate
id. What each number of the report means (docs/verify.md):

* sent: messages the producers handed to the SDK.
* confirmed: sends the broker confirmed (durable: stored).
* in doubt: sends that got no confirm (unblocked by a failover, or still
  unanswered at the end): the broker may or may not have stored them. One that
  is never received is not lost; one that is received is fine.
* refused: sends the broker refused (it said it did not store them).
* received: distinct messages of this run that a verify consumer received.
* lost: confirmed, never received.
* duplicated: consumed more than once: a transaction that acknowledged it
  committed (the broker confirmed the consume) twice or more. A message given
  again because the commit of its first delivery failed (a failover rolled it
  back) is a redelivery, which the broker promises; it is counted in
  `redelivered`, not here.
* unexpected: received, but never sent by this run: a message without the
  verify properties, one of this run that no producer sent (or the broker
  refused), on the verify queue.
* earlier run: messages of another verify run (left in a store-and-forward
  queue, say); shown, not a failure of this run.
* out of order: per producer, messages a consumer received after one of a
  later sequence number from the same producer (first deliveries only).
  Informational: a failover or redistribution may reorder (as in Artemis).

The run passes when lost, duplicated and unexpected are all 0.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

# The properties a verify message carries.
RUN_PROPERTY = "verify_run"
PRODUCER_PROPERTY = "verify_producer"
SEQ_PROPERTY = "verify_seq"

# A send's outcome in the ledger.
PENDING, CONFIRMED, IN_DOUBT, REFUSED = "pending", "confirmed", "in-doubt", "refused"

# Ids shown in the table per kind; the JSON report has them all.
TABLE_IDS = 10

Key = tuple[int, int]  # (producer, seq)


def verify_id(run_id: str, producer: int, seq: int) -> str:
    """The message's id in the report, and its duplicate id."""
    return f"{run_id}-p{producer}-{seq}"


@dataclass(frozen=True)
class Receipt:
    """One delivery to a verify consumer. `key` is None for a message without
    verify properties (`label` then names it by node and message id)."""

    consumer: int
    run_id: str
    key: Key | None
    # The transaction that acknowledged it committed (the broker confirmed the consume).
    committed: bool
    label: str = ""


@dataclass(frozen=True)
class FaultEvent:
    at_s: float
    fault: str
    target: str
    action: str
    outcome: str


@dataclass
class Ledger:
    """What one run did, as it happened (workload.py writes it)."""

    run_id: str
    sent: dict[Key, str] = field(default_factory=dict)
    receipts: list[Receipt] = field(default_factory=list)
    faults: list[FaultEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def outstanding(self) -> int:
        """Confirmed messages not received yet (what the drain waits for)."""
        seen = {r.key for r in self.receipts if r.run_id == self.run_id}
        return sum(1 for key, state in self.sent.items() if state == CONFIRMED and key not in seen)


@dataclass
class ProducerRow:
    producer: int
    sent: int = 0
    confirmed: int = 0
    in_doubt: int = 0
    received: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0


@dataclass
class Report:
    run_id: str
    sent: int
    confirmed: int
    in_doubt: int
    in_doubt_received: int
    refused: int
    received: int
    lost: int
    duplicated: int
    redelivered: int
    unexpected: int
    earlier_run: int
    out_of_order: int
    producers: list[ProducerRow]
    ids: dict[str, list[str]]
    faults: list[FaultEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Filled in by the run (workload.py): when, where and for how long.
    info: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.lost == 0 and self.duplicated == 0 and self.unexpected == 0

    COUNTS = ("sent", "confirmed", "in_doubt", "in_doubt_received", "refused", "received", "lost", "duplicated",
              "redelivered", "unexpected", "earlier_run", "out_of_order")

    def to_dict(self, max_ids: int | None = None) -> dict:
        """The report as JSON-ready data; `max_ids` cuts each id list (the totals stay in `counts`)."""
        return {
            "run_id": self.run_id,
            "passed": self.passed,
            **self.info,
            "counts": {name: getattr(self, name) for name in self.COUNTS},
            "producers": [vars(p).copy() for p in self.producers],
            "ids": {kind: ids[:max_ids] if max_ids is not None else list(ids) for kind, ids in self.ids.items()},
            "faults": [vars(f).copy() for f in self.faults],
            "problems": list(self.problems),
        }


def tally(ledger: Ledger) -> Report:
    """The report over a ledger (see the module docstring for each number)."""
    run = ledger.run_id
    sent = ledger.sent
    ours = [r for r in ledger.receipts if r.run_id == run and r.key is not None]
    receipts_of: dict[Key, list[Receipt]] = defaultdict(list)
    for r in ours:
        receipts_of[r.key].append(r)
    unexpected_receipts = [r for r in ledger.receipts
                           if (r.run_id == run or r.key is None) and (r.key not in sent or sent.get(r.key) == REFUSED)]
    earlier = [r for r in ledger.receipts if r.key is not None and r.run_id != run]

    def state(key: Key) -> str:
        return sent.get(key, "")

    received = {k for k in receipts_of if k in sent and state(k) != REFUSED}
    lost = sorted(k for k, s in sent.items() if s == CONFIRMED and k not in receipts_of)
    in_doubt = [k for k, s in sent.items() if s in (IN_DOUBT, PENDING)]
    duplicated = sorted(k for k, rs in receipts_of.items() if k in received and sum(r.committed for r in rs) >= 2)
    redelivered = sum(len(rs) - 1 for k, rs in receipts_of.items() if k in received) - sum(
        sum(r.committed for r in receipts_of[k]) - 1 for k in duplicated)
    out_of_order = _out_of_order(ours, received)

    rows: dict[int, ProducerRow] = {}

    def row(producer: int) -> ProducerRow:
        return rows.setdefault(producer, ProducerRow(producer))

    for (p, _), s in sent.items():
        r = row(p)
        r.sent += 1
        r.confirmed += s == CONFIRMED
        r.in_doubt += s in (IN_DOUBT, PENDING)
    for p, _ in received:
        row(p).received += 1
    for p, _ in lost:
        row(p).lost += 1
    for p, _ in duplicated:
        row(p).duplicated += 1
    for p, _ in out_of_order:
        row(p).out_of_order += 1

    def named(keys) -> list[str]:
        return [verify_id(run, p, s) for p, s in keys]

    return Report(
        run_id=run,
        sent=len(sent),
        confirmed=sum(1 for s in sent.values() if s == CONFIRMED),
        in_doubt=len(in_doubt),
        in_doubt_received=sum(1 for k in in_doubt if k in receipts_of),
        refused=sum(1 for s in sent.values() if s == REFUSED),
        received=len(received),
        lost=len(lost),
        duplicated=len(duplicated),
        redelivered=redelivered,
        unexpected=len(unexpected_receipts),
        earlier_run=len(earlier),
        out_of_order=len(out_of_order),
        producers=[rows[p] for p in sorted(rows)],
        ids={
            "lost": named(lost),
            "duplicated": named(duplicated),
            "unexpected": [r.label or verify_id(r.run_id, *r.key) for r in unexpected_receipts],
            "in_doubt_not_received": named(sorted(k for k in in_doubt if k not in receipts_of)),
            "out_of_order": named(out_of_order),
        },
        faults=list(ledger.faults),
        problems=list(ledger.problems),
    )


def _out_of_order(receipts: list[Receipt], received: set[Key]) -> list[Key]:
    """First deliveries that came to a consumer after a later one of the same producer."""
    seen: set[Key] = set()
    highest: dict[tuple[int, int], int] = {}  # (consumer, producer) -> highest seq received
    found = []
    for r in receipts:
        if r.key in seen or r.key not in received:
            continue
        seen.add(r.key)
        producer, seq = r.key
        top = highest.get((r.consumer, producer), -1)
        if seq < top:
            found.append(r.key)
        else:
            highest[(r.consumer, producer)] = seq
    return sorted(found)


def render(report: Report, console=None) -> None:
    """The report as rich tables (counts, per producer, ids cut to TABLE_IDS per kind)."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    verdict = "[green]PASSED[/]" if report.passed else "[red]FAILED[/]"
    counts = Table(title=f"meshmq verify {report.run_id}: {verdict}", show_header=True)
    counts.add_column("count")
    counts.add_column("value", justify="right")
    counts.add_column("meaning")
    meanings = {
        "sent": "handed to the SDK", "confirmed": "the broker confirmed it stored them",
        "in_doubt": "no confirm (a fault cut it off): maybe stored", "in_doubt_received": "of those, received",
        "refused": "the broker refused them", "received": "distinct messages of this run received",
        "lost": "confirmed, never received", "duplicated": "consumed (committed) twice or more",
        "redelivered": "delivered again after a consume that was not confirmed",
        "unexpected": "received, never sent by this run", "earlier_run": "left over from an earlier run",
        "out_of_order": "after a later one of the same producer",
    }
    failing = {"lost", "duplicated", "unexpected"}
    for name in Report.COUNTS:
        value = getattr(report, name)
        style = "red" if name in failing and value else None
        counts.add_row(name.replace("_", " "), str(value), meanings[name], style=style)
    console.print(counts)
    per = Table(title="per producer")
    for name in ("producer", "sent", "confirmed", "in doubt", "received", "lost", "duplicated", "out of order"):
        per.add_column(name, justify="right")
    for p in report.producers:
        per.add_row(*(str(v) for v in (p.producer, p.sent, p.confirmed, p.in_doubt, p.received, p.lost,
                                      p.duplicated, p.out_of_order)))
    console.print(per)
    if report.faults:
        faults = Table(title="faults")
        for name in ("at (s)", "fault", "target", "action", "outcome"):
            faults.add_column(name)
        for f in report.faults:
            faults.add_row(f"{f.at_s:.1f}", f.fault, f.target, f.action, f.outcome)
        console.print(faults)
    for kind, ids in report.ids.items():
        if ids:
            more = f" … and {len(ids) - TABLE_IDS} more (all in --json / --report)" if len(ids) > TABLE_IDS else ""
            console.print(f"{kind.replace('_', ' ')}: {', '.join(ids[:TABLE_IDS])}{more}")
    for problem in report.problems:
        console.print(f"problem: {problem}", style="yellow")

