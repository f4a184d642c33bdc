"""A message an operator sends through management (Management.SendMessage,
Artemis's sendMessage on an address): the console's and REST API's "send a
test message".

It goes the way a client's message goes — `SendPipeline.send` admits it as
the caller (send permission, limits, duplicate id), routes and stages it, and
the answer waits for the journal like a client's confirm — so what an operator
sees a test message do is what an application's message would do. Two
differences, because no session holds it: a new message group asks the LOCAL
grouping handler first and is then sent (the session's order does not apply
to one message), and an address that blocks producers refuses it with
ADDRESS_FULL rather than holding a management call open.
"""

from __future__ import annotations

from meshmq.errors import BrokerError, Reason
from meshmq.v1 import messages_pb2 as mpb

from .access import Access
from .broker import Broker


async def send_message(broker: Broker, message: mpb.Message, user: str, access: Access | None) -> tuple[int, list[str]]:
    """Send `message` as `user`: its id and the queues that stored it, once
    stored; a BrokerError saying why when it is refused."""
    if message.large:
        raise BrokerError(Reason.INVALID_REQUEST, "a management send carries its body whole: large must be false")
    if not message.address:
        raise BrokerError(Reason.INVALID_REQUEST, "SendMessage needs message.address")
    memory = broker.memory
    if memory.blocking and memory.blocked_address([message], "", broker.addresses) is not None:
        cause = memory.disk_reason or "the address is full and its address-full-policy is BLOCK"
        raise BrokerError(Reason.ADDRESS_FULL, f"not sent: {cause}; producers to {message.address!r} are "
                                               "held until there is room")
    grouping = broker.grouping
    if grouping is not None and grouping.remote is not None:
        asks = grouping.pending([message], "", broker.addresses)
        if asks:
            await grouping.resolve(asks)
    staged = broker.sender.send([message], "", user, access)
    resp = await staged.stored if staged.stored is not None else None
    broker.sender.settle(staged, resp)
    if staged.rejections:
        _, reason, detail = staged.rejections[0]
        # A journal's refusal may name a reason of its own: the detail says it.
        raise BrokerError(Reason(reason) if reason in Reason.__members__ else Reason.INTERNAL, detail)
    return message.message_id, [ref.queue.name for ref in staged.refs]
