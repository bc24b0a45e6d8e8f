"""Who is calling: a client by its bearer token, or a logged-in user with the permission (and a CSRF token)."""

from __future__ import annotations

import hmac
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.db.models.signals import post_delete, post_save
from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from django.utils.asyncio import async_unsafe

from django_segment_seq.conf import app_settings
from django_segment_seq.service.bounds import checks_bounded
from django_segment_seq.service.models import Client
from django_segment_seq.service.throttle import peek, retry_after
from django_segment_seq.service.tokens import NO_DIGEST, Rate, allowed, digest, parse_rate

PERMISSION = "segment_seq_service.use_id_service"
# Seconds a process answers a known token from memory: a revocation or rotation made in another process
# takes effect within this; in the same process (the admin, the command) at once, through the signals below.
KNOWN_FOR = 2.0
# The fast path reads a busy token's client again this long before KNOWN_FOR ends, while its requests are still
# answered from memory: else every request in flight found it gone at once, each reading the table on a new thread.
REFRESH_BEFORE = 0.5


@dataclass(frozen=True)
class Caller:
    """What a request may do: its name in logs and metrics, its patterns (None: any), count and rate limits."""

    name: str
    client_id: int | None
    patterns: str | None
    max_count: int
    rate: Rate | None
    # The rate's counter in the cache: the client's id and its token's digest, so a client added again counts anew.
    rate_key: str = ""
    # How many rows the client may create by naming them (its cap; the count is kept in its row): 0 for none.
    max_new_rows: int = 0

    def may_take(self, target: str, *, fold: bool = False) -> bool:
        """Whether a pattern admits `target`; with `fold`, as a case-insensitive collation compares names."""
        return self.patterns is None or allowed(self.patterns, target, fold=fold)


class NotAuthenticated(Exception):
    """No valid token and no permitted session: one answer whatever was wrong."""


class CsrfRefused(Exception):
    """A session caller without a valid CSRF token."""


class TooManyFailures(Exception):
    """The caller's address failed to authenticate too often in this window; answered without reading the table."""

    def __init__(self, seconds: int) -> None:
        super().__init__(seconds)
        self.seconds = seconds


def failure_rate() -> Rate | None:
    rate = app_settings()["SERVICE_AUTH_FAILURE_RATE"]
    return None if rate is None else parse_rate(rate)


def address_of(request: HttpRequest) -> str:
    """The address failures are counted by: REMOTE_ADDR, the peer as the server sees it."""
    return str(request.META.get("REMOTE_ADDR") or "-")


def failing_for(address: str) -> int | None:
    """The seconds until `address` may authenticate again when it is past SERVICE_AUTH_FAILURE_RATE, else None; from
    the cache alone."""
    rate = failure_rate()
    return None if rate is None else peek(f"auth-failures:{address}", rate)


def refuse_if_failing(address: str) -> None:
    """TooManyFailures when `address` is past SERVICE_AUTH_FAILURE_RATE (a caller with no token to look up)."""
    seconds = failing_for(address)
    if seconds is not None:
        raise TooManyFailures(seconds)


def note_failure(address: str) -> None:
    rate = failure_rate()
    if rate is not None:
        retry_after(f"auth-failures:{address}", rate)


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an `Authorization: Bearer` header, '' for another header, None when there is none."""
    return token_in(request.META.get("HTTP_AUTHORIZATION"))


def token_in(header: str | None) -> str | None:
    """The token of an Authorization header's value, as bearer_token() reads it."""
    if header is None:
        return None
    scheme, _space, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def client_with(token: str) -> Client | None:
    """The live client `token` belongs to; the same query and digest comparisons whatever part of it is right."""
    wanted = digest(token) if token else NO_DIGEST
    now = timezone.now()
    found = list(
        Client.objects.filter(Q(token_digest=wanted) | Q(previous_digest=wanted), revoked_at=None).only(
            "id",
            "name",
            "token_digest",
            "previous_digest",
            "previous_valid_until",
            "sequences",
            "max_count",
            "rate",
            "max_new_rows",
        )[:2]
    )
    match = None
    for client in found:
        current = hmac.compare_digest(client.token_digest, wanted)
        previous = hmac.compare_digest(client.previous_digest or NO_DIGEST, wanted)
        in_grace = client.previous_valid_until is not None and client.previous_valid_until > now
        if current or (previous and in_grace):
            match = client
    return match if token else None


class KnownTokens:
    """The callers of tokens found valid lately, by digest; a wrong token is never kept, so it always costs a query."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.callers: dict[str, tuple[float, Caller]] = {}

    def get(self, wanted: str) -> Caller | None:
        found = self.callers.get(wanted)
        if found is None or found[0] < time.monotonic():
            return None
        return found[1]

    def keep(self, wanted: str, caller: Caller, until: float) -> Caller:
        """Keep `caller` for `wanted` until `until`; the caller kept (the one before it when it is equal)."""
        with self.lock:
            if len(self.callers) > 10_000:
                self.callers.clear()
            kept = self.callers.get(wanted)
            if kept is not None and kept[1] == caller:
                caller = kept[1]  # the same object: what the fast path remembered of it (its admissions) still holds
            self.callers[wanted] = (until, caller)
            return caller

    def due(self, wanted: str) -> bool:
        """Whether a known token is within REFRESH_BEFORE of being forgotten, so its client is best read again now."""
        found = self.callers.get(wanted)
        return found is not None and found[0] - REFRESH_BEFORE <= time.monotonic()

    def drop(self, wanted: str) -> None:
        with self.lock:
            self.callers.pop(wanted, None)

    def forget(self, **kwargs: Any) -> None:
        with self.lock:
            self.callers.clear()


known = KnownTokens()
post_save.connect(known.forget, sender=Client, dispatch_uid="segment_seq_service_known_tokens")
post_delete.connect(known.forget, sender=Client, dispatch_uid="segment_seq_service_known_tokens_delete")


class Flight:
    """One lookup of a token in the table, which the other requests bringing the same token wait for."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answered = False
        self.caller: Caller | None = None


