"""The fast path's workings (see asgi.py): which requests it answers, where admission runs, ASGI in and out."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import Future
from functools import lru_cache, partial
from io import BytesIO
from typing import Any, NamedTuple

from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.exceptions import DisallowedHost, SynchronousOnlyOperation
from django.core.handlers.asgi import ASGIRequest, get_script_prefix
from django.core.serializers.json import DjangoJSONEncoder
from django.core.signals import setting_changed
from django.db import connections
from django.http import HttpRequest, QueryDict
from django.urls import resolve

from django_segment_seq.service import tallies, views
from django_segment_seq.service.admission import Admission, RateCount, admit, rate_refusal
from django_segment_seq.service.authentication import bearer_token, known, refresh, token_in
from django_segment_seq.service.exchange import Answer, exchange, exchange_at_once
from django_segment_seq.service.handout import BlockBody
from django_segment_seq.service.kept_thread import counting_thread, usage_thread
from django_segment_seq.service.lease_takers import leases
from django_segment_seq.service.requests import Target
from django_segment_seq.service.thread_connections import replace_failed_connections
from django_segment_seq.service.throttle import lease_ticket
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
RAW_JSON_TYPE = (b"content-type", b"application/json")
# Requests remembered with their admission (Remembered): bodies up to this long, this many at most.
REMEMBERED_BODY = 256
REMEMBERED_LIMIT = 10_000
DECIDING_HEADERS = frozenset({b"authorization", b"content-type"})
# The headers Django's checks before a view read (request.get_host(), request.is_secure()): see refused_by_django().
HOST_HEADERS = frozenset({b"host", b"x-forwarded-host", b"x-forwarded-port"})
# The query of a request without one (immutable, so every such request may share it): parsed once, not per request.
NO_QUERY = QueryDict()
ENCODER = DjangoJSONEncoder()
Headers = tuple[tuple[bytes, bytes], ...]


def json_encoding() -> Callable[[dict[str, Any]], str]:
    """ENCODER.encode(), as JsonResponse encodes, for less: the standard library's C encoder made once with the same
    default(), separators and options (encode() makes one per call); ENCODER.encode() itself where there is none.

    It skips the check for circular references, which an answer's flat body of numbers and texts cannot hold.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return ENCODER.encode
    encoder = make(
        None,
        ENCODER.default,
        json.encoder.encode_basestring_ascii,
        ENCODER.indent,
        ENCODER.key_separator,
        ENCODER.item_separator,
        ENCODER.sort_keys,
        ENCODER.skipkeys,
        ENCODER.allow_nan,
    )
    return lambda data: "".join(encoder(data, 0))


encode = json_encoding()


class JsonAnswer:
    """A 200 as JsonResponse would send it (the same encoding and header), without building Django's response."""

    status_code = 200

    def __init__(self, data: dict[str, Any]) -> None:
        self.content = data.json() if type(data) is BlockBody else encode(data).encode()
        self.raw_headers = [RAW_JSON_TYPE, (b"content-length", b"%d" % len(self.content))]

    def items(self) -> tuple[tuple[str, str], ...]:
        return JSON_HEADERS


@lru_cache(maxsize=4096)
def target_of(root_path: str, path: str) -> Target | None:
    """The target of a request's path (past its script prefix), looked up once per path until a setting changes."""
    path_info = path.removeprefix(get_script_prefix({"root_path": root_path})) or "/"
    # A project's own settings module, as django-stubs' plugin reads it, need not declare ROOT_URLCONF.
    urlconf: str = settings.ROOT_URLCONF  # type: ignore[misc,unused-ignore]
    return target_at(urlconf, path_info)


def forget_targets(**kwargs: Any) -> None:
    """Forget the paths' targets: a setting changed (the URLconf, the forced script name)."""
    target_of.cache_clear()
    routed.cache_clear()


setting_changed.connect(forget_targets, dispatch_uid="segment_seq_service_fast_targets")


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
    """Whether admit() may answer without the database, so it is tried on the event loop first: a caller known in
    memory, whose rate is counted in memory or its lease (else admit() raises SynchronousOnlyOperation there)."""
    token = bearer_token(request)
    caller = known.get(digest(token)) if token else None
    return caller is not None and not tallies.usage.due()


def admit_fresh(request: HttpRequest, target: Target, rate: RateCount) -> Admission:
    """admit() on the request's sync thread, on a working connection."""
    replace_failed_connections()
    return admit(request, target, rate)


