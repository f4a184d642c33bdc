"""The admin gateway: a REST API (FastAPI) and a web console in front of the
routers, speaking gRPC to their Management service with the logged-in
person's credentials (docs/gateway.md)."""
