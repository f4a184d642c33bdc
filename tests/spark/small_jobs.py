"""How the suite runs Spark: its jobs are small."""

from __future__ import annotations

from spark.tuning import SMALL_JOBS_CONF

# The suite's jobs are small whatever the stores hold: always the small-jobs settings
# (spark/tuning.py, which the report command picks by itself only for small stores).
SMALL_JOBS_ARGS = [arg for key, value in SMALL_JOBS_CONF.items() for arg in ("--conf", f"{key}={value}")]
