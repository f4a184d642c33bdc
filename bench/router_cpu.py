"""The router's own CPU per message, without gRPC, SQL or a client.

Drives one `ServerSession` in this process the way the gRPC servicer does
(session requests as the client encodes them, converted at the edge: create
a producer and a consumer, send batches, acknowledge what is delivered)
against a journal that answers every append at once, and prints
the process CPU time per message. What is left is the router's hot path:
accept, route, stage, enqueue, dispatch, delivery frames, acknowledge. A
change to that path shows here in microseconds, steadier than end-to-end
msg/s on a shared machine (bench/throughput.py measures the whole node).

    .venv/bin/python bench/router_cpu.py [--count 200000] [--batch 100] [--size 1024]
        [--non-durable] [--repeat 5] [--profile]

On a shared VM even CPU time wanders by ±20 %; instructions do not. To
compare two trees exactly, count instructions under callgrind for two
message counts and take the difference (start-up cancels out):

    for n in 2000 12000; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        .venv/bin/python bench/router_cpu.py --count $n --repeat 1 2>&1 | grep Collected; done
    # instructions per message = (second - first) / 10000
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from meshmq.config.address_settings import AddressSettingsResolver  # noqa: E402
from meshmq.config.models import BrokerConfig  # noqa: E402
from meshmq.v1 import broker_pb2 as bpb  # noqa: E402
from meshmq.v1 import journal_pb2 as jpb  # noqa: E402
from meshmq.v1 import messages_pb2 as mpb  # noqa: E402
try:
    from services.router.requests import session_command  # noqa: E402
except ImportError:  # a tree from before the edge conversion took the request itself
    def session_command(req):
        return req
from services.router.broker import Broker  # noqa: E402
from services.router.session import ServerSession  # noqa: E402


class InstantJournal:
    """A journal that stores nothing and commits everything at once (the router's cost alone)."""

    description = "instant journal (bench)"

    async def open(self, req: jpb.OpenRequest) -> jpb.OpenResponse:
        return jpb.OpenResponse(node_id="bench", epoch=0, next_message_id=1)

    async def activate(self, req: jpb.ActivateRequest) -> jpb.ActivateResponse:
        return jpb.ActivateResponse(epoch=req.epoch)

    async def load(self, req: jpb.LoadRequest) -> AsyncIterator[jpb.LoadResponse]:
        return
        yield

    def append(self, req: jpb.AppendRequest) -> asyncio.Future[jpb.AppendResponse]:
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(jpb.AppendResponse(request_id=req.request_id, ok=True))
        return fut

    async def read_large(self, req):
        return []

    async def read_page(self, req: jpb.ReadPageRequest) -> jpb.ReadPageResponse:
        return jpb.ReadPageResponse()

    async def close(self) -> None:
        pass


async def run(count: int, batch: int, size: int, durable: bool) -> float:
    """CPU seconds per message for `count` messages sent and acknowledged."""
    config = BrokerConfig()
    broker = Broker(
        name="bench", journal=InstantJournal(), address_settings=AddressSettingsResolver.from_config(config),
        id_cache_size=config.id_cache_size, persist_id_cache=True,
    )
    await broker.start()
    broker.create_queue("bench", "bench", mpb.ANYCAST)
    session = ServerSession(broker, "s1", "bench", False, "")

    async def handle(**kind) -> None:
        await session.handle(session_command(bpb.SessionRequest(**kind)))

    await handle(create_producer=bpb.CreateProducer(producer_id=1, address="bench"))
    await handle(create_consumer=bpb.CreateConsumer(consumer_id=1, queue="bench", window_size=-1))
    body = b"x" * size
    sent = 0
    batch_id = 0
    started = time.process_time()
    consumer = session.consumers[1]
    while consumer.messages_acknowledged < count:
        n = min(batch, count - sent)
        if n:
            batch_id += 1
            messages = [mpb.Message(body=body, durable=durable) for _ in range(n)]
            await handle(send=bpb.SendBatch(producer_id=1, batch_id=batch_id, messages=messages))
            sent += n
        elif batch_id > count:  # everything sent long ago, and still not all acknowledged
            raise SystemExit(f"only {consumer.messages_acknowledged} of {count} messages were acknowledged")
        else:
            batch_id += 1
        # Let the commit callbacks, the dispatch and the delivery flush run.
        for _ in range(4):
            await asyncio.sleep(0)
        delivered = []
        while not session.out.empty():
            resp = session.out.get_nowait()
            if resp is not None and resp.HasField("deliveries"):
                delivered.extend(d.delivery_id for d in resp.deliveries.deliveries)
        await handle(ack=bpb.AckBatch(consumer_id=1, delivery_ids=delivered))
    elapsed = time.process_time() - started
    await broker.stop()
    return elapsed / count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--non-durable", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="print the top functions of one run (cProfile)")
    args = ap.parse_args()
    durable = not args.non_durable
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        asyncio.run(run(args.count, args.batch, args.size, durable))
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return
    runs = [asyncio.run(run(args.count, args.batch, args.size, durable)) * 1e6 for _ in range(args.repeat)]
    kind = "durable" if durable else "non-durable"
    # The minimum is the run least disturbed by the rest of the machine.
    print(f"{kind}: router CPU min {min(runs):.2f} median {statistics.median(runs):.2f} us/msg ({len(runs)} runs: "
          + ", ".join(f"{r:.2f}" for r in runs) + ")")


if __name__ == "__main__":
    main()
