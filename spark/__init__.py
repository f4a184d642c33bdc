"""meshmq analytics: PySpark jobs over the journal's SQL store.

The store is read through JDBC with drivers that are files on disk
(`spark.jdbc.driver_jars`); the report job (`spark.report.run_report`) turns
the event log and the live tables of one or more nodes into Parquet tables, a
JSON summary, PNG charts and one self-contained HTML page. The `meshmq
analytics report` command (meshmq/cli/analytics.py) runs it. See
docs/analytics.md.
"""

from spark.errors import AnalyticsError

__all__ = ["AnalyticsError"]
