"""Run the user project (tests/userproject) as its owners would: manage.py commands in a subprocess, on a scratch DB.

`UserProject.manage("migrate")` runs one command with a timeout and returns its exit status, output
and duration. The database is created for one test and dropped after it (a fresh SQLite file there),
on the backend the suite runs on; no other database is opened.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dj_database_url

from tests.conftest import ROOT

PROJECT_DIR = ROOT / "tests" / "userproject"
DEFAULT_TIMEOUT = 300
_numbers = itertools.count(1)


@dataclass
class Run:
    """One finished command: what it was, its exit status, its output and how long it took."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def check(self) -> Run:
        """This run, if it succeeded; else an AssertionError carrying its output."""
        assert self.returncode == 0, f"{' '.join(self.args)} exited with {self.returncode}:\n{self.output}"
        return self


class UserProject:
    """The user project bound to one throw-away database of one backend."""

    def __init__(self, backend: str, db_name: str) -> None:
        self.backend = backend
        self.db_name = db_name
        self.directory = PROJECT_DIR

    def env(self, **extra: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
        env.update(
            SEGMENT_SEQ_TEST_DB=self.backend,
            SEGMENT_SEQ_TEST_DB_NAME=self.db_name,
            PYTHONPATH=os.pathsep.join([str(self.directory), str(ROOT)]),
        )
        env.update(extra)
        return env

    def run(self, *argv: str, timeout: float = DEFAULT_TIMEOUT, **env: str) -> Run:
        """Run any program in the project's directory with its settings (e.g. `python -m pytest` later)."""
        started = time.perf_counter()
        done = subprocess.run(
            list(argv), cwd=self.directory, env=self.env(**env), capture_output=True, text=True, timeout=timeout
        )
        return Run(list(argv), done.returncode, done.stdout, done.stderr, time.perf_counter() - started)

    def manage(self, *args: str, timeout: float = DEFAULT_TIMEOUT, **env: str) -> Run:
        """`python manage.py ARGS` of the user project."""
        return self.run(sys.executable, "manage.py", *args, timeout=timeout, **env)


def server_url(backend: str) -> dict[str, Any]:
    """The server the suite's settings point at for `backend` (SEGMENT_SEQ_TEST_<BACKEND>_URL or the default)."""
    from tests.settings import DEFAULT_URLS

    return dj_database_url.parse(os.environ.get(f"SEGMENT_SEQ_TEST_{backend.upper()}_URL", DEFAULT_URLS[backend]))


@contextmanager
def throwaway_database(backend: str, directory: Path) -> Iterator[str]:
    """Create a database (a SQLite file in `directory`) for one test, yield its name, and drop it afterwards."""
    name = f"test_segment_seq_user_{os.getpid()}_{next(_numbers)}"
    if backend == "sqlite":
        yield str(directory / f"{name}.sqlite3")
        return
    _admin_sql(backend, f"CREATE DATABASE {name}" + (" CHARACTER SET utf8mb4" if backend == "mariadb" else ""))
    try:
        yield name
    finally:
        _admin_sql(backend, f"DROP DATABASE IF EXISTS {name}" + (" WITH (FORCE)" if backend == "postgres" else ""))
        # `manage.py test` makes <name>_test and drops it itself; a run killed by its timeout may leave it.
        _admin_sql(backend, f"DROP DATABASE IF EXISTS {name}_test" + (" WITH (FORCE)" if backend == "postgres" else ""))


def _admin_sql(backend: str, statement: str) -> None:
    """One statement on the server's maintenance connection, outside any transaction."""
    url = server_url(backend)
    if backend == "mariadb":
        import MySQLdb

        connection = MySQLdb.connect(
            host=url["HOST"] or "127.0.0.1",
            port=int(url["PORT"] or 3306),
            user=url["USER"],
            password=url["PASSWORD"] or "",
        )
        try:
            connection.cursor().execute(statement)
        finally:
            connection.close()
    else:
        import psycopg

        with psycopg.connect(
            host=url["HOST"] or "127.0.0.1",
            port=int(url["PORT"] or 5432),
            user=url["USER"],
            password=url["PASSWORD"] or None,
            dbname="postgres",
            autocommit=True,
        ) as connection:
            connection.execute(statement)
