"""What the gateway keeps of `meshmq verify` runs: the report's model (as
meshmq/verify/report.py writes it) and the last RUNS_KEPT runs, in memory (a
restart forgets them, as it forgets sessions). The routes are verify_runs.py."""

from __future__ import annotations

from collections import deque
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

RUNS_KEPT = 20
# Ids per kind a posted report may carry (the command sends at most 1000; the counts have the totals).
MAX_IDS = 1000

Count = Annotated[int, Field(ge=0)]
Ids = Annotated[list[Annotated[str, Field(max_length=300)]], Field(max_length=MAX_IDS)]


class VerifyCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sent: Count
    confirmed: Count
    in_doubt: Count
    in_doubt_received: Count
    refused: Count
    received: Count
    lost: Count
    duplicated: Count
    redelivered: Count
    unexpected: Count
    earlier_run: Count
    out_of_order: Count


class VerifyProducer(BaseModel):
    producer: Count
    sent: Count
    confirmed: Count
    in_doubt: Count
    received: Count
    lost: Count
    duplicated: Count
    out_of_order: Count


class VerifyIds(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lost: Ids = []
    duplicated: Ids = []
    unexpected: Ids = []
    in_doubt_not_received: Ids = []
    out_of_order: Ids = []


class VerifyFault(BaseModel):
    at_s: float
    fault: Annotated[str, Field(max_length=100)]
    target: Annotated[str, Field(max_length=255)]
    action: Annotated[str, Field(max_length=20)]
    outcome: Annotated[str, Field(max_length=2000)]


class VerifyRun(BaseModel):
    """A `meshmq verify` report (meshmq/verify/report.py; docs/verify.md says what each count means)."""

    run_id: Annotated[str, Field(min_length=1, max_length=100)]
    passed: bool
    url: Annotated[str, Field(max_length=4096)] = ""
    queue: Annotated[str, Field(max_length=255)] = ""
    nodes: Annotated[list[Annotated[str, Field(max_length=300)]], Field(max_length=1000)] = []
    producers_count: Count = 0
    consumers_count: Count = 0
    duration_s: Annotated[float, Field(ge=0)] = 0
    started_at: float = 0
    finished_at: float = 0
    elapsed_s: Annotated[float, Field(ge=0)] = 0
    counts: VerifyCounts
    producers: Annotated[list[VerifyProducer], Field(max_length=1000)] = []
    ids: VerifyIds = VerifyIds()
    faults: Annotated[list[VerifyFault], Field(max_length=1000)] = []
    problems: Annotated[list[Annotated[str, Field(max_length=2000)]], Field(max_length=100)] = []
    # Set by the gateway.
    posted_by: str = ""
    posted_at: float = 0


class VerifyRunSummary(BaseModel):
    run_id: str
    passed: bool
    finished_at: float
    posted_by: str
    counts: VerifyCounts


class VerifyRuns:
    """The last RUNS_KEPT runs, newest last."""

    def __init__(self) -> None:
        self._runs: deque[VerifyRun] = deque(maxlen=RUNS_KEPT)

    def add(self, run: VerifyRun) -> None:
        self._runs.append(run)

    def last(self) -> VerifyRun | None:
        return self._runs[-1] if self._runs else None

    def all(self) -> list[VerifyRun]:
        return list(self._runs)
