"""The database server stopped (or crashed) and started again while processes allocate, on a private server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import ROOT, StressWorkers, assert_unique
from tests.support.servers import SERVERS, PrivateServer

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

# What a process that asks while the server is down must see once its retry budget is spent.
PROBE = """
import django
django.setup()
from django_segment_seq import next_value
next_value("probe")
"""


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateServer]:
    kind = SERVERS.get(settings.BACKEND)
    if kind is None:
        pytest.skip("SQLite has no server to stop")
    problem = kind.missing()
    if problem:
        message = f"cannot start a private {settings.BACKEND} server: {problem}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    workdir = Path(tempfile.mkdtemp(prefix=f"segseq-{settings.BACKEND}-"))
    os.chmod(workdir, 0o755)
    server: PrivateServer | None = None
    try:
        server = kind(workdir)
        server.start()
        yield server
    finally:
        try:
            if server is not None:
                server.stop()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.parametrize("crash", [False, True], ids=["stopped", "crashed"])
def test_server_down_and_up_while_processes_allocate(server, crash, tmp_path):
    database = f"restart_{int(crash)}"
    server.create_database(database)
    server.execute(
        "INSERT INTO django_segment_seq_sequence (name, value, step, min_value, max_value, cycle, created, modified) "
        "VALUES ('order', 0, 3, 1, 9223372036854775807, false, now(), now())",
        database,
    )
    url_env = {f"SEGMENT_SEQ_TEST_{server.backend.upper()}_URL": server.url(database)}
    workers = StressWorkers(tmp_path, database, **url_env)
    try:
        for _ in range(4):
            workers.start(1500, "--give-up-after", "120")
        _wait_for_progress(workers)
        server.stop(crash=crash)
        probe = _probe_while_down(workers.env)
        server.start()
        workers.wait()
    finally:
        workers.kill_all()
    assert "SequenceUnavailable: Sequence 'probe': database 'default' failed 3 times in a row" in probe
    figures = workers.figures()
    assert figures.get("failures", 0) + figures.get("worker_errors", 0) > 0, "the outage went unnoticed"
    assert_unique(workers.numbers())
    assert_unique(n for (n,) in server.execute("SELECT order_no FROM testapp_order", database))


def _wait_for_progress(workers: StressWorkers) -> None:
    deadline = time.monotonic() + 120
    while not any(out.exists() and out.stat().st_size > 0 for out in workers.outs):
        assert workers.running() and time.monotonic() < deadline, "the workers never started taking numbers"
        time.sleep(0.05)


def _probe_while_down(env: dict[str, str]) -> str:
    """stderr of a process that asks for a number while the server is down, with a retry budget of 2."""
    code = "from django.conf import settings\n" + PROBE.replace(
        "django.setup()\n", "django.setup()\nsettings.SEGMENT_SEQ = {'CONNECTION_RETRIES': 2, 'MAX_BACKOFF': 0.01}\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    return done.stderr
