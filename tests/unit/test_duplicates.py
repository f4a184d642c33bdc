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


def test_each_cache_stays_within_id_cache_max_bytes():
    """Long ids: the byte bound holds before the entry count does; the cache
    forgets its oldest (journal rows too), keeps its newest, and a duplicate
    of a remembered id is still refused."""
    import pytest

    from meshmq.errors import BrokerError
    from meshmq.v1 import journal_pb2 as jpb
    from services.router.duplicates import DuplicateDetection, entry_bytes

    batch = jpb.AppendRequest()
    budget = 50 * entry_bytes("x" * 200)
    dd = DuplicateDetection(lambda address: None, 20_000, True, lambda: batch, max_bytes=budget)
    for a in range(3):
        for i in range(100):
            dd.persist(dd.claim(f"addr{a}", f"{i:03d}" + "x" * 197))
    for a in range(3):
        cache = dd.cache(f"addr{a}")
        assert cache.bytes <= budget and len(cache) == 50 and cache.shortened
        assert cache.bytes == sum(entry_bytes(d) for d, _ in cache.entries())
    with pytest.raises(BrokerError):
        dd.claim("addr2", "099" + "x" * 197)
    dd.claim("addr2", "000" + "x" * 197)  # forgotten: accepted again
    forgotten = {(d.address, d.duplicate_id[:3]) for d in batch.delete_duplicate_ids}
    assert {("addr0", f"{i:03d}") for i in range(50)} <= forgotten
    assert ("addr0", "050") not in forgotten
    tiny = DuplicateDetection(lambda address: None, 100, False, jpb.AppendRequest, max_bytes=10)
    tiny.claim("a", "first")
    tiny.claim("a", "second")
    assert tiny.cache("a").entries()[0][0] == "second"  # over the bound, the newest stays


def test_a_released_claim_gives_its_bytes_back():
    from meshmq.v1 import journal_pb2 as jpb
    from services.router.duplicates import DuplicateDetection

    dd = DuplicateDetection(lambda address: None, 100, False, jpb.AppendRequest, max_bytes=10_000)
    claim = dd.claim("a", "abc")
    assert dd.cache("a").bytes > 0
    dd.release([claim], delete_rows=False)
    assert dd.cache("a").bytes == 0 and "abc" not in dd.cache("a")
