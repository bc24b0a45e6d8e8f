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
        if admission.refusal is not None:
            response: Answer = admission.refusal
        else:
            assert caller is not None
            body = taken_at_once(target, admission.count) or await atake(target, admission.count)
            handed_over(caller, target, body)
            response = respond(body)
    except Exception as exc:  # noqa: BLE001 - every failure is answered in JSON (outcomes.failed)
        response = failed(exc, target)
    count_request(caller.name if caller is not None else "-", response.status_code)
    return response
