"""Frame-size limits, shared by servers and clients so both sides agree."""

# Largest gRPC message a router accepts from a client. Bodies above
# minLargeMessageSize travel in chunks and batches are a fraction of the
# confirmation window, so only a misconfigured or hostile client comes near it;
# it gets RESOURCE_EXHAUSTED on that stream and the node goes on serving.
MAX_CLIENT_FRAME = 16 * 2**20

# Between services (router <-> journal): group-commit batches can be large.
MAX_INTERNAL_FRAME = 256 * 2**20
