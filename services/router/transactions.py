"""Local transactions: sends and acks held until commit, undone on rollback.

A transacted session's sends are accepted (validated, stamped, duplicate id
claimed) as they arrive but routed only at commit; its acks take effect only
at commit. Commit routes every send, stages them with the acks in one journal
batch and waits for it: either all of it is stored and becomes visible, or
none of it is and the caller gets TRANSACTION_ROLLED_BACK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from meshmq.errors import BrokerError, Reason

from .access import Access
from .broker import Broker, StagedSend
from .duplicates import DuplicateClaim
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
        try:
            routed = [(msg, claim, broker.route(msg, access=access)) for msg, claim in self.sends]
        except BrokerError as exc:
            self.rollback(broker)
            raise BrokerError(Reason.TRANSACTION_ROLLED_BACK, f"transaction rolled back: {exc.message}") from None
        staged = StagedSend()
        for i, (msg, claim, queues) in enumerate(routed):
            broker.stage_send(staged, i, msg, queues, claim)
        for ref in self.acks:
            broker.acknowledge(ref)
        resp = await broker.stored()
        broker.settle(staged, resp)  # enqueued, or claims given back and the references dropped
        if not resp.ok:
            raise BrokerError(Reason.TRANSACTION_ROLLED_BACK, f"transaction not stored: {resp.reason} {resp.message}")

    def rollback(self, broker: Broker, returned: list[Ref] = ()) -> None:
        """Discard the sends; the acknowledged messages, and `returned` (the
        session's other unacknowledged deliveries), are redelivered in order."""
        broker.duplicates.release(self.claims, delete_rows=False)
        for msg, _ in self.sends:
            if msg.large:
                broker.drop_large_body(msg)
        broker.cancel_in_order([*self.acks, *returned])
