"""The service's views: numbers (sync for WSGI, async for ASGI over anext_values()), health, OpenAPI, 404."""

from __future__ import annotations

import logging
from functools import partial

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from django_segment_seq.conf import app_settings
from django_segment_seq.db.bounded import bounded_when_used
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.table import Sequence
from django_segment_seq.service import answers
from django_segment_seq.service.admission import admit
from django_segment_seq.service.exchange import admit_on_thread, exchange
from django_segment_seq.service.handout import take
from django_segment_seq.service.openapi import document
from django_segment_seq.service.outcomes import RETRY_SECONDS, counted, failed, served
from django_segment_seq.service.requests import Target

logger = logging.getLogger("django_segment_seq.service")


@csrf_exempt  # bearer callers send no cookie; session callers' CSRF token is checked in authentication.py
def take_numbers(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    """POST .../next: numbers of a sequence, a field or a Snowflake layout, in one thread (WSGI)."""
    target, caller = Target(kind, name), None
    try:
        admission = admit(request, target)
        caller = admission.caller
        if admission.refusal is not None:
            return counted(caller, admission.refusal)
        assert caller is not None
        response: HttpResponse = served(caller, target, take(target, admission.count))
    except Exception as exc:  # noqa: BLE001 - every failure is answered in JSON (outcomes.failed)
        response = failed(exc, target)
    return counted(caller, response)


@csrf_exempt
async def atake_numbers(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    """take_numbers() for ASGI: checks on Django's sync thread, then a block from the cache without leaving the loop."""
    target = Target(kind, name)
    response = await exchange(target, partial(admit_on_thread, request, target))
    assert isinstance(response, HttpResponse)  # exchange() answers in Django's responses unless told otherwise
    return response


def check_database() -> HttpResponse:
    """200 when the sequence table answers a read now, else 503 with Retry-After."""
    alias = sequence_database()
    try:
        with bounded_when_used([alias]):  # a table held by another session: 503 within LOCK_TIMEOUT
            list(Sequence.objects.using(alias).values_list("pk")[:1])
    except Exception as exc:  # noqa: BLE001 - any failure means numbers cannot be handed out now
        logger.warning("ID service health: database %r does not answer: %s", alias, exc)
        return answers.later(503, "unavailable", f"Database {alias!r} does not answer.", RETRY_SECONDS)
    return JsonResponse({"status": "ok", "database": alias})


@csrf_exempt
def health(request: HttpRequest) -> HttpResponse:
    """GET health: whether numbers can be handed out now (no token needed; it hands out nothing)."""
    if request.method not in ("GET", "HEAD"):
        return answers.not_allowed("GET, HEAD")
    return check_database()


@csrf_exempt
async def ahealth(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        return answers.not_allowed("GET, HEAD")
    return await sync_to_async(check_database, thread_sensitive=True)()


@csrf_exempt
def openapi(request: HttpRequest) -> HttpResponse:
    """GET openapi.json: the OpenAPI 3.1 document of these endpoints, served under the include's prefix."""
    if request.method not in ("GET", "HEAD"):
        return answers.not_allowed("GET, HEAD")
    prefix = request.path[: -len("openapi.json")] if request.path.endswith("openapi.json") else "/"
    server = request.build_absolute_uri(prefix).rstrip("/")
    return JsonResponse(document(server, app_settings()["SERVICE_MAX_COUNT"]))


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under the include: a JSON 404, whatever the method."""
    return answers.answer(404, "not_found", "No such endpoint; see openapi.json.")
