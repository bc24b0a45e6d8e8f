import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.service_project.settings")
os.environ.setdefault("SERVICE_URLCONF", "tests.service_project.async_urls")
application = get_asgi_application()
