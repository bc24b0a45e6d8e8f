"""The ID service for WSGI projects: path("ids/", include("django_segment_seq.urls")); see docs/id-service.md."""

from __future__ import annotations

from django.urls import path, re_path

from django_segment_seq.service import views
from django_segment_seq.service.requests import FIELD, SEQUENCE, SNOWFLAKE

urlpatterns = [
    path("health", views.health, name="segment_seq_health"),
    path("openapi.json", views.openapi, name="segment_seq_openapi"),
    path("fields/<str:name>/next", views.take_numbers, {"kind": FIELD}, name="segment_seq_field_next"),
    path("snowflake/<str:name>/next", views.take_numbers, {"kind": SNOWFLAKE}, name="segment_seq_snowflake_next"),
    path("<str:name>/next", views.take_numbers, {"kind": SEQUENCE}, name="segment_seq_next"),
    re_path(r"^(?P<rest>[\s\S]*)$", views.not_found),
]
