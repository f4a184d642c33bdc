"""Discovery's timing: the Artemis defaults and how long one request may take.

Kept apart so that the watcher, the announcer, the core and the gRPC client
agree on them without importing each other.
"""

from __future__ import annotations

from meshmq.config import defaults

# Artemis defaults (ms), from the one place defaults live.
BROADCAST_PERIOD_MS = defaults.BROADCAST_PERIOD
REFRESH_TIMEOUT_MS = defaults.REFRESH_TIMEOUT
INITIAL_WAIT_TIMEOUT_MS = defaults.INITIAL_WAIT_TIMEOUT

# How long one request to the discovery service may take (a join waiting for a
# crashed predecessor's lease to lapse takes up to refresh-timeout more).
REQUEST_TIMEOUT_S = 5.0
