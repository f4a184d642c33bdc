"""Queue attributes (last-value, non-destructive, exclusive): config keys,
address-settings defaults, and how a queue's attributes are resolved."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from meshmq.config.address_settings import AddressSettingsResolver, ResolvedAddressSettings
from meshmq.config.loader import ConfigError, load_config
from meshmq.errors import BrokerError, Reason
from meshmq.v1 import messages_pb2 as mpb
from services.router.message import Ref, ServerMessage
from services.router.queue import Queue, QueueAttributes
from services.router.queue_kinds import LVQ_NAME, PRUNE_SLACK, install, resolve


def load(tmp_path: Path, text: str):
    path = tmp_path / "node.yaml"
    path.write_text(textwrap.dedent(text))
    return load_config(path)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    return str(info.value)


def test_queue_attributes_in_the_addresses_section(tmp_path: Path) -> None:
    cfg = load(tmp_path, """
        addresses:
          prices:
            multicast:
              - {name: latest, last-value-key: symbol, non-destructive: true}
              - {name: legacy, last-value: true}
          jobs:
            anycast:
              - {name: jobs, exclusive: true}
              - {name: plain}
        """)
    latest, legacy = cfg.addresses["prices"].multicast
    assert (latest.last_value_key, latest.non_destructive, latest.exclusive) == ("symbol", True, None)
    assert legacy.last_value and legacy.last_value_key is None
    jobs, plain = cfg.addresses["jobs"].anycast
    assert jobs.exclusive and (plain.last_value_key, plain.last_value, plain.non_destructive, plain.exclusive) == (
        None, None, None, None)


def test_wrong_values_name_the_key_and_line(tmp_path: Path) -> None:
    text = error_of(tmp_path, """
        addresses:
          jobs:
            anycast:
              - {name: jobs, exclusive: maybe}
        """)
    assert "addresses.jobs.anycast[0].exclusive" in text and "boolean" in text
    text = error_of(tmp_path, """
        addresses:
          prices:
            anycast:
              - {name: p, last-value: true, last-value-key: symbol}
        """)
    assert "last-value: true means last-value-key _AMQ_LVQ_NAME, not 'symbol'" in text
    assert "last-value-key" in error_of(tmp_path, """
        addresses:
          prices:
            anycast:
              - {name: p, last-value-key: ""}
        """)
    assert "default-non-destructive" in error_of(tmp_path, """
        address-settings:
          "#": {default-non-destructive: often}
        """)


def test_address_settings_defaults_merge_most_specific_first(tmp_path: Path) -> None:
    cfg = load(tmp_path, """
        address-settings:
          "#": {default-last-value-key: symbol, default-exclusive-queue: true}
          "plain.#": {default-last-value-key: "", default-exclusive-queue: false}
          "legacy.#": {default-last-value-queue: true}
          "cache.#": {default-non-destructive: true}
        """)
    r = AddressSettingsResolver.from_config(cfg).resolve
    assert resolve(r("a")) == QueueAttributes("symbol", False, True)
    assert resolve(r("plain.x")) == QueueAttributes()
    assert resolve(r("legacy.x")) == QueueAttributes("symbol", False, True)  # the key set at "#" wins
    assert resolve(r("cache.x")) == QueueAttributes("symbol", True, True)


def test_defaults_are_ordinary_queues() -> None:
    settings = ResolvedAddressSettings()
    assert resolve(settings) == QueueAttributes() and resolve(settings).ordinary
    assert resolve(ResolvedAddressSettings(default_last_value_queue=True)).last_value_key == LVQ_NAME


def test_given_attributes_override_the_defaults_and_bad_ones_are_refused() -> None:
    defaults = ResolvedAddressSettings(default_last_value_key="symbol", default_non_destructive=True,
                                       default_exclusive_queue=True)
    assert resolve(defaults, None, False, False, False) == QueueAttributes()
    assert resolve(defaults, "k") == QueueAttributes("k", True, True)
    assert resolve(defaults, None, True) == QueueAttributes(LVQ_NAME, True, True)
    assert resolve(defaults, LVQ_NAME, True).last_value_key == LVQ_NAME
    for key, legacy, words in (("", None, "last-value-key is empty"), ("a\nb", None, "control characters"),
                               ("k", True, "last-value: true means last-value-key _AMQ_LVQ_NAME")):
        with pytest.raises(BrokerError) as info:
            resolve(defaults, key, legacy)
        assert info.value.reason == Reason.INVALID_REQUEST and words in str(info.value)


# --- the behaviours on a queue (services/router/queue_kinds.py) ---------------


class Reader:
    """A consumer as a queue sees it, recording what it is given."""

    def __init__(self, credit: int = -1) -> None:
        self.selector = None
        self.priority = 0
        self.closed = False
        self.delivering: dict = {}
        self.cursor = 0
        self.credit = credit
        self.got: list[Ref] = []

    @property
    def ready(self) -> bool:
        return self.credit != 0

    def deliver(self, ref: Ref) -> None:
        self.got.append(ref)
        ref.delivery_count += 1
        if self.credit > 0:
            self.credit -= 1

    def bodies(self) -> list[bytes]:
        return [r.msg.proto.body for r in self.got]


def kind_queue(attributes: QueueAttributes) -> tuple[Queue, list[Ref]]:
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    replaced: list[Ref] = []
    q.replaced = replaced.append
    install(q, attributes)
    return q, replaced


def send(q: Queue, body: str, key: str | None = None) -> Ref:
    m = mpb.Message(address="q", body=body.encode(), priority=4)
    if key is not None:
        m.properties["k"].string_value = key
    ref = Ref(ServerMessage.of(m, 10), q)
    q.add(ref)
    return ref


def never_expires(ref):  # pragma: no cover
    raise AssertionError("nothing expires here")


def test_a_last_value_replaces_the_waiting_one_of_its_key_only():
    q, replaced = kind_queue(QueueAttributes(last_value_key="k"))
    a1, b1 = send(q, "a1", "a"), send(q, "b1", "b")
    send(q, "plain")
    send(q, "a2", "a")
    assert replaced == [a1] and q.waiting == 3
    assert [r.msg.proto.body for r in q.iter_waiting()] == [b"b1", b"plain", b"a2"]
    assert b1 not in replaced


def test_a_last_value_queue_forgets_keys_that_never_come_back():
    q, _ = kind_queue(QueueAttributes(last_value_key="k"))
    reader = Reader()
    q.add_consumer(reader)
    for i in range(5 * PRUNE_SLACK):
        send(q, str(i), f"key{i}")
        q.dispatch(never_expires)
    assert len(q.last_values) <= PRUNE_SLACK + 1 and q.waiting == 0


def test_non_destructive_readers_each_read_all_from_the_head_as_copies():
    q, _ = kind_queue(QueueAttributes(non_destructive=True))
    first = Reader()
    q.add_consumer(first)
    stored = [send(q, f"m{i}") for i in range(3)]
    q.dispatch(never_expires)
    late = Reader(credit=2)
    q.add_consumer(late)
    q.dispatch(never_expires)
    assert first.bodies() == [b"m0", b"m1", b"m2"] and late.bodies() == [b"m0", b"m1"]
    assert all(copy not in stored and copy.delivery_count == 1 for copy in first.got + late.got)
    assert [r.delivery_count for r in stored] == [0, 0, 0] and q.waiting == 3 and q.delivering == 0
    late.credit = -1
    send(q, "m3")
    q.dispatch(never_expires)
    assert first.bodies()[3:] == [b"m3"] and late.bodies()[2:] == [b"m2", b"m3"]


def test_exclusive_the_first_attached_takes_everything_until_it_leaves():
    q, _ = kind_queue(QueueAttributes(exclusive=True))
    first, second = Reader(), Reader()
    second.priority = 9  # priority does not make a consumer the exclusive one
    q.add_consumer(first)
    q.add_consumer(second)
    send(q, "m0")
    send(q, "m1")
    q.dispatch(never_expires)
    assert (first.bodies(), second.bodies()) == ([b"m0", b"m1"], [])
    first.credit = 0
    send(q, "m2")
    q.dispatch(never_expires)
    assert second.bodies() == [] and q.waiting == 1  # it waits for the exclusive consumer
    q.consumers.remove(first)
    q.dispatch(never_expires)
    assert second.bodies() == [b"m2"]


def test_an_ordinary_queue_keeps_the_class_methods():
    q, _ = kind_queue(QueueAttributes())
    assert "add" not in vars(q) and "dispatch" not in vars(q) and "pick" not in vars(q)
