"""A TCP proxy on loopback that delays every byte by a fixed time each way.

Why: on one machine PostgreSQL answers in microseconds, so a journal change
that hides round trips (overlapping commits, pipelining) shows nothing here,
while a shared store in production sits across a network. Put this between
a node and PostgreSQL to measure as if it did:

    .venv/bin/python bench/delay_proxy.py --listen 55432 --target 5432 --delay-ms 0.25 &
    .venv/bin/python bench/throughput.py --count 50000 --modes durable \\
        --journal-url postgresql+psycopg://postgres@127.0.0.1:55432/test

(--delay-ms 0.25 each way is a 0.5 ms round trip, a same-datacenter figure.)
The proxy runs on the same cores as everything else and costs CPU per byte,
so compare trees through the same proxy, never against a direct connection.
"""

from __future__ import annotations

import argparse
import asyncio


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    loop = asyncio.get_running_loop()
    try:
        while data := await reader.read(1 << 16):
            loop.call_later(delay, writer.write, data)  # order kept: equal delays fire in order
    finally:
        loop.call_later(delay, writer.close)


async def _serve(listen: int, target: int, delay: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(_pipe(reader, up_writer, delay), _pipe(up_reader, writer, delay),
                             return_exceptions=True)

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", type=int, required=True, help="port on 127.0.0.1 to accept on")
    ap.add_argument("--target", type=int, required=True, help="port on 127.0.0.1 to forward to")
    ap.add_argument("--delay-ms", type=float, default=0.25, help="added to each direction (default 0.25)")
    args = ap.parse_args()
    asyncio.run(_serve(args.listen, args.target, args.delay_ms / 1000))


if __name__ == "__main__":
    main()
