"""RemoteSequence against a small stand-in server (the standard library's): prefetch, bounded retries, refusals;
and its import pulls in no Django. tests/processes/test_id_service.py runs it against the real service."""

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from django_segment_seq.service.remote import RemoteError, RemoteSequence, RemoteUnavailable
from tests.support.servers import ROOT


class StandIn:
    """Answers each POST with the next scripted status (then 200s), handing out consecutive blocks; a 200 sends the
    next of `bodies` as it is while there are some."""

    def __init__(self, script: list[int], bodies: list[bytes] = ()) -> None:
        self.script, self.bodies, self.requests, self.next = list(script), list(bodies), [], 1
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                count = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["count"]
                owner.requests.append((time.monotonic(), self.headers["Authorization"]))
                status = owner.script.pop(0) if owner.script else 200
                body: dict = {"error": "x", "detail": "scripted"}
                if status == 200 and not owner.bodies:
                    body = {"first": owner.next, "last": owner.next + count - 1}
                    owner.next += count
                data = owner.bodies.pop(0) if status == 200 and owner.bodies else json.dumps(body).encode()
                self.send_response(status)
                if status in (429, 503):
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/ids/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in():
    made = []

    def make(script: list[int] = (), bodies: list[bytes] = ()) -> StandIn:
        made.append(StandIn(list(script), list(bodies)))
        return made[-1]

    yield make
    for server in made:
        server.close()


def test_numbers_come_in_order_and_the_next_block_is_fetched_ahead(stand_in):
    server = stand_in()
    remote = RemoteSequence(server.url, "ssq_t", "order", count=10, prefetch_at=0.2)
    taken = [remote.next() for _ in range(3)]
    deadline = time.monotonic() + 5
    while len(server.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert taken == [1, 2, 3] and len(server.requests) == 2  # the second block asked for while 7 were left
    assert [remote.next() for _ in range(17)] == list(range(4, 21))
    assert server.requests[0][1] == "Bearer ssq_t"


def test_503_and_429_are_retried_then_a_block_comes(stand_in):
    server = stand_in([503, 429])
    remote = RemoteSequence(server.url, "t", "order", count=5, retries=3, prefetch_at=1)
    assert remote.next() == 1 and len(server.requests) == 3


def test_retries_are_bounded(stand_in):
    server = stand_in([503] * 10)
    remote = RemoteSequence(server.url, "t", "order", retries=2, backoff=0.01, prefetch_at=1)
    with pytest.raises(RemoteUnavailable, match="3 attempts"):
        remote.next()
    assert len(server.requests) == 3


MALFORMED = [b"[]", b"{}", b"null", b'{"first": 5}', b'{"first": 9, "last": 3}', b'{"first": "a", "last": 2}',
             b'{"first": true, "last": 2}', b'{"first": 1.5, "last": 2}', b"<html>proxy</html>"]  # fmt: skip


@pytest.mark.parametrize("body", MALFORMED)
def test_a_200_without_a_block_is_retried_and_named_never_a_traceback(stand_in, body):
    # Before: KeyError or TypeError out of next() for the JSON that is not a block; an inverted one was taken as empty.
    server = stand_in(bodies=[body] * 2)
    remote = RemoteSequence(server.url, "t", "order", retries=1, backoff=0.01, prefetch_at=1)
    with pytest.raises(RemoteUnavailable, match="2 attempts; last: MalformedBlock: a 200 without a block"):
        remote.next()
    assert remote.next() == 1 and len(server.requests) == 3  # the server mended: the next request's block


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409])
def test_a_refusal_is_not_retried(stand_in, status):
    server = stand_in([status])
    with pytest.raises(RemoteError) as refused:
        RemoteSequence(server.url, "t", "order", prefetch_at=1).next()
    assert refused.value.status == status and len(server.requests) == 1


def test_a_server_that_does_not_answer_times_out_and_is_retried():
    import socket

    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/ids/"
        started = time.monotonic()
        with pytest.raises(RemoteUnavailable):
            RemoteSequence(url, "t", "order", timeout=0.3, retries=1, backoff=0.01).next()
        assert time.monotonic() - started < 5


def test_importing_the_client_needs_no_django():
    code = (
        "import sys; sys.modules['django'] = None; "
        "import django_segment_seq.service.remote as r; print(r.RemoteSequence)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "RemoteSequence" in out.stdout
