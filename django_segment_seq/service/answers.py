"""The service's JSON answers: each refusal with its status, a machine-readable error and a sentence."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse


def answer(status: int, error: str, detail: str, **extra: Any) -> JsonResponse:
    """An error answer: {"error": code, "detail": sentence, ...extra}."""
    return JsonResponse({"error": error, "detail": detail, **extra}, status=status)


def unauthorized() -> JsonResponse:
    """The one answer to every missing, malformed, unknown, revoked or expired token."""
    response = answer(401, "unauthorized", "Send a valid token: Authorization: Bearer <token>.")
    response["WWW-Authenticate"] = 'Bearer realm="ids"'
    return response


def bad_request(field: str, detail: str) -> JsonResponse:
    return answer(400, "bad_request", detail, field=field)


def later(status: int, error: str, detail: str, seconds: int) -> JsonResponse:
    """A 429 or 503 saying when to try again."""
    response = answer(status, error, detail, retry_after=seconds)
    response["Retry-After"] = str(seconds)
    return response


def not_allowed(allowed_methods: str) -> JsonResponse:
    response = answer(405, "method_not_allowed", f"Use {allowed_methods}.")
    response["Allow"] = allowed_methods
    return response
