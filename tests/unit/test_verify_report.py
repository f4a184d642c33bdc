"""The verify report's decider (meshmq/verify/report.py) over plain ledgers."""

import pytest

from meshmq.verify.report import CONFIRMED, IN_DOUBT, PENDING, REFUSED, Ledger, Receipt, tally



def ledger(sent: dict, receipts: list) -> Ledger:
    return Ledger("r1", sent=sent, receipts=receipts)


def got(key, consumer=0, committed=True, run="r1", label=""):
    return Receipt(consumer, run, key, committed, label)


def test_a_confirmed_message_never_received_is_lost_and_an_in_doubt_one_is_not():
    report = tally(ledger({(0, 0): CONFIRMED, (0, 1): CONFIRMED, (0, 2): IN_DOUBT, (0, 3): PENDING},
                          [got((0, 0))]))
    assert (report.sent, report.confirmed, report.in_doubt, report.received, report.lost) == (4, 2, 2, 1, 1)
    assert report.ids["lost"] == ["r1-p0-1"]
    assert report.ids["in_doubt_not_received"] == ["r1-p0-2", "r1-p0-3"]
    assert not report.passed


def test_an_in_doubt_message_received_is_fine():
    report = tally(ledger({(0, 0): IN_DOUBT}, [got((0, 0))]))
    assert report.passed and report.in_doubt_received == 1 and report.received == 1


def test_two_committed_consumes_are_a_duplicate_a_rolled_back_one_a_redelivery():
    report = tally(ledger({(0, 0): CONFIRMED, (0, 1): CONFIRMED},
                          [got((0, 0), committed=False), got((0, 0)), got((0, 1)), got((0, 1), consumer=1)]))
    assert report.duplicated == 1 and report.ids["duplicated"] == ["r1-p0-1"]
    assert report.redelivered == 1
    assert not report.passed


def test_unexpected_earlier_run_and_refused():
    report = tally(ledger({(0, 0): CONFIRMED, (0, 1): REFUSED},
                          [got((0, 0)), got((0, 1)), got((5, 5)), got(None, run="", label="message n:1"),
                           got((0, 0), run="r0")]))
    assert report.unexpected == 3 and report.ids["unexpected"] == ["r1-p0-1", "r1-p5-5", "message n:1"]
    assert report.earlier_run == 1 and report.refused == 1 and report.received == 1


def test_out_of_order_is_per_consumer_and_producer_and_does_not_fail_the_run():
    receipts = [got((0, 1)), got((0, 0)), got((1, 0)), got((0, 2), consumer=1), got((0, 3)), got((0, 0))]
    report = tally(ledger({(0, s): CONFIRMED for s in range(4)} | {(1, 0): CONFIRMED}, receipts))
    assert report.ids["out_of_order"] == ["r1-p0-0"]
    # (0, 0) came twice, committed twice: a duplicate, counted as such, not as out of order again
    assert report.duplicated == 1 and report.out_of_order == 1


def test_per_producer_rows_add_up():
    report = tally(ledger({(0, 0): CONFIRMED, (1, 0): CONFIRMED, (1, 1): IN_DOUBT}, [got((1, 0))]))
    rows = {p.producer: (p.sent, p.confirmed, p.in_doubt, p.received, p.lost) for p in report.producers}
    assert rows == {0: (1, 1, 0, 0, 1), 1: (2, 1, 1, 1, 0)}
    assert report.to_dict(max_ids=0)["ids"]["lost"] == [] and report.to_dict()["counts"]["lost"] == 1
