"""`meshmq verify`: did this cluster lose or duplicate a confirmed message?
(docs/verify.md). The workload (workload.py), the faults (faults.py) and the
report (report.py)."""

from .report import Report, render, tally
from .workload import DEFAULT_QUEUE, Verifier, VerifyOptions

__all__ = ["DEFAULT_QUEUE", "Report", "Verifier", "VerifyOptions", "render", "tally"]
