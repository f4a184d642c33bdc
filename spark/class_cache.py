"""The driver JVM's classes, archived once and mapped by every later local report.

Starting Spark's driver loads some fifteen thousand classes from jars, which
on two cores is most of its 8 s start and half of its first job. HotSpot's
class data sharing (CDS) can write the classes a run loaded to an archive
when the JVM exits (`-XX:ArchiveClassesAtExit`) and map that archive at the
next start (`-XX:SharedArchiveFile`): a local report then starts its JVM in
about 4 s and runs its first job twice as fast (docs/analytics.md, "Small
stores"). The first report on a machine writes the archive (~160 MB) as its
JVM exits, which makes that one report ~20 s longer.

The archive belongs to one Java and one Spark: its file name is a hash of
them, so an upgrade makes a new archive (the old ones are removed once it
exists), and the JVM itself checks that the jars it archived are unchanged,
ignoring the archive (with a warning in spark.log) if they are not. The JDBC
drivers are not part of it (Spark loads `spark.jars` with a loader of its
own, whose classes HotSpot 17 does not archive), so SQLite and PostgreSQL
reports share one archive. An archive is only put in place after its JVM exited cleanly; a run
that dies while writing one leaves a temporary file that a later run removes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "spark-classes-"
_STALE_TEMP_S = 3600.0


def cache_dir() -> Path:
    """MESHMQ_CACHE_DIR, else $XDG_CACHE_HOME/meshmq, else ~/.cache/meshmq."""
    if os.environ.get("MESHMQ_CACHE_DIR"):
        return Path(os.environ["MESHMQ_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "meshmq"


def java_binary() -> Path | None:
    """The java pyspark will start: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


@dataclass(frozen=True)
class ClassCache:
    """One archive: where it is, and whether this run maps it or writes it."""

    path: Path
    creating: bool
    temporary: Path | None = None

    @classmethod
    def for_driver(cls, directory: Path | None = None) -> ClassCache | None:
        """The archive for this Java and Spark; None when no java is found."""
        java = java_binary()
        if java is None:
            return None
        try:
            import pyspark

            spark_version = pyspark.__version__
        except ImportError:
            return None
        stat = java.stat()
        key = hashlib.sha256(
            "\n".join([str(java), str(stat.st_size), str(stat.st_mtime_ns), spark_version]).encode()
        ).hexdigest()[:16]
        directory = directory or cache_dir()
        path = directory / f"{PREFIX}{key}.jsa"
        if path.is_file() and path.stat().st_size > 0:
            return cls(path, creating=False)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None  # an unwritable cache: run without one
        _remove_stale_temporaries(directory)
        return cls(path, creating=True, temporary=directory / f"{path.name}.{os.getpid()}.tmp")

    @property
    def java_option(self) -> str:
        if self.creating:
            return f"-XX:ArchiveClassesAtExit={self.temporary}"
        return f"-XX:SharedArchiveFile={self.path}"

    def finish(self, jvm_exit_code: int | None) -> bool:
        """After the JVM exited: put a written archive in place (True), or drop it."""
        if not self.creating or self.temporary is None:
            return False
        written = self.temporary.is_file() and self.temporary.stat().st_size > 0
        if jvm_exit_code != 0 or not written:
            with contextlib.suppress(OSError):
                self.temporary.unlink()
            return False
        os.replace(self.temporary, self.path)
        for other in self.path.parent.glob(f"{PREFIX}*.jsa"):
            if other != self.path:
                with contextlib.suppress(OSError):
                    other.unlink()
        return True


def with_option(conf: dict[str, str], cache: ClassCache) -> dict[str, str]:
    """`conf` with the archive's option added to the driver's Java options."""
    key = "spark.driver.extraJavaOptions"
    options = " ".join(filter(None, [conf.get(key, ""), cache.java_option]))
    return {**conf, key: options}


def _remove_stale_temporaries(directory: Path) -> None:
    """Archives that a killed run was writing (an hour old: no live run writes that long)."""
    now = time.time()
    for temp in directory.glob(f"{PREFIX}*.tmp"):
        with contextlib.suppress(OSError):
            if now - temp.stat().st_mtime > _STALE_TEMP_S:
                temp.unlink()
