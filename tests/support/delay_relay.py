"""A TCP relay that delays what it carries, for the flaky-link partition test, since tc's netem may be missing.

Run inside an application namespace as `python -m tests.support.delay_relay LISTEN_PORT HOST PORT DELAY FLAG`: it
listens on 127.0.0.1:LISTEN_PORT (the namespace's own loopback), forwards each connection to HOST:PORT, and while
the file FLAG exists holds every chunk DELAY seconds in each direction before passing it on, keeping its order.

Its connection to HOST has the TCP options the application's own connections have (partition_worker.PG_OPTIONS):
a link that loses what it carries then breaks the relayed connection as it would break a direct one, instead of the
relay keeping the application's side alive (answered at once on the loopback) over a server side that is gone.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time

# What the application's connections set (keepalives 1 s idle, 1 s apart, 2 probes; unacknowledged data 3 s at most).
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT, USER_TIMEOUT_MS = 1, 1, 2, 3000


def like_the_application(sock: socket.socket) -> None:
    """The TCP options of the application's own connections, on the relay's connection to the server."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE_IDLE)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_COUNT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, USER_TIMEOUT_MS)


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
        like_the_application(server_writer.get_extra_info("socket"))
        await asyncio.gather(
            pipe(client_reader, server_writer, delay, flag),
            pipe(server_reader, client_writer, delay, flag),
            return_exceptions=True,
        )
        client_writer.close()  # either side gone: the application sees its connection end, as without a relay
        server_writer.close()

    server = await asyncio.start_server(relay, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]))
