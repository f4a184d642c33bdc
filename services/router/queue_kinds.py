"""Last-value, non-destructive and exclusive queues: Artemis's queue attributes
`last-value-key`, `non-destructive` and `exclusive`, as behaviours installed
on one `Queue` (queue.py) when it is built.

Why installed rather than checked per message: an ordinary queue runs `Queue.add`, `dispatch`
and `pick` as they are, with no check of its kind per message; a queue with
an attribute gets its own versions of those methods once, at creation
(`install`). Delivery (delivery.py) asks only `q.non_destructive` on an ack or
a returned delivery.

- **Last value** (`last-value-key`; the legacy `last-value: true` means the
  key `_AMQ_LVQ_NAME`): a message whose key property equals a waiting
  message's replaces it; the older one leaves the queue, its journal rows too
  (`q.replaced`, a REMOVED event). Messages without the property are
  ordinary. A message being delivered is not replaced; if it comes back
  after a newer value of its key arrived, it is the one dropped (Artemis's
  `addHead`).
  Recovery adds the stored messages in arrival order, so only the last per
  key survives a restart.
- **Non-destructive**: consumers read without removing. Each consumer has a
  cursor (the arrival number of the last message it was given) and starts at
  the head; it gets every waiting message after its cursor, in arrival order
  (priority is not honoured: a consumer reads the queue as a log). Each
  delivery is a copy of the queue's reference: its delivery count is the
  consumer's own and is never written to the journal; an ack ends only that
  consumer's delivery and a returned one is dropped (the message never left).
  Messages leave only by expiry, purge, delete, or replacement by a newer
  last value — with `last-value-key` this is the "latest value" cache.
- **Exclusive**: one consumer at a time receives, the first attached; when
  it closes the next in attach order takes over. Consumer priority is not
  used. A message the exclusive consumer's filter refuses waits for it.
"""

from __future__ import annotations

from meshmq.config.address_settings import ResolvedAddressSettings
from meshmq.errors import BrokerError, Reason

from .message import Ref
from .queue import NO_CREDIT, Queue, QueueAttributes, now_ms

# The key of Artemis's legacy `last-value: true` (Message.HDR_LAST_VALUE_NAME).
LVQ_NAME = "_AMQ_LVQ_NAME"


def _check_key(what: str, key: str) -> None:
    if not key:
        raise BrokerError(Reason.INVALID_REQUEST, f"{what} is empty (leave it out for none)")
    if any(ord(ch) < 0x20 or ch == "\x7f" for ch in key):
        raise BrokerError(Reason.INVALID_REQUEST, f"{what} {key!r} contains control characters")


def resolve(
    settings: ResolvedAddressSettings, last_value_key: str | None = None, last_value: bool | None = None,
    non_destructive: bool | None = None, exclusive: bool | None = None, *,
    group_rebalance: bool | None = None, group_rebalance_pause_dispatch: bool | None = None,
    group_buckets: int | None = None, group_first_key: str | None = None,
) -> QueueAttributes:
    """The attributes of a new queue: those given, else the address settings'
    defaults (`default-last-value-key`, `default-last-value-queue`,
    `default-non-destructive`, `default-exclusive-queue`, `default-group-rebalance`,
    `default-group-rebalance-pause-dispatch`, `default-group-buckets`,
    `default-group-first-key`). `last_value` is
    Artemis's legacy flag (key `_AMQ_LVQ_NAME`); given with another key it is
    refused rather than guessed."""
    if group_buckets is not None and group_buckets < -1:
        raise BrokerError(Reason.INVALID_REQUEST,
                          f"group-buckets {group_buckets}: -1 (every group), 0 (no grouping) or a number of buckets")
    if group_first_key is not None:
        _check_key("group-first-key", group_first_key)
    groups = dict(
        group_rebalance=settings.default_group_rebalance if group_rebalance is None else group_rebalance,
        group_rebalance_pause_dispatch=(settings.default_group_rebalance_pause_dispatch
                                        if group_rebalance_pause_dispatch is None else group_rebalance_pause_dispatch),
        group_buckets=settings.default_group_buckets if group_buckets is None else group_buckets,
        group_first_key=settings.default_group_first_key if group_first_key is None else group_first_key,
    )
    if last_value_key is not None:
        _check_key("last-value-key", last_value_key)
        if last_value and last_value_key != LVQ_NAME:
            raise BrokerError(
                Reason.INVALID_REQUEST,
                f"last-value: true means last-value-key {LVQ_NAME}, not {last_value_key!r}: give one of them",
            )
        key: str | None = last_value_key
    elif last_value is not None:
        key = LVQ_NAME if last_value else None
    else:
        key = settings.default_last_value_key or (LVQ_NAME if settings.default_last_value_queue else None)
    return QueueAttributes(
        last_value_key=key,
        non_destructive=settings.default_non_destructive if non_destructive is None else non_destructive,
        exclusive=settings.default_exclusive_queue if exclusive is None else exclusive,
        **groups,
    )


