"""The service project with the `default` cache in each process's memory, for benchmarks/service_paths.py: a rate
counted on the event loop (each worker process counts its own requests, as Django's view does on this cache)."""

from tests.service_project.settings import *  # noqa: F403

CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
