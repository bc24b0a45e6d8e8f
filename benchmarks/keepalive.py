"""Why a keep-alive client that writes headers and body apart waits ~40 ms a request: Nagle's algorithm on the
client's socket and the server's delayed ACK, measured against uvicorn serving a trivial ASGI app (no Django).

    python benchmarks/keepalive.py [--requests 100]

Prints milliseconds a request for one write, two writes, and two writes with TCP_NODELAY on the client.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.servers import free_port  # noqa: E402 - after the path that makes it importable

BODY = b'{"count": 1}'
HEAD = b"POST /ids/order/next HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n"


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An answer of the service's size, at once."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    body = b'{"name": "order", "first": 1, "last": 1, "count": 1, "first_text": "1", "last_text": "1"}'
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def per_request(port: int, requests: int, *, split: bool, nodelay: bool) -> float:
    """Milliseconds a request on one kept-alive connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        if nodelay:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def one() -> None:
            if split:
                conn.sendall(HEAD)
                conn.sendall(BODY)
            else:
                conn.sendall(HEAD + BODY)
            data = b""
            while not data.endswith(b'"1"}'):
                data += conn.recv(65536)

        for _ in range(5):
            one()
        started = time.perf_counter()
        for _ in range(requests):
            one()
        return (time.perf_counter() - started) / requests * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "benchmarks.keepalive:app",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen(command, cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        for label, split, nodelay in (
            ("one write", False, False),
            ("headers and body apart", True, False),
            ("apart, TCP_NODELAY", True, True),
        ):
            print(f"{label:>24}: {per_request(port, args.requests, split=split, nodelay=nodelay):7.2f} ms a request")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
