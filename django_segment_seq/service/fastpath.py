"""The fast path's workings (see asgi.py): which requests it answers, where admission runs, ASGI in and out."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from functools import lru_cache, partial
from io import BytesIO
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.exceptions import SynchronousOnlyOperation
from django.core.handlers.asgi import ASGIRequest, get_script_prefix
from django.core.serializers.json import DjangoJSONEncoder
from django.core.signals import setting_changed
from django.db import connections
from django.http import HttpRequest, QueryDict
from django.urls import resolve

from django_segment_seq.service import tallies, throttle, views
from django_segment_seq.service.admission import Admission, admit
from django_segment_seq.service.authentication import Caller, bearer_token, known
from django_segment_seq.service.exchange import Answer, exchange
from django_segment_seq.service.requests import Target
from django_segment_seq.service.tokens import digest

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The largest body read here; a larger one, or one sent in chunks (of unknown length), goes to Django.
BODY_LIMIT = 64 * 1024
# The usage counts are written this long before admit() would find them due, so it never does on the loop.
USAGE_AHEAD = 0.5
VIEWS = (views.take_numbers, views.atake_numbers)
JSON_HEADERS = (("Content-Type", "application/json"),)
# Requests remembered with their admission (Remembered): bodies up to this long, this many at most.
REMEMBERED_BODY = 256
REMEMBERED_LIMIT = 10_000
DECIDING_HEADERS = frozenset({b"authorization", b"content-type"})
# The query of a request without one (immutable, so every such request may share it): parsed once, not per request.
NO_QUERY = QueryDict()
ENCODER = DjangoJSONEncoder()


class JsonAnswer:
    """A 200 as JsonResponse would send it (the same encoder and header), without building Django's response."""

    status_code = 200

    def __init__(self, data: dict[str, Any]) -> None:
        self.content = ENCODER.encode(data).encode()

    def items(self) -> tuple[tuple[str, str], ...]:
        return JSON_HEADERS


@lru_cache(maxsize=4096)
def target_at(urlconf: str, path_info: str) -> Target | None:
    """The target of a path the project routes to the service's numbers views, by Django's own resolver; else None."""
    try:
        match = resolve(path_info, urlconf)
    except Exception:  # noqa: BLE001 - Resolver404, or a path the resolver chokes on: Django's to answer
        return None
    if match.func not in VIEWS:
        return None
    return Target(match.kwargs["kind"], match.kwargs["name"])


def from_memory(request: HttpRequest) -> bool:
    """Whether admit() can answer without the database or a network cache, so it may run on the event loop."""
    token = bearer_token(request)
    caller = known.get(digest(token)) if token else None
    if caller is None or tallies.usage.due():
        return False
    return caller.rate is None or isinstance(caches[throttle.CACHE_ALIAS], LocMemCache)


def replace_failed_connections() -> None:
    """Close this thread's connections that failed and no longer answer, so the next query opens a new one.

    Django's request cycle does this (close_old_connections) around each request; the sync thread here
    serves many, so it keeps a working connection and replaces only a broken one.
    """
    for connection in connections.all(initialized_only=True):
        if connection.errors_occurred:
            connection.close_if_unusable_or_obsolete()


def admit_fresh(request: HttpRequest, target: Target) -> Admission:
    """admit() on the sync thread, on a working connection."""
    replace_failed_connections()
    return admit(request, target)


async def admit_request(request: HttpRequest, target: Target) -> Admission:
    """admit() on the loop when it needs nothing but memory, else on Django's sync thread."""
    if from_memory(request):
        try:
            return admit(request, target)
        except SynchronousOnlyOperation:  # a check that reached for the database after all: run it where it may
            pass  # (admit() asks the database before it counts a rate, so nothing is counted twice)
    return await sync_to_async(admit_fresh, thread_sensitive=True)(request, target)


