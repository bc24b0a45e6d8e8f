"""The ID service's routes, one list for the WSGI and the ASGI URLconf, which differ only in their views."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern, path, re_path

from django_segment_seq.service import views
from django_segment_seq.service.requests import FIELD, SEQUENCE, SNOWFLAKE


def routes(health: Callable[..., Any], take_numbers: Callable[..., Any]) -> list[URLPattern]:
    """Health, the OpenAPI document, the three kinds of block, and a JSON 404 for anything else under the include.

    Refused when the service app is not installed: its client table would be missing, or left over and unmigrated.
    """
    if not apps.is_installed("django_segment_seq.service"):
        raise ImproperlyConfigured(
            'The ID service\'s URLconf is included but "django_segment_seq.service" is not in INSTALLED_APPS: add it '
            'after "django_segment_seq" and run migrate (see docs/id-service.md).'
        )
    return [
        path("health", health, name="segment_seq_health"),
        path("openapi.json", views.openapi, name="segment_seq_openapi"),
        path("fields/<str:name>/next", take_numbers, {"kind": FIELD}, name="segment_seq_field_next"),
        path("snowflake/<str:name>/next", take_numbers, {"kind": SNOWFLAKE}, name="segment_seq_snowflake_next"),
        path("<str:name>/next", take_numbers, {"kind": SEQUENCE}, name="segment_seq_next"),
        re_path(r"^(?P<rest>[\s\S]*)$", views.not_found),
    ]
