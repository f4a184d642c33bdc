"""Clustered grouping: which node's queue gets each message group (Artemis's
`grouping-handler`).

A message group spread over a cluster must be consumed on one node, so the
queue group (a queue name across the cluster) that a grouped message goes to
is chosen once per group and then kept, whichever node the later messages
are sent to. One node holds the LOCAL handler, which decides; the others hold
a REMOTE one, which proposes the binding the ordinary cluster balancing would
pick and caches what the LOCAL handler answers (`Cluster.Propose`, answered
only once the decision is stored in the LOCAL node's journal, so decisions
survive its restart). The group id of a decision is the message's group id
and the queue name (``g1.orders``), as in Artemis; its value is the node
whose queue of that name gets the group.

When the node of a decision no longer has the queue (the binding is gone), the
next message of the group proposes again naming the gone node
(`replace_node_id`): the LOCAL handler replaces that decision and tells the
REMOTE handlers to forget it (Artemis's forceRemove, done when the binding is
found gone rather than on the removal notice). With `group-timeout`, the
LOCAL handler's reaper forgets groups unused that long and a REMOTE handler
asks again (which touches the group there) once its answer is that old.

When the LOCAL handler's node is down, a REMOTE node keeps routing the groups
it has answers for; a new group (or one whose answer it must renew) waits up
to `timeout` for a decision, then its send fails with GROUPING_UNAVAILABLE
naming the cause — Artemis's documented behaviour. A LOCAL handler configured
on the node's backup takes over with the store (docs/clustering.md).

`decide` and `expired` are the pure deciders; the handlers hold the state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from meshmq.config.models import GroupingHandler as GroupingHandlerConfig
from meshmq.errors import BrokerError, Reason
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from ..message import ServerMessage
from . import balancing
from .address_match import AddressMatch
from .bindings import RemoteBinding

if TYPE_CHECKING:
    from ..addresses import Address
    from ..queue import Queue

log = logging.getLogger("meshmq.cluster.grouping")

def now_ms() -> int:
    return int(time.time() * 1000)


# ------------------------------------------------------------ pure deciders

def full_group_id(group_id: str, queue: str) -> str:
    """A decision's id: the group id and the queue name, as Artemis keys it."""
    return f"{group_id}.{queue}"


def decide(current: str | None, proposed: str, replace: str = "") -> tuple[str, bool]:
    """The LOCAL handler's answer to a proposal: (the node the group goes
    to, whether that is a new decision to store). A group already decided
    keeps its node, whatever is proposed — unless the proposer found that
    node's binding gone (`replace` names it), when the proposal replaces it."""
    if current is not None and current != replace:
        return current, False
    if current == proposed:
        return current, False
    return proposed, True


def expired(used_at: int, now: int, group_timeout: int) -> bool:
    """A group (or a REMOTE handler's answer) unused for `group_timeout` ms (-1: never)."""
    return group_timeout > 0 and now - used_at > group_timeout


def group_of(proto: mpb.Message) -> str:
    """A message's group id (the SDK sends Artemis's `_AMQ_GROUP_ID` property as the field)."""
    return proto.group_id


# ------------------------------------------------------------ the LOCAL handler

class LocalHandler:
    """The decisions, held here and stored in the node's journal (`store`:
    rows to add and delete); `on_removed` tells the REMOTE handlers which
    decisions were forgotten."""

    def __init__(self, name: str, group_timeout: int,
                 store: Callable[[list[tuple[str, str]], list[str]], None],
                 on_removed: Callable[[list[str]], None] = lambda ids: None) -> None:
        self.name = name
        self.group_timeout = group_timeout
        self.decisions: dict[str, str] = {}
        self.used: dict[str, int] = {}
        self._store = store
        self.on_removed = on_removed

    def restore(self, group_id: str, node_id: str) -> None:
        """A decision read back from the journal at start (used from now)."""
        self.decisions[group_id] = node_id
        self.used[group_id] = now_ms()

    def decided(self, group_id: str) -> str | None:
        node = self.decisions.get(group_id)
        if node is not None:
            self.used[group_id] = now_ms()
        return node

    def propose(self, group_id: str, node_id: str, replace: str = "") -> str:
        current = self.decisions.get(group_id)
        chosen, new = decide(current, node_id, replace)
        self.used[group_id] = now_ms()
        if new:
            self.decisions[group_id] = chosen
            self._store([(group_id, chosen)], [])
            if current is not None:
                log.info("grouping handler %s: group %s moves from node %s (its binding is gone) to node %s",
                         self.name, group_id, current, chosen)
                self.on_removed([group_id])
        return chosen

    def reap(self, now: int) -> list[str]:
        """Forget the groups unused for group-timeout; their ids."""
        gone = [g for g, used in self.used.items() if g in self.decisions and expired(used, now, self.group_timeout)]
        for g in gone:
            del self.decisions[g]
            del self.used[g]
        if gone:
            self._store([], gone)
            self.on_removed(gone)
        return gone


