"""The answer to numbers handed out or refused by the app, logged, counted in metrics and in the client's usage."""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpResponse, JsonResponse

from django_segment_seq.exceptions import SequenceError, SequenceExhausted, SequenceNotFound, SequenceScopeError
from django_segment_seq.service import answers
from django_segment_seq.service.callers import Caller
from django_segment_seq.service.handout import NotFound, handed_out
from django_segment_seq.service.metrics import count_request
from django_segment_seq.service.requests import BadRequest, Target
from django_segment_seq.service.usage import usage

logger = logging.getLogger("django_segment_seq.service")
RETRY_SECONDS = 1


def served(caller: Caller, target: Target, body: dict[str, Any]) -> JsonResponse:
    """A 200 with the numbers; the block is logged with the caller and the range."""
    handed_over(caller, target, body)
    return JsonResponse(body)


def handed_over(caller: Caller, target: Target, body: dict[str, Any]) -> None:
    """The numbers of an answer, logged with the caller and the range, and added to the client's usage."""
    numbers, shown = handed_out(body)
    if caller.client_id is not None:
        usage.note(caller.client_id, numbers)
    logger.info("ID service: %s took %d of %s: %s", caller.name, numbers, target.scope_name, shown)


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
    if isinstance(exc, SequenceError):
        logger.warning("ID service: no numbers of %s: %s", target.scope_name, exc)
        return answers.later(503, "unavailable", "Numbers cannot be handed out now; try again.", RETRY_SECONDS)
    logger.error("ID service: unexpected error taking %s", target.scope_name, exc_info=exc)
    return answers.later(503, "unavailable", "Numbers cannot be handed out now; try again.", RETRY_SECONDS)


def counted(caller: Caller | None, response: HttpResponse) -> HttpResponse:
    count_request(caller.name if caller is not None else "-", response.status_code)
    return response
