"""The ID service for WSGI projects: path("ids/", include("django_segment_seq.service.urls")); see
docs/id-service.md."""

from __future__ import annotations

from django_segment_seq.service import views
from django_segment_seq.service.routes import routes

urlpatterns = routes(views.health, views.take_numbers)