class Remembered:
    """admit()'s answers to requests it let through, for a caller without a rate, while its token is known.

    For such a caller admit() decides from the token, the target and the request's body, query and type
    alone (the rate is the one thing counted per request, and a caller with a rate is never remembered).
    So the same request from the same known caller is admitted again without the request object: an entry
    holds while the token's caller is the one kept in memory (two seconds, or until a client is saved in
    this process: the staleness of the token itself) and the usage write is not due.
    """

    def __init__(self) -> None:
        self.admitted: dict[tuple[Any, ...], tuple[Caller, int, str]] = {}

    @staticmethod
    def key(scope: Scope, target: Target, body: bytes) -> tuple[Any, ...] | None:
        """What admit() decides from; None for a body too long to keep."""
        if len(body) > REMEMBERED_BODY:
            return None
        headers = tuple(pair for pair in scope["headers"] if pair[0] in DECIDING_HEADERS)
        return target, body, scope.get("query_string", b""), headers

    def get(self, key: tuple[Any, ...]) -> Admission | None:
        """The remembered admission, while its caller is still the one its token's digest finds in memory."""
        found = self.admitted.get(key)
        if found is None or known.get(found[2]) is not found[0] or tallies.usage.due():
            return None
        return Admission(found[0], found[1])

    def keep(self, key: tuple[Any, ...], request: HttpRequest, admission: Admission) -> None:
        """Remember an admission that let a client without a rate through; nothing else."""
        caller, token = admission.caller, bearer_token(request)
        if admission.refusal is not None or caller is None or caller.client_id is None or caller.rate is not None:
            return
        if token:
            if len(self.admitted) >= REMEMBERED_LIMIT:
                self.admitted.clear()
            self.admitted[key] = (caller, admission.count, digest(token))

    def forget(self, **kwargs: Any) -> None:
        """Forget every admission: a setting changed (the largest body, the URLconf)."""
        self.admitted.clear()


remembered = Remembered()
setting_changed.connect(remembered.forget, dispatch_uid="segment_seq_service_remembered")


async def admit_fast(scope: Scope, body: bytes, target: Target) -> Admission:
    """The admission of a request the fast path answers: remembered, or admit()'s, kept for next time."""
    key = remembered.key(scope, target, body)
    admission = remembered.get(key) if key is not None else None
    if admission is not None:
        return admission
    request = ASGIRequest(scope, BytesIO(body))
    if not scope.get("query_string"):
        request.GET = NO_QUERY
    admission = await admit_request(request, target)
    if key is not None:
        remembered.keep(key, request, admission)
    return admission


class UsageWriter:
    """Writes the usage counts on the sync thread, after a response and ahead of time, one write at a time."""

    def __init__(self) -> None:
        self.writing = False

    def due(self) -> bool:
        """Whether a write should start now: counts waiting, none being written, the last half a second old."""
        tally = tallies.usage
        return (
            not self.writing
            and bool(tally.tallies)
            and time.monotonic() - tally.flushed >= tallies.FLUSH_EVERY - USAGE_AHEAD
        )

    async def write(self) -> None:
        self.writing = True
        try:
            await sync_to_async(self.flush, thread_sensitive=True)()
        finally:
            self.writing = False

    @staticmethod
    def flush() -> None:
        replace_failed_connections()
        tallies.usage.flush()


writer = UsageWriter()


def fast_headers(scope: Scope) -> tuple[bool, int | None]:
    """Whether the fast path may judge the caller, and the body's length (None: unknown or too long).

    It may when the request carries an Authorization header (judged by its token only) or no cookie (so no
    session): a session caller goes to Django, whose middleware knows the user.
    """
    authorized, cookie, length = False, False, 0
    for name, value in scope["headers"]:
        if name == b"authorization":
            authorized = True
        elif name == b"cookie":
            cookie = True
        elif name == b"content-length":
            length = int(value) if value.isdigit() and len(value) < 10 and length == 0 else -1
        elif name == b"transfer-encoding":
            length = -1
    return authorized or not cookie, length if 0 <= length <= BODY_LIMIT else None


async def read_body(receive: Receive) -> bytes | None:
    """The whole body (at most BODY_LIMIT bytes by its header); None when the client went away."""
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


async def send_answer(send: Send, answer: Answer) -> None:
    """The answer as ASGI messages, with its length, so the connection stays open for the next request."""
    body = answer.content
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.items()]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": answer.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def ours(scope: Scope) -> Target | None:
    """The target of a request the fast path answers; None for one it passes to Django."""
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    judged, length = fast_headers(scope)
    if not judged or length is None:
        return None
    try:
        scope.get("query_string", b"").decode()  # as ASGIRequest decodes it; Django answers a query it cannot
    except UnicodeDecodeError:
        return None
    path_info = scope["path"].removeprefix(get_script_prefix(scope)) or "/"
    # A project's own settings module, as django-stubs' plugin reads it, need not declare ROOT_URLCONF.
    urlconf: str = settings.ROOT_URLCONF  # type: ignore[misc,unused-ignore]
    return target_at(urlconf, path_info)


def in_front_of(django_application: ASGIApp) -> ASGIApp:
    """The project's ASGI application with the service's requests for numbers answered in front of it."""

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        target = ours(scope)
        if target is None:
            return await django_application(scope, receive, send)
        body = await read_body(receive)
        if body is None:
            return None
        await send_answer(send, await exchange(target, partial(admit_fast, scope, body, target), JsonAnswer))
        if writer.due():
            await writer.write()
        return None

    return application
