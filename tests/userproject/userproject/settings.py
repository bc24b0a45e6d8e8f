"""Settings of the user project: the backend and the database name come from the environment, as in tests/settings.py.

SEGMENT_SEQ_TEST_DB picks sqlite, mariadb or postgres; SEGMENT_SEQ_TEST_DB_NAME names the database (a
file path for SQLite), which the test suite creates for one run and drops after it. There is no default
name, so the project can never open a database nobody made for it.
"""

import os

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BACKEND = os.environ.get("SEGMENT_SEQ_TEST_DB", "sqlite")
SERVER_URLS = {
    "sqlite": "sqlite:///unused.sqlite3",
    "mariadb": "mysql://root@127.0.0.1:3306/unused",
    "postgres": "postgres://postgres@127.0.0.1:5432/unused",
}
if BACKEND not in SERVER_URLS:
    raise ImproperlyConfigured(f"SEGMENT_SEQ_TEST_DB must be one of {sorted(SERVER_URLS)}, not {BACKEND!r}")
NAME = os.environ.get("SEGMENT_SEQ_TEST_DB_NAME")
if not NAME:
    raise ImproperlyConfigured("Set SEGMENT_SEQ_TEST_DB_NAME to the throw-away database (or SQLite file) to use.")

database = dj_database_url.parse(os.environ.get(f"SEGMENT_SEQ_TEST_{BACKEND.upper()}_URL", SERVER_URLS[BACKEND]))
database["NAME"] = NAME
if BACKEND == "sqlite":
    # A file for `manage.py test` too: the allocator's own connections cannot see an in-memory database.
    database["TEST"] = {"NAME": NAME.removesuffix(".sqlite3") + "_test.sqlite3"}
    database["OPTIONS"] = {"timeout": 20}
elif BACKEND == "mariadb":
    database["TEST"] = {"NAME": NAME + "_test", "CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"}
    database["OPTIONS"] = {"charset": "utf8mb4"}
else:
    database["TEST"] = {"NAME": NAME + "_test"}
DATABASES = {"default": database}

SECRET_KEY = "user-project-tests-only"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "localhost"]
USE_TZ = True
TIME_ZONE = "Europe/Paris"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django_segment_seq",
    "shop",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "userproject.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
TEST_RUNNER = "userproject.runner.TestRunner"
