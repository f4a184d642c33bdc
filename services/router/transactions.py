"""Local transactions: sends and acks held until commit, undone on rollback.

A transacted session's sends are admitted (validated, stamped, duplicate id
claimed: SendPipeline.admitter) as they arrive but routed only at commit; its
acks take effect only at commit. Commit routes every send — all of them
before any is staged, so a refusal rolls back with nothing staged — then
stages them with the send pipeline's one stager (`stage_batch`, each along the
route found) and the acks in one journal batch, and waits for it: either all
of it is stored and becomes visible, or none of it is and the caller gets
TRANSACTION_ROLLED_BACK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from meshmq.errors import BrokerError, Reason

from .access import Access
from .broker import Broker
from .duplicates import DuplicateClaim
from .large_body import drop_body
from .message import Ref, ServerMessage


@dataclass
class LocalTransaction:
    # Accepted messages with the duplicate id each claimed, routed at commit.
    sends: list[tuple[ServerMessage, DuplicateClaim | None]] = field(default_factory=list)
    # Delivered references acknowledged inside the transaction.
    acks: list[Ref] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.sends or self.acks)

    @property
    def claims(self) -> list[DuplicateClaim]:
        return [claim for _, claim in self.sends if claim is not None]

    async def commit(self, broker: Broker, access: Access | None = None) -> None:
        """Store the transaction's work and make it visible; TRANSACTION_ROLLED_BACK otherwise.
        `access`: the session's, for what routing auto-creates."""
        grouping = broker.grouping
        if grouping is not None and grouping.remote is not None:  # new message groups: asked before routing
            await grouping.resolve(grouping.pending((msg.proto for msg, _ in self.sends), "", broker.addresses))
        try:
            routed = [(msg, claim, broker.sender.route(msg, access=access)) for msg, claim in self.sends]
        except BrokerError as exc:
            self.rollback(broker)
            raise BrokerError(Reason.TRANSACTION_ROLLED_BACK, f"transaction rolled back: {exc.message}") from None
        staged = broker.sender.stage_batch(routed, lambda item: item[:2], lambda item, msg: item[2])
        for ref in self.acks:
            broker.delivery.acknowledge(ref)
        for q in {ref.queue for ref in self.acks}:
            broker.delivery.settled(q)
        resp = await broker.stored()
        broker.sender.settle(staged, resp)  # enqueued, or claims given back and the references dropped
        if not resp.ok:
            raise BrokerError(Reason.TRANSACTION_ROLLED_BACK, f"transaction not stored: {resp.reason} {resp.message}")

    def rollback(self, broker: Broker, returned: list[Ref] = ()) -> None:
        """Discard the sends; the acknowledged messages, and `returned` (the
        session's other unacknowledged deliveries), are redelivered in order."""
        broker.duplicates.release(self.claims, delete_rows=False)
        for msg, _ in self.sends:
            if msg.large:
                drop_body(broker, msg)
        broker.delivery.cancel_in_order([*self.acks, *returned])
