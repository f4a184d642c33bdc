"""Cluster connections: routers forwarding to each other over links.

One engine serves every kind of link (cluster connections now; network
connectors and the tree connector later, with their own propagation policy):

* `address_match` — which addresses a cluster connection balances.
* `bindings` — the queues other nodes offered over links (remote bindings),
  grouped per address and queue name, as routing reads them.
* `balancing` — which member of a queue group gets a message (the four
  message-load-balancing modes), a pure function.
* `bridge` — the source end of a link: consumes a local store-and-forward
  queue as a delivery target and sends batches with a confirmation window.
* `link_service` — the target end: offers bindings, takes forwarded batches,
  confirms each once it is committed, drops repeats by duplicate id.
* `manager` — one node's cluster connections: which links exist, to whom.
"""
