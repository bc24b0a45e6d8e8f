"""The answer to numbers handed out or refused by the app, logged, counted in metrics and in the client's usage."""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError
from django.http import HttpResponse, JsonResponse

from django_segment_seq.exceptions import SequenceError, SequenceExhausted, SequenceNotFound, SequenceScopeError
from django_segment_seq.service import answers, loglines
from django_segment_seq.service.authentication import Caller
from django_segment_seq.service.handout import NotFound, handed_out
from django_segment_seq.service.outages import Outage
from django_segment_seq.service.request_metrics import count_request
from django_segment_seq.service.requests import BadRequest, Target
from django_segment_seq.service.tallies import usage

logger = logging.getLogger("django_segment_seq.service")
RETRY_SECONDS = 1


def shown(text: object) -> str:
    """A caller's text as a log line may carry it: as it is when it is plain printable ASCII, else its repr()."""
    value = str(text)
    return value if value.isascii() and value.isprintable() else ascii(value)


outage = Outage("numbers cannot be handed out")


def served(caller: Caller, target: Target, body: dict[str, Any]) -> JsonResponse:
    """A 200 with the numbers; the block is logged with the caller and the range."""
    handed_over(caller, target, body)
    return JsonResponse(body)


def handed_over(caller: Caller, target: Target, body: dict[str, Any]) -> None:
    """The numbers of an answer, logged with the caller and the range, and added to the client's usage."""
    numbers, range_text = handed_out(body)
    if caller.client_id is not None:
        usage.note(caller.client_id, numbers)
    if loglines.writes_info(logger):
        name, scope_name = shown(caller.name), shown(target.scope_name)
        loglines.info(logger, "ID service: %s took %d of %s: %s", name, numbers, scope_name, range_text)
    refused = outage.ended()
    if refused is not None:
        logger.warning("ID service: numbers are handed out again, after %d requests answered 503", refused)


def failed(exc: BaseException, target: Target) -> HttpResponse:
    """The answer to an error while taking numbers: never a 500, never a traceback; unexpected ones are logged."""
    if isinstance(exc, BadRequest):
        return answers.bad_request(exc.field, exc.detail)
    if isinstance(exc, NotFound | SequenceNotFound):
        return answers.answer(404, "not_found", str(exc))
    if isinstance(exc, SequenceExhausted):
        return answers.answer(409, "exhausted", str(exc))
    if isinstance(exc, SequenceScopeError):
        return answers.bad_request("name", str(exc))
    if isinstance(exc, SequenceError | DatabaseError):
        outage.failed(shown(target.scope_name), exc)
    else:
        logger.error("ID service: unexpected error taking %s", shown(target.scope_name), exc_info=exc)
    return unavailable()


def unavailable() -> HttpResponse:
    """A 503 with Retry-After, logged here (once per outage), not again by django.request for each request."""
    response = answers.later(503, "unavailable", "Numbers cannot be handed out now; try again.", RETRY_SECONDS)
    response._has_been_logged = True  # type: ignore[attr-defined]  # Django's log_response() then skips it
    return response


def counted(caller: Caller | None, response: HttpResponse) -> HttpResponse:
    count_request(caller.name if caller is not None else "-", response.status_code)
    return response
