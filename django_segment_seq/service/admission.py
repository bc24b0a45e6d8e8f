"""Everything a request passes before numbers are taken: method, caller, rate, scope, count and row, in that order,
so a refusal past the rate costs a read of the cache and nothing of the database."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse

from django_segment_seq.conf import app_settings
from django_segment_seq.db.routing import serving_alias
from django_segment_seq.service import answers
from django_segment_seq.service.authentication import Caller, CsrfRefused, NotAuthenticated, TooManyFailures, caller_of
from django_segment_seq.service.bounds import checks_bounded
from django_segment_seq.service.requests import SEQUENCE, BadRequest, CountLimit, Target, body_fields, requested_count
from django_segment_seq.service.rows import Asker, folds_case, row_refusal
from django_segment_seq.service.tallies import usage
from django_segment_seq.service.throttle import retry_after, retry_after_in_memory


@dataclass(frozen=True)
class Admission:
    """The caller when known, and either the count to take or the refusal to send."""

    caller: Caller | None
    count: int = 0
    refusal: HttpResponse | None = None


class RateCount:
    """One request's count against its caller's rate, made at most once however often admit() runs for the request
    (the fast path runs it on the loop and, when a check reaches for the database, again on the sync thread).

    `in_memory`: on the event loop, where a count that needs a shared cache or the database raises
    SynchronousOnlyOperation, as the database does there, without counting.
    """

    def __init__(self, *, in_memory: bool = False, at_least: int = 1) -> None:
        self.counted = False
        self.seconds: int | None = None
        self.in_memory = in_memory
        self.at_least = at_least  # the lease to take when one is taken: the requests waiting for it, this one included

    def retry_after(self, caller: Caller) -> int | None:
        """retry_after() for the caller's rate the first time; the same answer after, without counting again."""
        if not self.counted and caller.rate is not None:
            at_least = self.at_least
            count = retry_after_in_memory if self.in_memory else partial(retry_after, ahead=True, at_least=at_least)
            self.seconds = count(caller.rate_key, caller.rate)
            self.counted = True
        return self.seconds


def admit(request: HttpRequest, target: Target, rate: RateCount | None = None) -> Admission:
    """Check a request for numbers (sync code: it reads the client table and the cache); `rate` counts the request
    against the caller's rate once for every run of admit() given it. No statement waits past LOCK_TIMEOUT.

    On the event loop (`rate.in_memory`) no statement can be sent, so no bound is set up either.
    """
    if rate is not None and rate.in_memory:
        return checked_request(request, target, rate)
    with checks_bounded():
        return checked_request(request, target, rate)


def checked_request(request: HttpRequest, target: Target, rate: RateCount | None) -> Admission:
    if request.method != "POST":
        return Admission(None, refusal=answers.not_allowed("POST"))
    try:
        request.body  # noqa: B018 - read first: the CSRF check reads the form, after which the body cannot be read
    except RequestDataTooBig:
        return Admission(None, refusal=answers.bad_request("body", "The body is too large."))
    try:
        caller = caller_of(request)
    except NotAuthenticated:
        return Admission(None, refusal=answers.unauthorized())
    except TooManyFailures as exc:
        detail = "Too many failed authentications from this address; try again later."
        return Admission(None, refusal=answers.later(429, "rate_limited", detail, exc.seconds))
    except CsrfRefused:
        return Admission(None, refusal=answers.answer(403, "csrf", "A session caller must send the CSRF token."))
    if usage.due():
        usage.flush()
    try:
        target.check()
        refusal = checked(caller, target, rate or RateCount())
        if refusal is not None:
            return Admission(caller, refusal=refusal)
        count = requested_count(body_fields(request), caller.max_count)
    except BadRequest as exc:
        return Admission(caller, refusal=answers.bad_request(exc.field, exc.detail))
    except CountLimit as exc:
        return Admission(caller, refusal=answers.answer(403, "count_limit", exc.detail))
    refusal = row_checked(caller, target)
    return Admission(caller, count, refusal)


def checked(caller: Caller, target: Target, rate: RateCount) -> HttpResponse | None:
    """The refusal of a caller past its rate (every request counts, refused or not) or outside its patterns."""
    refusal = rate_refusal(caller, rate)
    if refusal is not None:
        return refusal
    fold = target.kind == SEQUENCE and folds_case(alias_of_sequences())
    if not caller.may_take(target.scope_name, fold=fold):
        return answers.answer(403, "forbidden", f"This client may not take {target.scope_name!r}.")
    return None


def rate_refusal(caller: Caller, rate: RateCount) -> HttpResponse | None:
    """The 429 of a caller past its rate, counting this request (once); None within it or without a rate."""
    seconds = rate.retry_after(caller)
    if seconds is None or caller.rate is None:
        return None
    detail = f"More than {caller.rate.limit} requests in {caller.rate.seconds} s."
    return answers.later(429, "rate_limited", detail, seconds)


def row_checked(caller: Caller, target: Target) -> HttpResponse | None:
    """For a sequence: the refusal of a row that is not plain, or missing and not the caller's to create."""
    if target.kind != SEQUENCE:
        return None
    alias, most = alias_of_sequences(), app_settings()["SERVICE_CACHED_NAMES"]
    fold = folds_case(alias)
    asker = Asker(lambda stored: caller.may_take(stored, fold=fold), caller.client_id, caller.max_new_rows)
    refusal = row_refusal(alias, target.name, asker, most)
    return None if refusal is None else answers.answer(refusal.status, refusal.error, refusal.detail)


def alias_of_sequences() -> str:
    """The alias next_values() takes from when not told one."""
    return serving_alias()
