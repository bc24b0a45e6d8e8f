"""The ID service for ASGI projects: path("ids/", include("django_segment_seq.service.async_urls")); async views
that take blocks from the in-process cache (anext_values()) without leaving the event loop."""

from __future__ import annotations

from django_segment_seq.service import views
from django_segment_seq.service.routes import routes

urlpatterns = routes(views.ahealth, views.atake_numbers)
