from services.router.duplicates import DuplicateIdCache


def test_fifo_eviction_with_positions():
    c = DuplicateIdCache("a", 2)
    p1, ev = c.add("x")
    assert ev == [] and "x" in c
    c.add("y")
    _, ev = c.add("z")
    assert ev == [("x", p1)] and "x" not in c and len(c) == 2


def test_remove_only_the_matching_position():
    c = DuplicateIdCache("a", 5)
    p1, _ = c.add("x")
    c.remove("x", p1 + 100)
    assert "x" in c
    c.remove("x", p1)
    assert "x" not in c


def test_restore_shrinks_to_configured_size_and_reports_evicted():
    c = DuplicateIdCache("a", 2)
    assert c.restore("a", 1) == []
    assert c.restore("b", 2) == []
    assert c.restore("c", 3) == [("a", 1)]
    pos, _ = c.add("d")
    assert pos == 4


def test_an_address_that_goes_takes_its_cache_and_stored_entries_with_it():
    from meshmq.v1 import journal_pb2 as jpb
    from services.router.duplicates import DuplicateDetection

    batch = jpb.AppendRequest()
    dd = DuplicateDetection(lambda address: None, 100, True, lambda: batch)
    for i in range(3):
        dd.persist(dd.claim("temp.reply.1", f"id{i}"))
    dd.persist(dd.claim("orders", "keep"))
    dd.drop("temp.reply.1")
    assert sorted(d.duplicate_id for d in batch.delete_duplicate_ids) == ["id0", "id1", "id2"]
    assert {d.address for d in batch.delete_duplicate_ids} == {"temp.reply.1"}
    assert "id0" not in dd.cache("temp.reply.1") and "keep" in dd.cache("orders")
