"""RemoteSequence against a small stand-in server (the standard library's): prefetch, bounded retries, refusals;
and its import pulls in no Django. tests/processes/test_id_service.py runs it against the real service."""

import json
import re
import socket
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


class RawServer:
    """A threaded socket server on 127.0.0.1 that reads each request and answers it with the next of `replies`, bytes
    sent as they are (then a good block), closing the connection after each: odd replies no HTTP server would send."""

    def __init__(self, replies: list[bytes]) -> None:
        self.replies, self.requests, self.next = list(replies), 0, 1
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/ids/"
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                peer, _address = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self.answer, args=(peer,), daemon=True).start()

    def answer(self, peer: socket.socket) -> None:
        with peer:
            count = read_request(peer)
            with self.lock:
                self.requests += 1
                reply = self.replies.pop(0) if self.replies else None
                if reply is None:
                    body = json.dumps({"first": self.next, "last": self.next + count - 1}).encode()
                    self.next += count
                    reply = reply_bytes(b"200 OK", body)
            peer.sendall(reply)
            peer.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()


def read_request(peer: socket.socket) -> int:
    """Read a request's head and body from `peer`; the count it asks for."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += peer.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length:\s*(\d+)", head)[1])
    while len(body) < length:
        body += peer.recv(65536)
    return int(json.loads(body)["count"])


def reply_bytes(status: bytes, body: bytes, headers: bytes = b"", length: int | None = None) -> bytes:
    """A whole HTTP/1.1 reply; `length` another Content-Length than the body's own (a body cut short)."""
    size = len(body) if length is None else length
    head = b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nConnection: close\r\n" + headers
    return head + b"Content-Length: %d\r\n\r\n" % size + body


@pytest.fixture
def raw_server():
    made = []

    def make(replies: list[bytes]) -> RawServer:
        made.append(RawServer(replies))
        return made[-1]

    yield make
    for server in made:
        server.close()


BLOCK = b'{"first": 1, "last": 100}'
ODD_REPLIES = {
    # A 200 whose body is cut short: http.client.IncompleteRead.
    "cut-short": reply_bytes(b"200 OK", BLOCK[:10], length=len(BLOCK)),
    # A 503 whose body is cut short: its status says enough.
    "cut-short-503": reply_bytes(b"503 Service Unavailable", b'{"detail"', length=40),
    # Not HTTP at all: http.client.BadStatusLine.
    "not-http": b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
    # 120 header lines: HTTPException("got more than 100 headers").
    "120-headers": reply_bytes(b"200 OK", BLOCK, b"".join(b"X-Filler-%d: x\r\n" % n for n in range(120))),
    # A header line longer than http.client reads: LineTooLong.
    "long-header": reply_bytes(b"200 OK", BLOCK, b"X-Long: " + b"x" * 70_000 + b"\r\n"),
    # A chunked body that stops mid-chunk.
    "cut-chunk": b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n40\r\n{"first"',
}


@pytest.mark.parametrize("reply", list(ODD_REPLIES))
def test_an_odd_reply_is_an_outage_retried_then_unavailable_never_a_traceback(raw_server, reply):
    # Before: IncompleteRead, BadStatusLine, HTTPException and LineTooLong came out of next() on the first attempt.
    server = raw_server([ODD_REPLIES[reply]] * 2)
    remote = RemoteSequence(server.url, "t", "order", retries=1, backoff=0.01, prefetch_at=1, timeout=5)
    with pytest.raises(RemoteUnavailable, match="no block after 2 attempts"):
        remote.next()
    assert server.requests == 2
    assert remote.next() == 1 and server.requests == 3  # the server mended: the next request's block


@pytest.mark.parametrize("reply", list(ODD_REPLIES))
def test_an_odd_reply_to_the_fetch_ahead_prints_no_traceback(raw_server, reply, monkeypatch, capsys):
    # Before: the background thread died with the exception, and threading's hook printed its traceback.
    hooked = []
    monkeypatch.setattr(threading, "excepthook", hooked.append)
    server = raw_server([reply_bytes(b"200 OK", b'{"first": 1, "last": 10}'), ODD_REPLIES[reply]])
    remote = RemoteSequence(server.url, "t", "order", count=10, retries=0, backoff=0.01, prefetch_at=0.2)
    assert [remote.next() for _ in range(10)] == list(range(1, 11))  # the fetch ahead failed: one more in front
    assert remote.next() == 1 and server.requests == 3
    assert hooked == [] and "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("retry_after", "waits_most"), [("-1", False), ("-inf", False), ("nan", False),
                                                          ("inf", True), ("1e999", True), ("soon", False)])  # fmt: skip
def test_a_bad_retry_after_is_clamped_and_capped(raw_server, retry_after, waits_most):
    # Before: "-1" and "-inf" were ValueError("sleep length must be non-negative") out of next(), "nan"
    # ValueError("Invalid value NaN"); the sleep sat outside the handled path.
    header = b"Retry-After: " + retry_after.encode() + b"\r\n"
    server = raw_server([reply_bytes(b"503 Service Unavailable", b'{"detail": "busy"}', header)])
    remote = RemoteSequence(server.url, "t", "order", retries=1, backoff=0.01, max_wait=0.5, prefetch_at=1)
    started = time.monotonic()
    assert remote.next() == 1 and server.requests == 2
    took = time.monotonic() - started
    assert took < 0.5 + 1.0, took  # capped at max_wait: it waits at most that long
    assert (took >= 0.5) == waits_most, took  # an infinite one waits max_wait, a negative or NaN one the back-off
