"""What a long management operation did with each message, in words: the
CLI prints it and the console shows it the same way (RetryMessages reports a
`MessageOutcome` per message)."""

from __future__ import annotations

from meshmq.v1 import management_pb2 as mgpb

RETURNED = mgpb.MessageOutcome.RETURNED
SENT_TO_ADDRESS = mgpb.MessageOutcome.SENT_TO_ADDRESS
KEPT = mgpb.MessageOutcome.KEPT


def result_name(o: mgpb.MessageOutcome) -> str:
    """returned, sent_to_address or kept."""
    return mgpb.MessageOutcome.Result.Name(o.result).lower()


def describe(o: mgpb.MessageOutcome, source: str) -> str:
    """One message's outcome, e.g. "returned to queue orders" or "kept in DLQ:
    NO_ORIGIN: ..." (`source`: the queue the operation worked on)."""
    if o.result == RETURNED:
        return f"returned to queue {', '.join(o.queues)}"
    if o.result == SENT_TO_ADDRESS:
        text = f"sent to address {o.address}, to queue{'s' if len(o.queues) > 1 else ''} {', '.join(o.queues)}"
        created = ([f"address {o.address}"] if o.address_created else []) + [f"queue {q}" for q in o.queues_created]
        return text + (f" (created: {', '.join(created)})" if created else "")
    return f"kept in {source}: {o.reason}: {o.detail}"


def summary(done: int, total: int, kept: int, verb: str, source: str) -> str:
    """The last line of an operation: how many of how many, and how many stayed."""
    text = f"{verb} {done} of {total} message(s) from {source}"
    if kept:
        text += f"; {kept} kept (see each message's reason)"
    elif done < total:
        text += f"; {total - done} not reached"
    return text