# ------------------------------------------------------------ the REMOTE handler

@dataclass(frozen=True)
class LocalNode:
    """Where the LOCAL handler is, as a link's welcome said."""

    endpoint: str
    node_name: str
    identity: Any  # cluster/link_identity.py's LinkIdentity: opens the channel, proves membership


class RemoteHandler:
    """Answers asked of the LOCAL handler (`ask`), cached: group id -> (node, when asked)."""

    def __init__(self, name: str, address: str, timeout: int, group_timeout: int, own_node: Callable[[], str],
                 find_local: Callable[[], LocalNode | None]) -> None:
        self.name = name
        self.address = address
        self.timeout = timeout
        self.group_timeout = group_timeout
        self.answers: dict[str, tuple[str, int]] = {}
        self.failures: dict[str, str] = {}  # group id -> why its last ask failed (until one succeeds)
        self._own_node = own_node
        self._find_local = find_local
        self._asking: dict[str, asyncio.Future[str | None]] = {}
        self._channels: dict[str, grpc.aio.Channel] = {}

    def decided(self, group_id: str) -> str | None:
        answer = self.answers.get(group_id)
        return answer[0] if answer is not None else None

    def fresh(self, group_id: str, now: int) -> str | None:
        answer = self.answers.get(group_id)
        if answer is None or expired(answer[1], now, self.group_timeout):
            return None
        return answer[0]

    def forget(self, group_ids: Iterable[str]) -> None:
        for g in group_ids:
            self.answers.pop(g, None)

    async def ask(self, group_id: str, node_id: str, replace: str = "") -> str | None:
        """The LOCAL handler's decision for a proposal (None: none within
        `timeout`; `failures` says why). Concurrent asks of one group share one call."""
        pending = self._asking.get(group_id)
        if pending is not None:
            return await asyncio.shield(pending)
        fut: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._asking[group_id] = fut
        try:
            result = await self._ask(group_id, node_id, replace)
            fut.set_result(result)
            return result
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()
            raise
        finally:
            del self._asking[group_id]

    async def _ask(self, group_id: str, node_id: str, replace: str) -> str | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout / 1000
        request = cpb.GroupProposal(address=self.address, group_id=group_id, node_id=node_id,
                                    replace_node_id=replace, proposer_node_id=self._own_node())
        problem = "no linked node has said it holds the LOCAL grouping handler"
        where = ""
        while (left := deadline - loop.time()) > 0:
            target = self._find_local()
            if target is None:
                await asyncio.sleep(min(left, 0.05))
                continue
            where = f" at {target.node_name or '?'} ({target.endpoint})"
            channel = self._channels.get(target.endpoint)
            if channel is None:
                channel = self._channels[target.endpoint] = target.identity.open(target.endpoint)
            try:
                metadata = await target.identity.metadata(channel, target.endpoint, timeout_s=left)
                reply = await cgrpc.ClusterStub(channel).Propose(request, metadata=metadata,
                                                                 timeout=max(deadline - loop.time(), 0.001))
            except grpc.aio.AioRpcError as exc:
                problem = f"{exc.code().name}: {exc.details()}"
                if exc.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
                                  grpc.StatusCode.INVALID_ARGUMENT):  # (a retry cannot mend a config mismatch)
                    break
                # A channel that failed may sit in backoff: a fresh one connects as soon as the node is back.
                self._channels.pop(target.endpoint, None)
                await channel.close()
                await asyncio.sleep(min(max(deadline - loop.time(), 0), 0.1))
                continue
            self.answers[group_id] = (reply.node_id, now_ms())
            self.failures.pop(group_id, None)
            return reply.node_id
        why = (f"no decision from the LOCAL grouping handler {self.name!r}{where} within its timeout "
               f"({self.timeout} ms): {problem}. The node holding the LOCAL handler is down or unreachable: "
               f"groups already decided still route; new groups cannot until it (or a backup with the same "
               f"LOCAL handler) is back")
        self.failures[group_id] = why
        log.warning("grouping handler %s: group %s: %s", self.name, group_id, why)
        return None

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()


# ------------------------------------------------------------ what routing asks

