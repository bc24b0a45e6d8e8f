"""Fixtures of the Redis tier tests: private redis-server processes on free ports, and worker processes using them.

Under CI=true a Redis that cannot start fails the test; elsewhere the test is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, worker_env
from tests.support import redis_servers
from tests.support.redis_servers import RedisServer


def require_redis() -> None:
    problem = redis_servers.missing()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI runs the Redis tier tests and cannot here: {problem}")
        pytest.skip(problem)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[RedisServer]]:
    """Redis servers a test starts (servers.append(...)); every one is killed at the end, failed tests included."""
    require_redis()
    started: list[RedisServer] = []
    yield started
    for server in started:
        server.kill()


@pytest.fixture
def redis_server(servers: list[RedisServer], tmp_path: Path) -> RedisServer:
    server = RedisServer(tmp_path / "redis").start()
    servers.append(server)
    return server


def tier(location: str | None = None, **extra: object) -> dict[str, object]:
    """A REDIS setting for the tests: small super-segments and blocks, so a few seconds see many refills."""
    settings: dict[str, object] = {
        "SEQUENCES": ["r*", "day@*"],
        "SUPER_STEP": 2_000,
        "SUPER_STEPS": {"day@*": 50},
        "MAX_BLOCK": 10,
        "RETRY_AFTER": 0.2,
        "OPTIONS": {"socket_timeout": 0.5, "socket_connect_timeout": 0.3},
    }
    if location:
        settings["LOCATION"] = location
    settings.update(extra)
    return settings


class TierWorkers:
    """Worker processes (tests/redis/worker.py) taking numbers through the tier for some seconds."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.procs: list[tuple[subprocess.Popen[str], Path]] = []

    def start(self, count: int, seconds: float, names: list[str], redis: dict[str, object], pause: float = 0) -> None:
        settings = json.dumps({"REDIS": redis})
        env = worker_env(
            SEGMENT_SEQ_TEST_PREFETCH="1", SEGMENT_SEQ_TEST_SETTINGS=settings, SEGMENT_SEQ_TEST_PAUSE=str(pause)
        )
        for _ in range(count):
            out = self.tmp_path / f"tier{len(self.procs)}.txt"
            command = [sys.executable, "-m", "tests.redis.worker", str(out), str(seconds), *names]
            proc = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
            self.procs.append((proc, out))

    def wait(self, timeout: float = 120) -> tuple[dict[str, list[int]], dict[str, int]]:
        """Every worker's numbers per row, and their tier figures added up; a worker that failed fails the test."""
        numbers: dict[str, list[int]] = {}
        figures: dict[str, int] = {}
        for proc, out in self.procs:
            _, err = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, f"worker failed:\n{err[-3000:]}"
            for line in out.read_text().split("\n"):
                if line:
                    name, number = line.split()
                    numbers.setdefault(name, []).append(int(number))
            for field, value in json.loads(Path(str(out) + ".json").read_text()).items():
                figures[field] = figures.get(field, 0) + value
        return numbers, figures

    def kill(self) -> None:
        for proc, _ in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.fixture
def tier_workers(transactional_db, tmp_path: Path) -> Iterator[TierWorkers]:
    workers = TierWorkers(tmp_path)
    yield workers
    workers.kill()
