"""The fast path on the service project with the `default` cache in memory (benchmarks/memory_settings.py), for
benchmarks/service_paths.py: what counting a rate costs when it is counted without leaving the event loop."""

from __future__ import annotations

import os

os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.memory_settings"

from tests.service_project.fast_asgi import application  # after the settings module it reads is named

__all__ = ["application"]
