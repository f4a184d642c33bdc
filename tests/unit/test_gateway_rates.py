"""The gateway's rate computation (services/gateway/history.py) and its charts
(charts.py): resets, new and deleted queues, gaps, zero-fill, the window."""

from __future__ import annotations

import re

import pytest

from meshmq.config.models import Gateway
from meshmq.v1 import management_pb2 as mgpb
from services.gateway import charts
from services.gateway.history import History, Sample, increase, interval_counts, take_sample

Q = ("queue", "n1", "orders")


def sample(at: float, nodes=("n1",), **queues: tuple[int, int, int]) -> Sample:
    return Sample(at, frozenset(nodes), {("queue", "n1", q): v for q, v in queues.items()})


def test_a_counter_that_rose_counts_its_increase():
    assert increase(10, 25) == 15
    assert increase(25, 25) == 0


def test_a_counter_that_went_down_is_a_reset_not_a_negative_rate():
    # The node restarted: 4 counted since it came back.
    assert increase(100, 4) == 4


def test_a_series_not_there_before_starts_from_zero():
    assert increase(None, 7) == 7
    prev, cur = sample(0), sample(5, orders=(7, 3, 2))
    assert interval_counts(prev, cur, Q, 3) == (7, 3, 2)


def test_a_node_that_did_not_answer_at_either_end_is_a_gap():
    up, down = sample(0, orders=(1, 1, 1)), sample(5, nodes=())
    assert interval_counts(up, down, Q, 3) is None
    assert interval_counts(down, sample(10, orders=(5, 5, 5)), Q, 3) is None


def test_a_deleted_queue_counts_zero():
    assert interval_counts(sample(0, orders=(5, 5, 5)), sample(5), Q, 3) == (0, 0, 0)


def test_rates_are_per_second_over_the_real_time_between_samples():
    h = History(5, 3600)
    h.add(sample(100, orders=(0, 0, 0)))
    h.add(sample(105, orders=(50, 20, 10)))
    h.add(sample(115, orders=(60, 40, 40)))  # a late sample: 10 s
    s = h.series(Q)
    assert s.times == [105, 115]
    assert s.rates(0) == [10.0, 1.0]
    assert s.rates(1) == [4.0, 2.0]
    assert s.rates(2) == [2.0, 3.0]
    assert (s.total(0), s.total(1), s.total(2)) == (60, 40, 40)
    assert s.current(0) == 1.0


def test_zero_filled_while_the_node_answers_gaps_while_it_does_not():
    h = History(5, 3600)
    h.add(sample(0, orders=(0, 0, 0)))
    h.add(sample(5, orders=(0, 0, 0)))       # nothing moved: 0
    h.add(sample(10, nodes=()))              # down: a gap
    h.add(sample(15, orders=(3, 0, 0)))      # back: counted from the sample at 5, over 10 s
    h.add(sample(20, orders=(8, 0, 0)))
    s = h.series(Q)
    assert s.rates(0) == [0.0, None, 0.3, 1.0]
    assert s.total(0) == 8
    node = h.node_series("n1")
    assert node.rates(0) == [0.0, None, 0.3, 1.0]


def test_what_a_restarted_node_counted_before_the_first_sample_after_it_is_kept():
    h = History(5, 3600)
    h.add(sample(0, orders=(40, 40, 25)))
    h.add(sample(5, nodes=()))               # restarting
    h.add(sample(10, orders=(5, 0, 0)))      # its counters begin again: 5 since the restart
    s = h.series(Q)
    assert s.rates(0) == [None, 0.5]
    assert (s.total(0), s.total(1), s.total(2)) == (5, 0, 0)


def test_a_node_with_no_queues_is_at_zero_not_a_gap():
    h = History(5, 3600)
    h.add(sample(0))
    h.add(sample(5))
    assert h.node_series("n1").rates(0) == [0.0]


def test_node_and_cluster_rates_are_the_sums_of_their_queues():
    h = History(5, 3600)
    h.add(Sample(0, frozenset({"n1", "n2"}), {("queue", "n1", "a"): (0, 0, 0), ("queue", "n1", "b"): (0, 0, 0),
                                               ("queue", "n2", "a"): (0, 0, 0)}))
    h.add(Sample(5, frozenset({"n1", "n2"}), {("queue", "n1", "a"): (10, 5, 5), ("queue", "n1", "b"): (20, 0, 0),
                                               ("queue", "n2", "a"): (5, 5, 0)}))
    assert h.node_series("n1").rates(0) == [6.0]
    assert h.node_series("n2").rates(1) == [1.0]
    assert h.cluster_series().rates(0) == [7.0]
    assert h.cluster_series().total(0) == 35


def test_the_window_keeps_history_length_over_interval_samples():
    h = History(5, 60)
    for i in range(100):
        h.add(sample(i * 5, orders=(i, i, i)))
    s = h.series(Q)
    assert len(h.samples) == 13 and len(s.times) == 12
    assert s.times[0] == 5 * 88 and s.times[-1] == 5 * 99
    assert s.total(0) == 12


def test_a_sample_is_taken_from_the_routers_answers():
    q = mgpb.QueueInfo(name="orders", messages_added=9, messages_delivered=7, messages_acknowledged=6)
    b = mgpb.BridgeInfo(cluster_connection="cc", target_node_name="n2", forwarded=4, direction="out")
    s = take_sample(1.0, ["n1"], {"n1": [q]}, {"n1": [b]})
    assert s.counters == {("queue", "n1", "orders"): (9, 7, 6), ("link", "n1", "cc -> n2"): (4,)}


def test_the_history_keys_must_fit():
    with pytest.raises(ValueError, match="history-length .* must be at least history-interval"):
        Gateway.model_validate({"history-interval": 10_000, "history-length": 5_000})
    with pytest.raises(ValueError, match="at most 100000"):
        Gateway.model_validate({"history-interval": 1, "history-length": 1_000_000})
    assert Gateway().history_interval == 5000 and Gateway().history_length == 3_600_000


def test_the_chart_has_axes_units_a_legend_and_breaks_at_gaps():
    h = History(5, 3600)
    for at, v in ((0, (0, 0, 0)), (5, (20, 10, 0)), (15, (40, 10, 0))):
        h.add(sample(at, orders=v))
    h.add(sample(20, nodes=()))
    h.add(sample(25, orders=(10, 0, 0)))
    h.add(sample(30, orders=(35, 5, 0)))
    svg = charts.svg(h.series(Q), "Queue orders")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert ">msg/s</text>" in svg
    assert 'data-max="5"' in svg  # the highest rate is 5 msg/s (25 in 5 s)
    assert "in 5 msg/s" in svg and "out 1 msg/s" in svg and "acked 0 msg/s" in svg
    # in: two runs (before and after the gap)
    assert len(re.findall(r'data-series="in"', svg)) == 2
    assert charts.svg(History(5, 60).series(Q), "empty").count("collecting samples") == 1


@pytest.mark.parametrize("value,top", [(0, 1), (0.3, 0.5), (1, 1), (1.2, 2), (2.2, 2.5), (3, 5), (7, 10),
                                       (120, 200)])
def test_the_rate_axis_ends_at_a_round_number(value, top):
    assert charts.nice_ceiling(value) == pytest.approx(top)
