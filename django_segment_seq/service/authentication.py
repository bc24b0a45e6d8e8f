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


def refuse_if_failing(address: str, wanted: str | None = None) -> None:
    """TooManyFailures when `address` is past SERVICE_AUTH_FAILURE_RATE, unless `wanted` (a token's digest) is a live
    token's: another token's failures never refuse a valid one. From the cache and the process's memory alone."""
    rate = failure_rate()
    seconds = None if rate is None else peek(f"auth-failures:{address}", rate)
    if seconds is not None and (wanted is None or wanted not in live_digests):
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


class LiveDigests:
    """The digests of every live token (current, or previous within its grace), read at most once per KNOWN_FOR by a
    process and only while an address is past its failures: so a valid token is told from the wrong ones sent from
    its address without a query per refusal."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.until = 0.0
        self.digests: frozenset[str] = frozenset()

    def __contains__(self, wanted: str) -> bool:
        if time.monotonic() >= self.until:
            self.load()
        return wanted in self.digests

    def load(self) -> None:
        now, found = timezone.now(), set()
        rows = (
            Client.objects.filter(revoked_at=None)
            .order_by()
            .values_list("token_digest", "previous_digest", "previous_valid_until")
        )
        for current, previous, valid_until in rows:
            found.add(current)
            if previous and valid_until is not None and valid_until > now:
                found.add(previous)
        with self.lock:
            self.digests, self.until = frozenset(found), time.monotonic() + KNOWN_FOR

    def forget(self, **kwargs: Any) -> None:
        with self.lock:
            self.until = 0.0


live_digests = LiveDigests()
post_save.connect(live_digests.forget, sender=Client, dispatch_uid="segment_seq_service_live_digests")
post_delete.connect(live_digests.forget, sender=Client, dispatch_uid="segment_seq_service_live_digests_delete")


def client_caller(token: str, address: str = "-") -> Caller:
    """The caller of a bearer token, from memory for a token found valid in the last KNOWN_FOR seconds; an address
    past its failures is refused before the table is read."""
    wanted = digest(token) if token else NO_DIGEST
    caller = known.get(wanted) if token else None
    if caller is not None:
        return caller
    refuse_if_failing(address, wanted if token else None)
    client = client_with(token)
    if client is None:
        note_failure(address)
        raise NotAuthenticated
    return caller_kept(client, wanted)


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
