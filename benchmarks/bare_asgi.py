"""The server's own limit, for benchmarks/service_paths.py: an ASGI application that reads the request and answers a
constant JSON body the size of a block's answer, doing nothing else."""

from __future__ import annotations

from typing import Any

BODY = b'{"name": "order", "first": 1, "last": 1, "count": 1, "first_text": "1", "last_text": "1"}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})