class Grouping:
    """The node's grouping handler as the send pipeline and the session use it."""

    def __init__(self, config: GroupingHandlerConfig, own_node: Callable[[], str],
                 local: LocalHandler | None = None, remote: RemoteHandler | None = None) -> None:
        self.config = config
        self.name = config.name
        self.address = config.address
        self.matches = AddressMatch(config.address).matches
        self._own_node = own_node
        self.local = local
        self.remote = remote

    @property
    def is_local(self) -> bool:
        return self.local is not None

    def group_for(self, proto: mpb.Message, address: str) -> str:
        """The message's group id when this handler applies to it ("" otherwise)."""
        gid = group_of(proto)
        return gid if gid and self.matches(address) else ""

    # -------------------------------------------------------- at routing (sync)

    def member(self, msg, gid: str, name: str, local: Queue | None, remote: Sequence[Any],
               positions: dict[str, int]) -> Any:
        """The member of queue group `name` that gets `msg` of group `gid`:
        the decided one. The LOCAL handler decides here (its row goes with the
        message's batch); a REMOTE one must have its answer already (`pending`
        and `resolve`, before routing), or the message is refused."""
        group_id = full_group_id(gid, name)
        own = self._own_node()
        if self.local is not None:
            node = self.local.decided(group_id)
            chosen = locate(node, own, local, remote) if node is not None else None
            if chosen is not None:
                return chosen
            candidate = choose(msg, name, local, remote, positions)
            if candidate is None:
                return None
            node = self.local.propose(group_id, node_of(candidate, own), replace=node or "")
            return locate(node, own, local, remote)
        node = self.remote.decided(group_id)
        chosen = locate(node, own, local, remote) if node is not None else None
        if chosen is None:
            why = self.remote.failures.get(group_id) or (
                f"no decision from the LOCAL grouping handler {self.name!r} for it yet")
            raise BrokerError(Reason.GROUPING_UNAVAILABLE, f"message group {gid!r} (queue {name!r}): {why}")
        return chosen

    # -------------------------------------------------------- before routing (REMOTE)

    def pending(self, messages: Iterable[mpb.Message], default_address: str,
                addresses: dict[str, Address]) -> list[tuple[str, str, str, str]]:
        """What a REMOTE handler must ask before these messages can be routed:
        (group id, proposed node, node whose binding is gone or "", what to say
        if it fails), for each group and queue group with no fresh answer whose
        binding is still there. Empty on the LOCAL node, and for messages
        without a group id."""
        if self.remote is None:
            return []
        own = self._own_node()
        now = now_ms()
        asks: dict[str, tuple[str, str, str, str]] = {}
        for m in messages:
            address = m.address or default_address
            gid = self.group_for(m, address)
            if not gid:
                continue
            addr = addresses.get(address)
            if addr is None or not addr.remote:
                continue
            msg = None
            for name, members in addr.remote.items():
                group_id = full_group_id(gid, name)
                if group_id in asks:
                    continue
                q = addr.queues.get(name)
                node = self.remote.fresh(group_id, now)
                if msg is None:
                    msg = ServerMessage.of(m, 0)
                local = q if q is not None and q.accepts(msg) else None
                if node is not None and locate(node, own, local, members) is not None:
                    continue
                cached = self.remote.decided(group_id)
                if cached is not None and locate(cached, own, local, members) is not None:
                    asks[group_id] = (group_id, cached, "", gid)  # renew (touches the group on the LOCAL node)
                    continue
                candidate = choose(msg, name, local, members, addr.cluster_round_robin)
                if candidate is not None:
                    asks[group_id] = (group_id, node_of(candidate, own), cached or "", gid)
        return list(asks.values())

    async def resolve(self, asks: list[tuple[str, str, str, str]]) -> None:
        """Ask the LOCAL handler for each of `pending`'s proposals, one group at a time
        in the order the messages came (a failure is remembered for `member` to report)."""
        for group_id, node, replace, _ in asks:
            await self.remote.ask(group_id, node, replace)


def choose(msg, name: str, local, remote: Sequence[Any], positions: dict[str, int]):
    """The member the ordinary cluster balancing picks: the group's proposal."""
    position = positions.get(name, 0)
    chosen, advanced = balancing.choose(remote[0].link.load_balancing, local, remote, msg, position)
    if advanced:
        positions[name] = position + 1
    return chosen


def node_of(member, own: str) -> str:
    """The node of a queue group's member: a remote binding's, or this one (its own queue)."""
    return member.node_id if isinstance(member, RemoteBinding) else own


def locate(node: str, own: str, local, remote: Sequence[Any]):
    """The member on `node` (None: that binding is gone, or refuses the message here)."""
    if node == own:
        return local
    for m in remote:
        if m.node_id == node:
            return m
    return None


def store_rows(handler: str, batch: Callable[[], jpb.AppendRequest], persistent: bool
               ) -> Callable[[list[tuple[str, str]], list[str]], None]:
    """How a LOCAL handler stores its decisions: rows in the node's next journal batch."""

    def store(added: list[tuple[str, str]], removed: list[str]) -> None:
        if not persistent:
            return
        req = batch()
        for group_id, node in added:
            req.add_group_bindings.add(handler=handler, group_id=group_id, node_id=node)
        for group_id in removed:
            req.delete_group_bindings.add(handler=handler, group_id=group_id)

    return store


async def reaper(handler: LocalHandler, period_ms: int) -> None:
    """The LOCAL handler's reaper: every reaper-period, forget groups unused for group-timeout."""
    if handler.group_timeout <= 0:
        return
    while True:
        await asyncio.sleep(period_ms / 1000)
        gone = handler.reap(now_ms())
        if gone:
            log.info("grouping handler %s: forgot %d groups unused for %d ms", handler.name, len(gone),
                     handler.group_timeout)
