"""Django's test client, with each request sent through the ID service's fast path (an ASGI application in front of
the project's), so the in-process tests of the service run against both paths with the same calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from asgiref.sync import async_to_sync
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.http import HttpResponse
from django.test import Client

_application: Any = None


def application() -> Any:
    """The test project's ASGI application behind the fast path, made once."""
    global _application
    if _application is None:
        from django.core.asgi import get_asgi_application

        from django_segment_seq.service.asgi import fast_ids

        _application = fast_ids(get_asgi_application())
    return _application


def forget_application() -> None:
    """Make the application anew at the next request: a test changed the middleware Django's handler loads once."""
    global _application
    _application = None


def wire(value: object) -> bytes:
    """A header's value as a client sends it: Latin-1 where it fits, else UTF-8 (which a server passes on as bytes)."""
    text = str(value)
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def scope_of(environ: dict[str, Any]) -> dict[str, Any]:
    """The ASGI scope a server would make of the request the test client describes as a WSGI environ."""
    headers = []
    for key, value in environ.items():
        if key == "HTTP_COOKIE" and not value:  # the test client's empty Cookie header, which no browser sends
            continue
        if key.startswith("HTTP_"):
            headers.append((key[5:].lower().replace("_", "-").encode("latin-1"), wire(value)))
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            headers.append((key.lower().replace("_", "-").encode("latin-1"), wire(value)))
    raw_path = environ["PATH_INFO"].encode("iso-8859-1")
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": environ["REQUEST_METHOD"].upper(),
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": raw_path.decode("utf-8", "replace"),
        "raw_path": raw_path,
        "root_path": "",
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "client": (environ.get("REMOTE_ADDR", "127.0.0.1"), 50000),
        "server": (environ.get("SERVER_NAME", "testserver"), int(environ.get("SERVER_PORT", 80))),
    }


async def exchange(app: Any, scope: dict[str, Any], body: bytes) -> list[dict[str, Any]]:
    """The messages `app` sends for one request whose body is `body`; the client stays connected meanwhile."""
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # a client that waits for its answer (cancelled when it comes)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


@contextmanager
def connections_kept() -> Iterator[None]:
    """As Django's test client does: the test's connection is not closed between its requests."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


class FastClient(Client):
    """Client.post() and the rest, answered by the fast path (or by Django behind it, for what it passes on)."""

    def request(self, **request: Any) -> HttpResponse:  # type: ignore[override]
        environ = self._base_environ(**request)
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        with connections_kept():
            messages = async_to_sync(exchange)(application(), scope_of(environ), body)
        start = messages[0]
        content = b"".join(message.get("body", b"") for message in messages[1:])
        response = HttpResponse(content, status=start["status"])
        for name, value in start["headers"]:
            if name.lower() == b"set-cookie":
                self.cookies.load(value.decode("latin-1"))
            else:
                response[name.decode("latin-1")] = value.decode("latin-1")
        response.json = lambda: json.loads(content)  # type: ignore[attr-defined]
        return response