async def admit_request(request: HttpRequest, target: Target) -> Admission:
    """admit() on the loop when it needs nothing but memory, else on the request's sync thread; the request is counted
    against its caller's rate once, wherever admit() got to on the loop before it reached for the database."""
    rate = RateCount(in_memory=True)
    if from_memory(request):
        try:
            return admit(request, target, rate)
        except SynchronousOnlyOperation:  # a check or count that needs the database after all: run it where it may
            pass
    rate.in_memory = False
    return await sync_to_async(admit_fresh, thread_sensitive=True)(request, target, rate)


def readmitted(admission: Admission) -> Admission | None:
    """A remembered admission for this request: the same, once the request is counted against its caller's rate from
    memory (the rate's lease), or the rate's 429; None, with nothing counted, when a lease must be taken first."""
    caller = admission.caller
    if caller is None or caller.rate is None:
        return admission
    due = lease_ticket(caller.rate_key, caller.rate)  # the common case, counted with the least work
    if due is not None:
        if due:
            leases.ahead(caller)
        return admission
    try:
        refusal = rate_refusal(caller, RateCount(in_memory=True))
    except SynchronousOnlyOperation:
        return None
    leases.ahead(caller)
    return admission if refusal is None else Admission(caller, refusal=refusal)


async def readmit(admission: Admission) -> Admission:
    """readmitted(), the lease taken (on the counting thread) when the one in memory is used up."""
    found = readmitted(admission)
    if found is not None:
        return found
    assert admission.caller is not None
    refusal = await leases.counted(admission.caller)
    return admission if refusal is None else Admission(admission.caller, refusal=refusal)


class Decided(NamedTuple):
    """What admit() decides a request from, besides the rate: the key of its remembered admission."""

    target: Target
    body: bytes
    query: bytes
    headers: Headers


class Remembered:
    """admit()'s answers to requests it let through, while their token is known.

    admit() decides from the token, the target and the request's body, query and type alone, besides the
    rate, the one thing counted per request. So the same request from the same known caller is admitted
    again without the request object, once readmit() has counted it against the caller's rate by admit()'s
    own rule (the rate is checked first of what follows the caller, so a request within it passes the rest
    as before): an entry holds while the token's caller is the one kept in memory (two seconds, or until a
    client is saved in this process: the staleness of the token itself) and the usage write is not due.
    """

    def __init__(self) -> None:
        self.admitted: dict[Decided, tuple[Admission, str]] = {}

    @staticmethod
    def key(scope: Scope, target: Target, body: bytes, deciding: Headers) -> Decided | None:
        """What admit() decides from (`deciding`: the headers it reads); None for a body too long to keep."""
        if len(body) > REMEMBERED_BODY:
            return None
        return Decided(target, body, scope.get("query_string", b""), deciding)

    def get(self, key: Decided) -> Admission | None:
        """The remembered admission, while its caller is still the one its token's digest finds in memory (read
        again ahead of time for a busy token: see Refresher)."""
        found = self.admitted.get(key)
        if found is None or known.get(found[1]) is not found[0].caller or tallies.usage.due():
            return None
        if known.due(found[1]):
            refresher.ahead(found[1], key.headers)
        return found[0]

    def keep(self, key: Decided, request: HttpRequest, admission: Admission) -> None:
        """Remember an admission that let a client through; nothing else."""
        caller, token = admission.caller, bearer_token(request)
        if admission.refusal is not None or caller is None or caller.client_id is None:
            return
        if token:
            if len(self.admitted) >= REMEMBERED_LIMIT:
                self.admitted.clear()
            self.admitted[key] = (admission, digest(token))  # frozen: one object serves every request

    def forget(self, **kwargs: Any) -> None:
        """Forget every admission: a setting changed (the largest body, the URLconf)."""
        self.admitted.clear()


