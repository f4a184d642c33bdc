"""How the suite runs Spark: its jobs are small."""

from __future__ import annotations

# Settings for the suite's small jobs (hundreds of rows, many short queries), where
# the JVM's compiling costs more than it saves: C1 only, no whole-stage code
# generation, one GC thread. On the two-core machine they halve a report's CPU
# (docs/analytics.md, "Small stores"); what a job computes does not change.
SMALL_JOBS_CONF = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
SMALL_JOBS_ARGS = [arg for key, value in SMALL_JOBS_CONF.items() for arg in ("--conf", f"{key}={value}")]
