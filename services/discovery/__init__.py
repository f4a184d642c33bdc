"""The discovery service: who is in the cluster (etcd leases, or a static list)."""
