"""A TCP relay that delays what it carries, for the flaky-link partition test, since tc's netem may be missing.

Run inside an application namespace as `python -m tests.support.delay_relay LISTEN_PORT HOST PORT DELAY FLAG`: it
listens on 127.0.0.1:LISTEN_PORT (the namespace's own loopback), forwards each connection to HOST:PORT, and while
the file FLAG exists holds every chunk DELAY seconds in each direction before passing it on, keeping its order.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float, flag: str) -> None:
    """Copy one direction, each chunk held `delay` seconds from its arrival while `flag` exists."""
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    delivering = asyncio.ensure_future(deliver())
    try:
        while True:
            data = await reader.read(65536)
            await queue.put((time.monotonic() + (delay if os.path.exists(flag) else 0.0), data))
            if not data:
                break
    except (ConnectionError, OSError):
        await queue.put((0.0, b""))
    await delivering


async def main(listen: int, host: str, port: int, delay: float, flag: str) -> None:
    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
        except (OSError, TimeoutError):
            client_writer.close()
            return
        await asyncio.gather(
            pipe(client_reader, server_writer, delay, flag),
            pipe(server_reader, client_writer, delay, flag),
            return_exceptions=True,
        )

    server = await asyncio.start_server(relay, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]))