def install(q: Queue, attributes: QueueAttributes) -> None:
    """Give `q` the behaviours its attributes ask for (nothing for an ordinary queue)."""
    q.attributes = attributes
    q.non_destructive = attributes.non_destructive
    if attributes.last_value_key is not None:
        _install_last_value(q, attributes.last_value_key)
    if attributes.non_destructive:
        q.dispatch = lambda expire: _dispatch_non_destructive(q)
    if attributes.exclusive:
        q.add_consumer = lambda consumer: _add_consumer_in_order(q, consumer)
        q.pick = lambda ref: _pick_exclusive(q, ref)


# ---------------------------------------------------------------- last value


# `latest` is pruned to the waiting messages when it outgrows them by this many
# keys: a key that never comes back must not keep its last message in memory.
PRUNE_SLACK = 1024


def _install_last_value(q: Queue, key: str) -> None:
    # The newest reference per key value (by value and type: 1 and True differ);
    # it may still name one being delivered or already gone, until pruned.
    latest: dict[tuple[type, object], Ref] = {}
    plain_add, plain_add_back = q.add, q.add_back

    def value_of(ref: Ref):
        value = ref.msg.lookup(key)
        return None if value is None else (type(value), value)

    def prune() -> None:
        """Keep only the waiting messages' keys (amortized: it runs once per
        PRUNE_SLACK-plus-backlog new keys, and costs the backlog)."""
        latest.clear()
        for ref in q.iter_waiting():
            value = value_of(ref)
            if value is not None:
                held = latest.get(value)
                if held is None or held.seq < ref.seq:
                    latest[value] = ref

    def add(ref: Ref) -> None:
        plain_add(ref)
        value = value_of(ref)
        if value is None:
            return
        old = latest.get(value)
        latest[value] = ref
        if old is not None:
            if q.remove_ref(old):
                q.replaced(old)
        elif len(latest) > 2 * q.waiting + PRUNE_SLACK:
            prune()

    def add_back(ref: Ref) -> None:
        value = value_of(ref)
        if value is not None:
            newer = latest.get(value)
            if newer is not None and newer is not ref and newer.seq > ref.seq:
                q.replaced(ref)  # a newer value arrived while it was out
                return
            latest[value] = ref
        plain_add_back(ref)

    q.add = add
    q.add_back = add_back
    q.last_values = latest  # (a table to print when debugging one)


# ---------------------------------------------------------------- non-destructive


def _dispatch_non_destructive(q: Queue) -> None:
    """Give each consumer with credit the waiting messages after its cursor, in
    arrival order, as copies (module docstring); nothing leaves the queue."""
    if not q.consumers or not q.waiting:
        return None
    now = now_ms()
    for c in q.consumers[:1] if q.attributes.exclusive else q.consumers:
        if not c.ready:
            continue
        for ref in q.waiting_after(c.cursor):
            if not c.ready:
                break
            c.cursor = ref.seq
            exp = ref.msg.expiration
            if exp and exp <= now:
                continue  # the expiry reaper takes it out of the queue
            if c.selector is not None and not c.selector.matches(ref.msg.lookup):
                continue
            copy = Ref(ref.msg, q, ref.delivery_count, False)
            copy.seq = ref.seq
            c.deliver(copy)
    return None


# ---------------------------------------------------------------- exclusive


def _add_consumer_in_order(q: Queue, consumer) -> None:
    """Consumers in attach order: the first is the exclusive one."""
    q.consumers.append(consumer)
    q.unpark()


def _pick_exclusive(q: Queue, ref: Ref):
    c = q.consumers[0]
    if not c.ready:
        return NO_CREDIT
    if c.selector is None or c.selector.matches(ref.msg.lookup):
        return c
    return None  # it waits for the exclusive consumer (or the next one)
