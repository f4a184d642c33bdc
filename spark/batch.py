"""A report's small results in one Spark job, and its Parquet tables written beside the work.

Each Spark action costs a job: planning, scheduling, a stage per shuffle,
a round trip to the JVM. A report needs some twenty small results (totals,
latency rows, the series, the audit's counts), each a few rows to a few
thousand; collected one by one they were most of its time on small and
medium stores. `collect_all` asks for all of them at once: every frame
becomes rows of (name, JSON of the row), the frames are united and
collected by one action, and each row comes back as the dict `Row.asDict`
would give (JSON keeps the column order, longs as ints and doubles exactly:
the JVM writes a double with the digits that read back to the same double).

`TableWriter` writes the small tables as Parquet from rows already
collected — a local relation, no recomputation — on background threads
(Spark runs jobs from several threads at once), so the driver draws the
charts meanwhile.
"""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_NAME, _JSON = "_result", "_json"


def collect_all(frames: dict[str, DataFrame]) -> dict[str, list[dict]]:
    """name -> that frame's rows as dicts (unordered), all from one Spark job."""
    if not frames:
        return {}
    tagged = [
        frame.select(F.lit(name).alias(_NAME),
                     F.to_json(F.struct(*(frame[c] for c in frame.columns)), {"ignoreNullFields": "false"}).alias(_JSON))
        for name, frame in frames.items()
    ]
    out: dict[str, list[dict]] = {name: [] for name in frames}
    for row in reduce(DataFrame.unionAll, tagged).collect():
        out[row[_NAME]].append(json.loads(row[_JSON]))
    return out


class TableWriter:
    """Writes report tables as Parquet under one directory: large ones from
    their frames (cached, since the report reads them again), small ones from
    their collected rows in the background. `finish` waits for every write
    and raises the first failure."""

    def __init__(self, spark, root: Path, threads: int = 2) -> None:
        self.spark = spark
        self.root = root
        self.cached: list[DataFrame] = []
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="parquet")
        self._pending: list[Future] = []

    def write(self, name: str, frame: DataFrame, *, small: bool = True, checkpoint: bool = False) -> DataFrame:
        """Write `frame` now (one file when small) and return it cached for further use.

        `checkpoint`: returned checkpointed instead, its plan cut to a leaf. Spark
        analyses a frame's whole plan at every step built on it, cached or not:
        on the audit's plan that took seconds per figure in a fresh JVM. A
        checkpoint is computed before it returns, so it is written in the
        background (on the core the driver's planning leaves idle)."""
        frame = frame.localCheckpoint() if checkpoint else frame.persist()
        self.cached.append(frame)
        if checkpoint:
            self._pending.append(self._pool.submit(self._write_frame, name, frame, small))
        else:
            self._write_frame(name, frame, small)  # the write fills the cache the caller reads next
        return frame

    def _write_frame(self, name: str, frame: DataFrame, small: bool) -> None:
        (frame.coalesce(1) if small else frame).write.mode("overwrite").parquet(str(self.root / name))

    def write_rows(self, name: str, rows: list[dict], frame: DataFrame) -> list[dict]:
        """Write `rows` (collected from `frame`, whose schema they keep) in the background; returns `rows`."""
        schema = frame.schema
        self._pending.append(self._pool.submit(self._write_local, name, [dict(r) for r in rows], schema))
        return rows

    def _write_local(self, name: str, rows: list[dict], schema) -> None:
        local = self.spark.createDataFrame([tuple(r[f.name] for f in schema.fields) for r in rows], schema,
                                           verifySchema=False)
        local.coalesce(1).write.mode("overwrite").parquet(str(self.root / name))

    def finish(self) -> None:
        try:
            for future in self._pending:
                future.result()
        finally:
            self._pending.clear()
            self._pool.shutdown(wait=True)

    def release(self) -> None:
        for frame in self.cached:
            release(frame)
        self.cached.clear()


def release(frame: DataFrame) -> None:
    """Free what `frame` keeps: its cache, or the blocks of its local
    checkpoint (which `unpersist` leaves to the JVM's garbage collector)."""
    frame.unpersist()
    plan = frame._jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)
