"""Test settings: one suite, run once per backend chosen by SEGMENT_SEQ_TEST_DB (sqlite, mariadb, postgres)."""

import os
import tempfile

import dj_database_url

BACKEND = os.environ.get("SEGMENT_SEQ_TEST_DB", "sqlite")

# Where each backend lives; override with SEGMENT_SEQ_TEST_<BACKEND>_URL.
DEFAULT_URLS = {
    "sqlite": "sqlite:///" + os.path.join(tempfile.gettempdir(), "django_segment_seq_tests.sqlite3"),
    "mariadb": "mysql://root@127.0.0.1:3306/test",
    "postgres": "postgres://postgres@127.0.0.1:5432/test",
}
if BACKEND not in DEFAULT_URLS:
    raise RuntimeError(f"SEGMENT_SEQ_TEST_DB must be one of {sorted(DEFAULT_URLS)}, not {BACKEND!r}")

database = dj_database_url.parse(os.environ.get(f"SEGMENT_SEQ_TEST_{BACKEND.upper()}_URL", DEFAULT_URLS[BACKEND]))
# A test database per run, so runs in parallel (several checkouts on one machine) never share one.
TEST_NAME = f"test_segment_seq_{os.getpid()}"
if BACKEND == "sqlite":
    # A file, not memory, so worker processes can open the test database too.
    database["TEST"] = {"NAME": os.path.join(tempfile.gettempdir(), TEST_NAME + ".sqlite3")}
    database["OPTIONS"] = {"timeout": 20}
elif BACKEND == "mariadb":
    database["TEST"] = {"NAME": TEST_NAME, "CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"}
    database["OPTIONS"] = {"charset": "utf8mb4"}
else:
    database["TEST"] = {"NAME": TEST_NAME}
    # Django's PostgreSQL backend with a cheaper flush between tests (tests/backends/postgresql/base.py).
    database["ENGINE"] = "tests.backends.postgresql"

# Worker processes started by the tests connect to the test database the parent created.
if os.environ.get("SEGMENT_SEQ_TEST_DB_SOCKET"):
    # A worker in a network namespace of its own reaches the suite's server through the server's Unix socket.
    database["HOST"], database["PORT"] = os.environ["SEGMENT_SEQ_TEST_DB_SOCKET"], ""
if os.environ.get("SEGMENT_SEQ_TEST_DB_NAME"):
    database["NAME"] = os.environ["SEGMENT_SEQ_TEST_DB_NAME"]
if os.environ.get("SEGMENT_SEQ_TEST_ISOLATION"):
    # A level by name, e.g. "read committed": a string for MariaDB, psycopg's IsolationLevel for PostgreSQL.
    level = os.environ["SEGMENT_SEQ_TEST_ISOLATION"]
    if BACKEND == "postgres" and level.startswith("default "):
        # psycopg applies isolation_level at BEGIN only; this makes the server apply it to autocommit statements too.
        database.setdefault("OPTIONS", {})["options"] = "-c default_transaction_isolation=" + level[8:].replace(
            " ", "\\ "
        )
        level = level[8:]
    if BACKEND == "postgres":
        try:
            from psycopg import IsolationLevel
        except ImportError:  # psycopg2 (the psycopg2 cell): its levels are module constants
            from psycopg2 import extensions

            level = getattr(extensions, "ISOLATION_LEVEL_" + level.upper().replace(" ", "_"))
        else:
            level = IsolationLevel[level.upper().replace(" ", "_")]
    database.setdefault("OPTIONS", {})["isolation_level"] = level

if os.environ.get("SEGMENT_SEQ_TEST_AUTOCOMMIT") == "0":
    # Projects that run every request in a transaction they commit themselves.
    database["AUTOCOMMIT"] = False
if BACKEND == "postgres" and os.environ.get("SEGMENT_SEQ_TEST_PG_POOL"):
    # Django's own connection pool (psycopg_pool), with its options as JSON, e.g. '{"max_size": 1}'.
    import json

    database.setdefault("OPTIONS", {})["pool"] = json.loads(os.environ["SEGMENT_SEQ_TEST_PG_POOL"])
if BACKEND == "sqlite" and os.environ.get("SEGMENT_SEQ_TEST_SQLITE_TRANSACTION_MODE"):
    # Django 5.1+: "IMMEDIATE" makes every atomic block take SQLite's write lock at BEGIN.
    database.setdefault("OPTIONS", {})["transaction_mode"] = os.environ["SEGMENT_SEQ_TEST_SQLITE_TRANSACTION_MODE"]

DATABASES = {"default": database}
if BACKEND == "sqlite":
    # A second file for the tests that keep the Sequence table apart from the data (SequenceRouter).
    DATABASES["sequences"] = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.path.join(tempfile.gettempdir(), "django_segment_seq_tests_sequences.sqlite3"),
        "OPTIONS": {"timeout": 20},
        "TEST": {"NAME": os.path.join(tempfile.gettempdir(), TEST_NAME + "_sequences.sqlite3")},
    }

SECRET_KEY = "tests-only"
USE_TZ = True
TIME_ZONE = "Europe/Paris"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_segment_seq",
    "django_segment_seq.service",  # the ID service (its client table, admin and permission)
    "tests.testapp",
    "sequences",  # django-sequences, whose rows `segment_seq import-sequences` carries over
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.urls"
STATIC_URL = "/static/"  # the admin's styles, served by the live server of the browser tests
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
# CONCEAL_KEY: a test key for the fields with conceal=True (a project reads its own from the environment).
SEGMENT_SEQ = {"MAX_BACKOFF": 0.05, "CONCEAL_KEY": "00112233445566778899aabbccddeeff"}
# The suite's exact-count tests assume one foreground fetch per range; tests of prefetch and the
# adaptive step switch them on themselves (and worker processes with SEGMENT_SEQ_TEST_PREFETCH=1).
SEGMENT_SEQ.update(PREFETCH=False, ADAPTIVE_STEP=False)
if os.environ.get("SEGMENT_SEQ_TEST_PREFETCH"):
    SEGMENT_SEQ.update(PREFETCH=True, ADAPTIVE_STEP=True, PREFETCH_AT=0.2)
if os.environ.get("SEGMENT_SEQ_TEST_SETTINGS"):
    # Extra SEGMENT_SEQ keys for one worker process, as JSON, e.g. '{"CONNECTION_MAX_IDLE": 0.5}'.
    import json

    SEGMENT_SEQ.update(json.loads(os.environ["SEGMENT_SEQ_TEST_SETTINGS"]))

# Superusers are created for many admin tests: PBKDF2's deliberate cost is wasted time here.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if BACKEND == "sqlite" and os.environ.get("SEGMENT_SEQ_TEST_SEQUENCES_DB_NAME"):
    # A worker keeping the Sequence table in the test's second file (SequenceRouter), as prefetch on SQLite needs.
    DATABASES["sequences"]["NAME"] = os.environ["SEGMENT_SEQ_TEST_SEQUENCES_DB_NAME"]
    DATABASE_ROUTERS = ["django_segment_seq.routers.SequenceRouter"]
    SEGMENT_SEQ["DATABASE"] = "sequences"
