"""Settings of the example shop: SQLite by default, any database through DATABASE_URL."""

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-a-secret")
DEBUG = True
ALLOWED_HOSTS = ["localhost", "127.0.0.1"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_segment_seq",
    # "django_segment_seq.service",  # the ID service, numbers over HTTP (docs/id-service.md)
    "shop",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "shop_site.urls"

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

# e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/example_shop or mysql://root@127.0.0.1:3306/example_shop
DATABASES = {"default": dj_database_url.config(default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite has one writer at a time: concurrent writers wait up to 20 s for the lock instead of failing,
    # and a transaction takes the lock at BEGIN, so it never has to upgrade a read lock (which SQLite
    # refuses at once while another writer commits).
    DATABASES["default"].setdefault("OPTIONS", {}).update(timeout=20, transaction_mode="IMMEDIATE")
    # The Sequence table in a file of its own, so ranges commit independently of the shop's transactions.
    sequences_file = Path(DATABASES["default"]["NAME"]).with_name("sequences.sqlite3")
    DATABASES["sequences"] = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(sequences_file),
        "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
    }
    DATABASE_ROUTERS = ["django_segment_seq.routers.SequenceRouter"]
elif DATABASES["default"]["ENGINE"] == "django.db.backends.mysql":
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("charset", "utf8mb4")

# Small ranges so each demo worker fetches several of them; real projects keep the default of 1000.
SEGMENT_SEQ = {"DEFAULT_STEP": 10}
if "sequences" in DATABASES:
    SEGMENT_SEQ["DATABASE"] = "sequences"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
