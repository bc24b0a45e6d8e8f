"""One request for numbers from admission to answer, for async callers: the ASGI view and the fast path both run it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse

from django_segment_seq.service.admission import Admission, admit
from django_segment_seq.service.handout import atake, taken_at_once
from django_segment_seq.service.outcomes import failed, handed_over
from django_segment_seq.service.request_metrics import count_request
from django_segment_seq.service.requests import Target


class Answer(Protocol):
    """What is sent back: Django's response, or the fast path's lighter one for a 200 (its status, headers, body)."""

    status_code: int

    @property
    def content(self) -> bytes: ...

    def items(self) -> Iterable[tuple[str, str]]: ...


Admit = Callable[[], Awaitable[Admission]]
Respond = Callable[[dict[str, Any]], Answer]


async def admit_on_thread(request: HttpRequest, target: Target) -> Admission:
    """admit() on Django's sync thread: it may read the client table, write the usage counts, ask the cache."""
    return await sync_to_async(admit, thread_sensitive=True)(request, target)


async def exchange(target: Target, admitting: Admit | Admission, respond: Respond = JsonResponse) -> Answer:
    """The answer to a request for numbers: the refusal, the numbers (logged and counted) or the failure, in JSON.

    `admitting()` runs the request's admission (admit(), wherever the caller runs it), or is the admission when
    the caller has it already; `respond` makes a 200. A block the cached range holds is taken without an await.
    """
    caller = None
    try:
        admission = admitting if isinstance(admitting, Admission) else await admitting()
        caller = admission.caller
        response = answered(target, admission, respond)
        if response is None:
            response = delivered(target, admission, await atake(target, admission.count), respond)
    except Exception as exc:  # noqa: BLE001 - every failure is answered in JSON (outcomes.failed)
        response = failed(exc, target)
    count_request(caller.name if caller is not None else "-", response.status_code)
    return response


def exchange_at_once(target: Target, admission: Admission, respond: Respond = JsonResponse) -> Answer | None:
    """exchange() of a request admitted already, when its answer needs no await (a refusal, or a block the cached
    range holds); None when it does (numbers to take on a thread), with nothing taken or counted."""
    try:
        response = answered(target, admission, respond)
    except Exception as exc:  # noqa: BLE001 - every failure is answered in JSON (outcomes.failed)
        response = failed(exc, target)
    if response is None:
        return None
    count_request(admission.caller.name if admission.caller is not None else "-", response.status_code)
    return response


def answered(target: Target, admission: Admission, respond: Respond) -> Answer | None:
    """The refusal, or the answer with a block the cached range holds; None when the numbers must be awaited."""
    if admission.refusal is not None:
        return admission.refusal
    body = taken_at_once(target, admission.count)
    return None if body is None else delivered(target, admission, body, respond)


def delivered(target: Target, admission: Admission, body: dict[str, Any], respond: Respond) -> Answer:
    """The 200 of a block taken: logged and counted in the caller's usage."""
    assert admission.caller is not None
    handed_over(admission.caller, target, body)
    return respond(body)
