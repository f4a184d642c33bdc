"""The discovery service (`meshmq serve discovery`): the gRPC servicer (server.py)
and the discovery group it serves (config.py). What it does — the etcd and
static backends, announcements, the shared watch per cluster — is
`meshmq.discovery`, which nodes and clients use directly too."""
