"""The service's system check: its views, command and admin read the core app's tables and settings, so the
service app alone would fail at its first request instead of at `manage.py check`."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core import checks

CORE_APP = "django_segment_seq"


@checks.register()
def check_core_app_installed(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if apps.is_installed(CORE_APP):
        return []
    return [
        checks.Error(
            '"django_segment_seq.service" is in INSTALLED_APPS without "django_segment_seq": the ID service hands '
            "out the core app's numbers and its migrations depend on the core app's.",
            hint='Add "django_segment_seq" to INSTALLED_APPS, before "django_segment_seq.service".',
            id="django_segment_seq.E070",
        )
    ]
