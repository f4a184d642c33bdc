"""The archive of the driver JVM's classes (spark/class_cache.py): which file a
run maps or writes, when a written one is put in place, and two real Spark
sessions started as `meshmq analytics report` starts one, the first writing
the archive as its JVM exits and the second mapping it, with the same result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark.class_cache import PREFIX, ClassCache, with_option

REPO = Path(__file__).resolve().parents[2]


def test_a_run_writes_the_archive_when_there_is_none_and_maps_it_when_there_is(tmp_path):
    writing = ClassCache.for_driver(tmp_path)
    assert writing is not None and writing.creating
    assert writing.java_option == f"-XX:ArchiveClassesAtExit={writing.temporary}"
    assert writing.temporary.parent == tmp_path and str(os.getpid()) in writing.temporary.name
    writing.temporary.write_bytes(b"classes")
    assert writing.finish(0) is True
    assert writing.path.read_bytes() == b"classes" and not writing.temporary.exists()

    mapping = ClassCache.for_driver(tmp_path)
    assert mapping == ClassCache(writing.path, creating=False)
    assert mapping.java_option == f"-XX:SharedArchiveFile={writing.path}"
    assert mapping.finish(0) is False  # nothing to put in place


def test_another_java_gets_another_archive_and_the_new_one_replaces_the_old(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = ClassCache.for_driver(cache)
    first.temporary.write_bytes(b"1")
    first.finish(0)
    other_java = tmp_path / "jdk" / "bin" / "java"
    other_java.parent.mkdir(parents=True)
    other_java.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    second = ClassCache.for_driver(cache)
    assert second.creating and second.path != first.path
    assert first.path.exists()  # kept until the new one exists
    second.temporary.write_bytes(b"2")
    second.finish(0)
    assert sorted(p.name for p in cache.iterdir()) == [second.path.name]


@pytest.mark.parametrize(("exit_code", "content"), [(1, b"partial"), (None, b"partial"), (0, b"")])
def test_an_archive_is_dropped_unless_its_jvm_exited_cleanly_having_written_it(tmp_path, exit_code, content):
    cache = ClassCache.for_driver(tmp_path)
    cache.temporary.write_bytes(content)
    assert cache.finish(exit_code) is False
    assert list(tmp_path.iterdir()) == []


def test_a_temporary_file_left_by_a_killed_run_is_removed_by_a_later_one(tmp_path):
    old = tmp_path / f"{PREFIX}0123456789abcdef.jsa.4242.tmp"
    recent = tmp_path / f"{PREFIX}0123456789abcdef.jsa.4343.tmp"
    old.write_bytes(b"x")
    recent.write_bytes(b"x")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    ClassCache.for_driver(tmp_path)
    assert not old.exists() and recent.exists()  # another report may still be writing the recent one


def test_an_unwritable_cache_directory_means_no_archive(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert ClassCache.for_driver(blocked / "cache") is None


def test_the_option_joins_the_java_options_already_chosen(tmp_path):
    cache = ClassCache.for_driver(tmp_path)
    conf = with_option({"spark.driver.extraJavaOptions": "-XX:+UseSerialGC", "k": "v"}, cache)
    assert conf == {"spark.driver.extraJavaOptions": f"-XX:+UseSerialGC {cache.java_option}", "k": "v"}
    assert with_option({}, cache) == {"spark.driver.extraJavaOptions": cache.java_option}


_SESSION = """
import json, sys
from spark.session import class_cache_of, start_session, stop_session
spark = start_session("local[1]", log_path=sys.argv[1], class_cache=True,
                      conf={"spark.driver.extraJavaOptions": "-Xlog:cds=info"})
cache = class_cache_of(spark)
rows = spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
counts = sorted((r["k"], r["count"]) for r in rows)
wrote = stop_session(spark)
print(json.dumps({"creating": cache.creating, "path": str(cache.path), "wrote": wrote, "counts": counts}))
"""


def _session(log: Path, cache_dir: Path) -> dict:
    """A Spark session in a process of its own (this one may hold the tests' session), as the CLI starts one."""
    proc = subprocess.run(
        [sys.executable, "-c", _SESSION, str(log)], capture_output=True, text=True, timeout=300, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1", "MESHMQ_CACHE_DIR": str(cache_dir)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_first_jvm_writes_the_archive_as_it_exits_and_the_next_maps_it(tmp_path):
    cache_dir = tmp_path / "cache"
    first = _session(tmp_path / "first.log", cache_dir)
    assert first["creating"] and first["wrote"]
    archive = Path(first["path"])
    assert archive.parent == cache_dir and archive.stat().st_size > 10_000_000
    assert [p.name for p in cache_dir.iterdir()] == [archive.name]  # no temporary left

    second = _session(tmp_path / "second.log", cache_dir)
    assert second == {**first, "creating": False, "wrote": False}
    log = (tmp_path / "second.log").read_text(errors="replace")
    assert f"trying to map {archive}" in log and "Mapped dynamic region" in log
    assert first["counts"] == [[k, len(range(k, 1000, 7))] for k in range(7)]