class Refresher:
    """Reads a busy token's client again on the counting thread (kept_thread.py) shortly before its caller is
    forgotten (REFRESH_BEFORE), at most once at a time per token, so its requests keep being answered from memory
    (else those that found it forgotten each read the table on a thread and a connection of their own). The
    staleness stays KNOWN_FOR: a token revoked elsewhere is refused as soon."""

    def __init__(self) -> None:
        self.forget()
        os.register_at_fork(after_in_child=self.forget)

    def forget(self) -> None:
        """Nothing being read (in a child: the parent's loop and its tasks are not here)."""
        self.reading: set[tuple[asyncio.AbstractEventLoop, str]] = set()
        self.tasks: set[asyncio.Task[None]] = set()

    def ahead(self, wanted: str, deciding: Headers) -> None:
        """Start reading the client of token digest `wanted` again, unless that is under way."""
        loop = asyncio.get_running_loop()
        if (loop, wanted) in self.reading:
            return
        header = next((value for name, value in deciding if name == b"authorization"), None)
        token = token_in(None if header is None else header.decode("latin-1"))
        if not token:
            return
        self.reading.add((loop, wanted))
        task = loop.create_task(self.read((loop, wanted), token))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def read(self, key: tuple[asyncio.AbstractEventLoop, str], token: str) -> None:
        try:
            await counting_thread.run(refresh, token)
        except Exception:  # noqa: BLE001 - a table it cannot read now: the token is read as usual once forgotten
            pass
        finally:
            self.reading.discard(key)


refresher = Refresher()
remembered = Remembered()
setting_changed.connect(remembered.forget, dispatch_uid="segment_seq_service_remembered")


async def admit_new(scope: Scope, body: bytes, target: Target, key: Decided | None) -> Admission:
    """The admission of a request the fast path does not remember: admit()'s, kept for next time under `key`."""
    request = ASGIRequest(scope, BytesIO(body))
    if not scope.get("query_string"):
        request.GET = NO_QUERY
    admission = await admit_request(request, target)
    if key is not None:
        remembered.keep(key, request, admission)
    return admission


class UsageWriter:
    """Writes the usage counts on the usage thread (kept_thread.py), ahead of time, one write at a time, awaited by
    no request: a client row another session holds delays the counts, not an answer (and no write costs a new
    thread and connection)."""

    def __init__(self) -> None:
        self.writing = False
        os.register_at_fork(after_in_child=self.forget)

    def forget(self) -> None:
        """None being written (in a child: the parent's write is not its own)."""
        self.writing = False

    def due(self) -> bool:
        """Whether a write should start now: counts waiting, none being written, the last half a second old."""
        tally = tallies.usage
        return (
            not self.writing
            and bool(tally.tallies)
            and time.monotonic() - tally.flushed >= tallies.FLUSH_EVERY - USAGE_AHEAD
        )

    def start(self) -> None:
        self.writing = True
        written = usage_thread.submit(tallies.usage.flush)  # which keeps the counts it could not write, and says so
        if written is None:
            self.writing = False
        else:
            written.add_done_callback(self.written)

    def written(self, _written: Future[None]) -> None:
        self.writing = False


writer = UsageWriter()


def fast_headers(scheme: str, server: tuple[Any, ...] | None, headers: Headers) -> tuple[bool, int | None, Headers]:
    """Whether the fast path may judge the caller, the body's length (None: unknown or too long), and the headers
    admit() decides from (Remembered's key), in one pass over the headers.

    It may when the request carries an Authorization header (judged by its token only) or no cookie (so no
    session): a session caller goes to Django, whose middleware knows the user. And it may not when Django
    would refuse the request before a view (refused_by_django()).
    """
    authorized, cookie, length, deciding, hosts = False, False, 0, [], []
    secure_header = proxy_ssl_header()
    for name, value in headers:
        if name in DECIDING_HEADERS:
            deciding.append((name, value))
            authorized = authorized or name == b"authorization"
        elif name in HOST_HEADERS or name == secure_header:
            hosts.append((name, value))
        elif name == b"cookie":
            cookie = True
        elif name == b"content-length":
            length = int(value) if value.isdigit() and len(value) < 10 and length == 0 else -1
        elif name == b"transfer-encoding":
            length = -1
    judged = (authorized or not cookie) and not refused_by_django(scheme, server, tuple(hosts))
    return judged, length if 0 <= length <= BODY_LIMIT else None, tuple(deciding)


@lru_cache(maxsize=1)
def proxy_ssl_header() -> bytes | None:
    """The header SECURE_PROXY_SSL_HEADER names, as an ASGI server passes it (lower case, dashes); None for none."""
    header = settings.SECURE_PROXY_SSL_HEADER
    if not header:
        return None
    return str(header[0]).removeprefix("HTTP_").lower().replace("_", "-").encode("latin-1")


