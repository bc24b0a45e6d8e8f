"""The service project under ASGI with the service's fast path in front of Django (django_segment_seq.service.asgi)."""

import os

from django.core.asgi import get_asgi_application

from django_segment_seq.service.asgi import fast_ids

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.service_project.settings")
os.environ.setdefault("SERVICE_URLCONF", "tests.service_project.async_urls")
application = fast_ids(get_asgi_application())
