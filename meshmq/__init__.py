"""meshmq: a clustered message broker built as gRPC services."""

__version__ = "0.1.0"