class Lookups:
    """Tokens not known to the process, looked up in the client table one lookup in flight per token (the requests
    that bring it meanwhile wait for that answer, not each read the table); and the digests found not live in the
    last KNOWN_FOR, so an address past its failures that repeats a wrong token is refused without a read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.flights: dict[str, Flight] = {}
        self.absent: dict[str, float] = {}

    def is_absent(self, wanted: str) -> bool:
        """Whether `wanted` was looked up lately and no live token had it."""
        until = self.absent.get(wanted)
        return until is not None and until >= time.monotonic()

    @async_unsafe("A token is looked up in the client table")  # never wait for another lookup on an event loop
    def caller(self, token: str, wanted: str) -> Caller | None:
        """The caller of `token` (whose digest is `wanted`) by the table, or None when no live client has it."""
        with self.lock:
            flight = self.flights.get(wanted)
            leading = flight is None
            if flight is None:
                flight = self.flights[wanted] = Flight()
        if not leading:
            if flight.done.wait(app_settings()["LOCK_TIMEOUT"]) and flight.answered:
                return flight.caller
            return self.read(token, wanted)  # the lookup failed or is held up: this request's own, as before
        try:
            flight.caller = self.read(token, wanted)
            flight.answered = True
            return flight.caller
        finally:
            with self.lock:
                self.flights.pop(wanted, None)
            flight.done.set()

    def read(self, token: str, wanted: str) -> Caller | None:
        client = client_with(token)
        if client is None:
            with self.lock:
                if len(self.absent) > 10_000:
                    self.absent.clear()
                self.absent[wanted] = time.monotonic() + KNOWN_FOR
            return None
        return caller_kept(client, wanted)

    def forget(self, **kwargs: Any) -> None:
        with self.lock:
            self.absent.clear()


lookups = Lookups()
post_save.connect(lookups.forget, sender=Client, dispatch_uid="segment_seq_service_lookups")
post_delete.connect(lookups.forget, sender=Client, dispatch_uid="segment_seq_service_lookups_delete")


def client_caller(token: str, address: str = "-") -> Caller:
    """The caller of a bearer token, from memory for a token found valid in the last KNOWN_FOR seconds, else by the
    table. A token the table knows is admitted whatever its address's failures (one made a moment ago in another
    process too); an address past its failures is refused without a read only for a token found wrong lately."""
    wanted = digest(token) if token else NO_DIGEST
    caller = known.get(wanted) if token else None
    if caller is not None:
        return caller
    failing = failing_for(address)
    if failing is not None and (not token or lookups.is_absent(wanted)):
        raise TooManyFailures(failing)
    if not token:
        client_with("")  # the same work as a wrong token
    elif (caller := lookups.caller(token, wanted)) is not None:
        return caller
    if failing is not None:
        raise TooManyFailures(failing)
    note_failure(address)
    raise NotAuthenticated


def refresh(token: str) -> None:
    """Read a known token's client again (sync: the table): keep its caller for KNOWN_FOR more, or forget the token
    when it is no longer live (revoked, or an old token past its grace), so its next request is refused."""
    with checks_bounded():
        client = client_with(token)
    if client is None:
        known.drop(digest(token))
    else:
        caller_kept(client, digest(token))


def caller_kept(client: Client, wanted: str) -> Caller:
    """The caller of a live client's token, kept in memory for KNOWN_FOR (an old token: at most to its grace's end)."""
    rate_key = f"{client.id}-{client.token_digest[:16]}"
    caller = Caller(
        client.name,
        client.id,
        client.sequences,
        client.max_count,
        parse_rate(client.rate),
        rate_key,
        client.max_new_rows,
    )
    until = time.monotonic() + KNOWN_FOR
    if client.token_digest != wanted and client.previous_valid_until is not None:  # an old token in its grace
        until = min(until, time.monotonic() + (client.previous_valid_until - timezone.now()).total_seconds())
    return known.keep(wanted, caller, until)


def caller_of(request: HttpRequest) -> Caller:
    """The caller of `request`; NotAuthenticated or CsrfRefused when it may not call."""
    token = bearer_token(request)
    address = address_of(request)
    if token is not None or not hasattr(request, "user"):
        return client_caller(token or "", address)
    user = request.user
    if not user.is_authenticated or not user.has_perm(PERMISSION):
        refuse_if_failing(address)  # a permitted user is never refused for the failures of others on its address
        client_with("")  # the same work as a wrong token
        note_failure(address)
        raise NotAuthenticated
    if CsrfViewMiddleware(lambda _request: None).process_view(request, None, (), {}) is not None:  # type: ignore[arg-type]
        raise CsrfRefused
    settings = app_settings()
    rate = None if settings["SERVICE_USER_RATE"] is None else parse_rate(settings["SERVICE_USER_RATE"])
    name = f"user:{user.get_username()}"
    return Caller(name, None, None, settings["SERVICE_USER_MAX_COUNT"], rate, f"user-{user.pk}")
