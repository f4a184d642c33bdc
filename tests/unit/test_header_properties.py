"""Artemis's header properties (scheduling, groups) given to the SDK as
properties travel as the message's fields: the router never looks into a
message's property map for them on the hot path."""

from __future__ import annotations

import pytest

from meshmq.properties import header_properties


def test_group_and_schedule_properties_become_fields_and_leave_the_rest():
    fields: dict = {}
    rest = header_properties({"_AMQ_GROUP_ID": "g", "JMSXGroupSeq": -1, "_AMQ_SCHED_DELAY": 500, "k": "v"}, fields)
    assert fields == {"group_id": "g", "group_seq": -1, "delivery_delay": 500} and rest == {"k": "v"}


def test_a_field_given_as_an_argument_wins_over_the_property():
    fields = {"group_id": "arg", "delivery_time": 7}
    rest = header_properties({"JMSXGroupID": "prop", "_AMQ_SCHED_DELIVERY": 9}, fields)
    assert fields == {"group_id": "arg", "delivery_time": 7} and rest == {}


@pytest.mark.parametrize("name, value", [("_AMQ_GROUP_ID", 3), ("JMSXGroupSeq", "1"), ("_AMQ_SCHED_DELIVERY", True),
                                         ("_AMQ_SCHED_DELAY", 1.5)])
def test_a_header_property_of_the_wrong_type_is_refused_by_name(name, value):
    with pytest.raises(ValueError, match=name):
        header_properties({name: value}, {})
