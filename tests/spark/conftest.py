"""Shared by the analytics tests, once per test session: the SparkSession
(starting one takes seconds) and the stores of a real two-node SQLite workload.

The session runs local[2] on loopback with the JDBC driver jars from disk
(spark.jdbc.driver_jars); its JVM output goes to a log file.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.fixtures.nodes import Nodes
from tests.spark.small_jobs import SMALL_JOBS_CONF
from tests.spark.workload import NODE_EXTRA, StoreNode, Workload, run_workload, sqlite_url


@pytest.fixture(scope="session")
def spark_session(tmp_path_factory):
    from spark.errors import AnalyticsError
    from spark.session import start_session, stop_session

    log = tmp_path_factory.mktemp("spark") / "spark.log"
    try:
        session = start_session("local[2]", log_path=log, conf=SMALL_JOBS_CONF)
    except AnalyticsError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield session
    stop_session(session)


@pytest.fixture(scope="session")
def sqlite_cluster(tmp_path_factory) -> dict[str, StoreNode]:
    """Two routers on SQLite, run concurrently, then stopped: alpha gets the
    full mix of the workload, beta only orders (all acknowledged). Tests read
    the stores (or copies of them) and never write to them."""
    nodes = Nodes(tmp_path_factory.mktemp("analytics-sqlite"))
    try:
        alpha = nodes.router("alpha", extra=NODE_EXTRA)
        beta = nodes.router("beta", extra=NODE_EXTRA)

        async def both():
            return await asyncio.gather(
                run_workload(alpha, Workload(orders=120, news=10, pending=7, poison=2, expiring=3)),
                run_workload(beta, Workload(orders=40)),
            )

        wa, wb = asyncio.run(both())
    finally:
        nodes.stop_all()
    out = {}
    for node, w in ((alpha, wa), (beta, wb)):
        path = node.workdir / f"{node.name}-data" / "journal.db"
        out[node.name] = StoreNode(node.name, sqlite_url(path), path, w)
    return out
