"""Everything a request passes before numbers are taken: method, caller, scope, count and rate, in that order."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse

from django_segment_seq.service import answers
from django_segment_seq.service.callers import Caller, CsrfRefused, NotAuthenticated, caller_of
from django_segment_seq.service.limits import retry_after
from django_segment_seq.service.requests import BadRequest, Target, body_fields, requested_count
from django_segment_seq.service.usage import usage


@dataclass(frozen=True)
class Admission:
    """The caller when known, and either the count to take or the refusal to send."""

    caller: Caller | None
    count: int = 0
    refusal: HttpResponse | None = None


def admit(request: HttpRequest, target: Target) -> Admission:
    """Check a request for numbers (sync code: it reads the client table and the cache)."""
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
    except CsrfRefused:
        return Admission(None, refusal=answers.answer(403, "csrf", "A session caller must send the CSRF token."))
    if usage.due():
        usage.flush()
    try:
        target.check()
        if not caller.may_take(target.scope_name):
            refusal = answers.answer(403, "forbidden", f"This client may not take {target.scope_name!r}.")
            return Admission(caller, refusal=refusal)
        if caller.rate is not None:
            seconds = retry_after(caller.rate_key, caller.rate)
            if seconds is not None:
                detail = f"More than {caller.rate.limit} requests in {caller.rate.seconds} s."
                return Admission(caller, refusal=answers.later(429, "rate_limited", detail, seconds))
        count = requested_count(body_fields(request), caller.max_count)
    except BadRequest as exc:
        return Admission(caller, refusal=answers.bad_request(exc.field, exc.detail))
    return Admission(caller, count)
