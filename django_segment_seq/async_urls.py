"""The ID service for ASGI projects: path("ids/", include("django_segment_seq.async_urls")); async views that take
blocks from the in-process cache (anext_values()) without leaving the event loop."""

from __future__ import annotations

from django.urls import path, re_path

from django_segment_seq.service import views
from django_segment_seq.service.requests import FIELD, SEQUENCE, SNOWFLAKE

urlpatterns = [
    path("health", views.ahealth, name="segment_seq_health"),
    path("openapi.json", views.openapi, name="segment_seq_openapi"),
    path("fields/<str:name>/next", views.atake_numbers, {"kind": FIELD}, name="segment_seq_field_next"),
    path("snowflake/<str:name>/next", views.atake_numbers, {"kind": SNOWFLAKE}, name="segment_seq_snowflake_next"),
    path("<str:name>/next", views.atake_numbers, {"kind": SEQUENCE}, name="segment_seq_next"),
    re_path(r"^(?P<rest>[\s\S]*)$", views.not_found),
]
