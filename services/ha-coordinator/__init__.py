"""The HA coordinator service (live/backup pairing, quorum votes,
activation epochs, failback, scale-down orchestration).

The folder is named after the service, as docs/development.md names it; Python
imports it as `services.ha_coordinator` through the `package-dir` mapping in
pyproject.toml (docs/development.md, "Service folders and import names").
Its service entry is `ha-coordinator` in the `meshmq.services` entry points
(service.py), its gRPC contract proto/meshmq/v1/ha_coordinator.proto.
"""
