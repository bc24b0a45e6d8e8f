"""What the benchmarks share: Django set up on a scratch database of one backend, the servers they reach, and
worker processes started together."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from typing import Any


def database_settings(db: str, name: str | None) -> dict[str, Any]:
    """Where each backend lives; the same servers the test suite uses."""
    scratch = f"bench_segment_seq_{os.getpid()}"
    if db == "sqlite":
        path = name or os.path.join(tempfile.gettempdir(), scratch + ".sqlite3")
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            "OPTIONS": {"timeout": 30},
            "TEST": {"NAME": path},
        }
    if db == "mariadb":
        return server(
            db,
            {
                "ENGINE": "django.db.backends.mysql",
                "HOST": os.environ.get("SEGMENT_SEQ_BENCH_MARIADB_HOST", "127.0.0.1"),
                "PORT": 3306,
                "USER": "root",
                "NAME": name or "test",
                "OPTIONS": {"charset": "utf8mb4"},
                "TEST": {"NAME": scratch, "CHARSET": "utf8mb4"},
            },
        )
    if db == "postgres":
        return server(
            db,
            {
                "ENGINE": "django.db.backends.postgresql",
                "HOST": os.environ.get("SEGMENT_SEQ_BENCH_POSTGRES_HOST", "127.0.0.1"),
                "PORT": 5432,
                "USER": "postgres",
                "NAME": name or "test",
                "TEST": {"NAME": scratch},
            },
        )
    raise SystemExit(f"--db must be sqlite, mariadb or postgres, not {db!r}")


def server(db: str, found: dict[str, Any]) -> dict[str, Any]:
    """The server named by SEGMENT_SEQ_TEST_<DB>_URL, the variable the test suite reads, when it is set."""
    url = os.environ.get(f"SEGMENT_SEQ_TEST_{db.upper()}_URL")
    if url:
        import dj_database_url

        parsed = dj_database_url.parse(url)
        for key in ("HOST", "PORT", "USER", "PASSWORD"):
            if parsed.get(key):
                found[key] = parsed[key]
    return found


def start_together(procs: list[subprocess.Popen[str]], kind: str) -> list[dict[str, Any]]:
    """Wait until every worker says "ready", release them all at once, and return each one's last JSON line."""
    for proc in procs:
        if proc.stdout.readline().strip() != "ready":  # type: ignore[union-attr]
            raise RuntimeError(f"{kind} worker did not start (exit {proc.wait(60)})")
    for proc in procs:
        proc.stdin.write("go\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"{kind} worker failed (exit {proc.returncode})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@contextlib.contextmanager
def scratch_database(db: str) -> Iterator[Any]:
    """Django set up on `db` with a throw-away database, dropped afterwards with every connection the run opened."""
    setup_django(db, None)
    from django.db import connection

    from django_segment_seq import close_connections, wait_for_prefetch

    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        yield connection
    finally:
        wait_for_prefetch(30)
        close_connections()
        connection.close()
        connection.creation.destroy_test_db(old_name, verbosity=0)


def setup_django(db: str, name: str | None, segment_seq: dict[str, Any] | None = None) -> None:
    """Configure Django for a benchmark process: the one database, the app, django-sequences and the bench models."""
    import django
    from django.conf import settings

    settings.configure(
        DATABASES={"default": database_settings(db, name)},
        INSTALLED_APPS=["django_segment_seq", "sequences", "benchmarks.benchapp.apps.BenchAppConfig"],
        USE_TZ=True,
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        SEGMENT_SEQ=segment_seq or {},
    )
    django.setup()


def version(connection: Any) -> str:
    """The database server's version, as the tables print it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT sqlite_version()" if connection.vendor == "sqlite" else "SELECT version()")
        return str(cursor.fetchone()[0]).split(" on ")[0][:40]