@lru_cache(maxsize=4096)
def refused_by_django(scheme: str, server: tuple[Any, ...] | None, hosts: Headers) -> bool:
    """Whether Django could refuse a request with these host headers before its view runs, so the fast path leaves it
    to Django: a host request.get_host() refuses (ALLOWED_HOSTS), or plain HTTP where SecurityMiddleware redirects to
    HTTPS (SECURE_SSL_REDIRECT). Decided by Django's own request, once per set of headers until a setting changes."""
    scope = {"type": "http", "method": "POST", "path": "/", "scheme": scheme, "headers": list(hosts)}
    if server is not None:
        scope["server"] = server
    request = ASGIRequest(scope, BytesIO())
    try:
        request.get_host()
    except DisallowedHost:
        return True
    middleware = "django.middleware.security.SecurityMiddleware"
    return bool(settings.SECURE_SSL_REDIRECT and middleware in settings.MIDDLEWARE and not request.is_secure())


def forget_host_rules(**kwargs: Any) -> None:
    """Forget what was decided of hosts: a setting changed (ALLOWED_HOSTS, SECURE_SSL_REDIRECT, the proxy's header)."""
    refused_by_django.cache_clear()
    proxy_ssl_header.cache_clear()
    routed.cache_clear()


setting_changed.connect(forget_host_rules, dispatch_uid="segment_seq_service_fast_hosts")


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
    if isinstance(answer, JsonAnswer):
        headers = answer.raw_headers
    else:
        headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.items()]
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": answer.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def ours(scope: Scope) -> tuple[Target, Headers] | None:
    """The target of a request the fast path answers, and the headers admit() decides from; None: Django's to answer."""
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    server, headers = scope.get("server"), scope["headers"]
    found = (scope.get("root_path", ""), scope["path"], scope.get("query_string", b""), scope.get("scheme", "http"))
    try:
        return routed(*found, None if server is None else tuple(server), tuple(headers))
    except TypeError:  # headers as lists, which ASGI allows (any iterable of two byte strings)
        return routed(*found, None if server is None else tuple(server), tuple(tuple(pair) for pair in headers))


@lru_cache(maxsize=4096)
def routed(
    root_path: str, path: str, query: bytes, scheme: str, server: tuple[Any, ...] | None, headers: Headers
) -> tuple[Target, Headers] | None:
    """ours(), decided once per path, query and headers until a setting changes: a client sends the same ones
    again and again, and reading them anew on each request cost more than looking them up."""
    judged, length, deciding = fast_headers(scheme, server, headers)
    if not judged or length is None:
        return None
    if query:
        try:
            query.decode()  # as ASGIRequest decodes it; Django answers a query it cannot
        except UnicodeDecodeError:
            return None
    target = target_of(root_path, path)
    return None if target is None else (target, deciding)


def in_front_of(django_application: ASGIApp) -> ASGIApp:
    """The project's ASGI application with the service's requests for numbers answered in front of it."""

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        found = ours(scope)
        if found is None:
            return await django_application(scope, receive, send)
        body = await read_body(receive)
        if body is None:
            return None
        target, deciding = found
        key = remembered.key(scope, target, body, deciding)
        admission = remembered.get(key) if key is not None else None
        readmitted_now = None if admission is None else readmitted(admission)
        quick = None if readmitted_now is None else exchange_at_once(target, readmitted_now, JsonAnswer)
        if quick is not None:  # answered from memory: no thread, so no thread of its own to make ready
            await send_answer(send, quick)
        else:
            # As Django's handler does: this request's sync work runs on a thread of its own, so a wait there (a
            # row another session holds) holds up this request alone, not every request of the worker.
            async with ThreadSensitiveContext() as context:
                try:
                    await answer(scope, body, target, key, admission, readmitted_now, send)
                finally:
                    if context in SyncToAsync.context_to_thread_executor:  # a thread served it: close its connections
                        await sync_to_async(connections.close_all, thread_sensitive=True)()
        if writer.due():
            writer.start()
        return None

    return application


async def answer(
    scope: Scope,
    body: bytes,
    target: Target,
    key: Decided | None,
    admission: Admission | None,
    readmitted_now: Admission | None,
    send: Send,
) -> None:
    """Admit and answer a request the fast path answers but not from memory: one it does not remember, one whose
    rate's lease must be taken first, or one whose numbers must be fetched (`readmitted_now`: counted already)."""
    admitting: Admission | Callable[[], Awaitable[Admission]]
    if readmitted_now is not None:
        admitting = readmitted_now
    elif admission is not None:
        admitting = partial(readmit, admission)
    else:
        admitting = partial(admit_new, scope, body, target, key)
    await send_answer(send, await exchange(target, admitting, JsonAnswer))
