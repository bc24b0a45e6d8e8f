"""The test settings, served over HTTP: the service under /ids/ (WSGI) or /ids/ (ASGI, async views), a cache shared
by the server's processes (a directory), no debug pages."""

import os

from tests.settings import *  # noqa: F403

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = os.environ.get("SERVICE_URLCONF", "tests.service_project.urls")
# The rate limits count in a cache every worker process shares.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": os.environ.get("SERVICE_CACHE_DIR", "/tmp/segment_seq_service_cache"),
    }
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_segment_seq.service": {"handlers": ["console"], "level": "INFO"}},
}
