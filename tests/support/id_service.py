"""The ID service under a real server for the tests: gunicorn (sync workers), uvicorn (async views) or uvicorn with
the fast path in front of Django ("fast"), on a free loopback port, and HTTP callers that collect every number handed
out."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path

from tests.support.servers import ROOT, free_port

START_TIMEOUT = 30


# The ASGI application each uvicorn kind serves.
ASGI_APPLICATIONS = {
    "uvicorn": "tests.service_project.asgi:application",
    "fast": "tests.service_project.fast_asgi:application",
}


class LiveServer:
    """One server process group; `stop()` ends it; `worker_pids()` names its workers, to kill one."""

    def __init__(self, kind: str, env: dict[str, str], log: Path, workers: int = 3, ready: int = 200) -> None:
        self.kind, self.env, self.log, self.workers = kind, env, log, workers
        self.ready = ready  # the health status that says the server is up: 503 for a server whose database is away
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ids/"

    def command(self) -> list[str]:
        bind = f"127.0.0.1:{self.port}"
        if self.kind == "gunicorn":
            return [sys.executable, "-m", "gunicorn", "-w", str(self.workers), "-b", bind, "--timeout", "30",
                    "--graceful-timeout", "3", "tests.service_project.wsgi:application"]  # fmt: skip
        return [sys.executable, "-m", "uvicorn", ASGI_APPLICATIONS[self.kind], "--host", "127.0.0.1",
                "--port", str(self.port), "--workers", str(self.workers), "--log-level", "warning"]  # fmt: skip

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                self.command(), cwd=ROOT, env=self.env, stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited: {self.log.read_text()[-3000:]}")
            try:
                if call(self.url + "health", method="GET", timeout=2)[0] == self.ready:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.kind} did not answer in {START_TIMEOUT} s: {self.log.read_text()[-3000:]}")

    def worker_pids(self) -> list[int]:
        assert self.proc is not None
        return [pid for pid, state, parent, _group in processes() if parent == self.proc.pid and state != "Z"]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):  # workers left behind by a master that died first
            os.killpg(self.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.live_in_group() and time.monotonic() < deadline:
            time.sleep(0.05)

    def live_in_group(self) -> list[int]:
        """The processes of the server's group still running (not zombies waiting to be reaped)."""
        assert self.proc is not None
        return [pid for pid, state, _parent, group in processes() if group == self.proc.pid and state != "Z"]


def processes() -> list[tuple[int, str, int, int]]:
    """Every process as (pid, state, parent pid, process group), read from /proc (no procps needed)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended meanwhile
            continue
        fields = text[text.rindex(")") + 2 :].split()  # after "pid (command) "
        found.append((int(stat.parent.name), fields[0], int(fields[1]), int(fields[2])))
    return found


def call(
    url: str, body: object = None, token: str | None = None, method: str = "POST", timeout: float = 10
) -> tuple[int, Message, bytes]:
    """One request: its status, headers (looked up whatever their case: httptools sends them in lower case) and body
    (an HTTP error is an answer too)."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def raw(
    port: int, method: str, path: str, headers: dict[str, str], body: bytes, source: str = "127.0.0.1"
) -> tuple[int, bytes]:
    """A request as sent, with no client-side checks of the method, path or headers; from loopback address `source`
    (any of 127.0.0.0/8), so a test's failed authentications are counted apart from the others'."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", "127.0.0.1")
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@dataclass
class Load:
    """What concurrent callers got: every block, and the requests that failed (a server away) or were refused."""

    blocks: list[tuple[int, int]] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def numbers(self) -> list[int]:
        return [number for first, last in self.blocks for number in range(first, last + 1)]


def load(url: str, token: str, clients: int, seconds: float, during: object = None) -> Load:
    """`clients` threads asking for blocks of 1 to 50 numbers for `seconds`; `during()` runs once, midway."""
    result = Load()
    stop = time.monotonic() + seconds

    def caller(seed: int) -> None:
        count = seed
        while time.monotonic() < stop:
            count = count * 7 % 50 + 1
            try:
                status, _headers, body = call(url, {"count": count}, token, timeout=15)
            except (OSError, http.client.HTTPException):  # refused, reset, or cut short by a worker killed mid-answer
                with result.lock:
                    result.errors += 1
                time.sleep(0.05)
                continue
            with result.lock:
                result.statuses[status] = result.statuses.get(status, 0) + 1
                if status == 200:
                    answer = json.loads(body)
                    assert answer["last"] - answer["first"] + 1 == count
                    result.blocks.append((answer["first"], answer["last"]))

    threads = [threading.Thread(target=caller, args=(index,)) for index in range(clients)]
    for thread in threads:
        thread.start()
    if callable(during):
        time.sleep(seconds / 2)
        during()
    for thread in threads:
        thread.join(timeout=seconds + 60)
        assert not thread.is_alive(), "a caller hung"
    return result
