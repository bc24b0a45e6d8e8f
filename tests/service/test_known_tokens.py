"""A busy token on the fast path is read again ahead of being forgotten, once, on the counting thread: the requests in
flight never all find it forgotten at once (each read the client table on a thread and a new connection of its own),
and a token revoked meanwhile is still refused within KNOWN_FOR."""

import asyncio
import json
import time

import pytest
from asgiref.sync import async_to_sync
from django.db import connections
from django.utils import timezone

from django_segment_seq.service import authentication, fastpath
from django_segment_seq.service.fastpath import refresher
from django_segment_seq.service.models import Client
from tests.conftest import assert_unique
from tests.service.test_trust import add_client
from tests.support.fast_client import application, exchange

pytestmark = pytest.mark.django_db(transaction=True)
BODY = json.dumps({"count": 1}).encode()


@pytest.fixture
def reads(monkeypatch):
    """Every read of the client table for a token, counted; a token known for 1 s, read again in its last 0.6 s."""
    monkeypatch.setattr(authentication, "KNOWN_FOR", 1.0)
    monkeypatch.setattr(authentication, "REFRESH_BEFORE", 0.6)
    counted: list[str] = []
    client_with = authentication.client_with

    def counting(token: str):
        counted.append(token)
        return client_with(token)

    monkeypatch.setattr(authentication, "client_with", counting)
    return counted


def scope(token: str) -> dict[str, object]:
    headers = [
        (b"host", b"testserver"),
        (b"content-type", b"application/json"),
        (b"authorization", f"Bearer {token}".encode()),
        (b"content-length", str(len(BODY)).encode()),
    ]
    return {"type": "http", "method": "POST", "scheme": "http", "path": "/ids/order/next",
            "raw_path": b"/ids/order/next", "root_path": "", "query_string": b"", "headers": headers,
            "server": ("testserver", 80), "client": ("127.0.0.1", 50000), "asgi": {"version": "3.0"},
            "http_version": "1.1"}  # fmt: skip


async def answered(token: str) -> tuple[int, dict[str, object]]:
    messages = await exchange(application(), scope(token), BODY)
    return messages[0]["status"], json.loads(b"".join(message.get("body", b"") for message in messages[1:]))


def test_a_busy_token_is_read_again_once_ahead_not_by_every_request_in_flight(reads, monkeypatch):
    token = add_client("busy", "order*")
    statuses, numbers, on_threads = [], [], []
    admit_fresh = fastpath.admit_fresh

    def counted_admit_fresh(*args, **kwargs):
        on_threads.append(1)
        return admit_fresh(*args, **kwargs)

    monkeypatch.setattr(fastpath, "admit_fresh", counted_admit_fresh)

    async def callers() -> None:
        assert (await answered(token))[0] == 200  # the token read once, on a thread, as any unknown token is
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 2.5

        async def caller() -> None:
            while loop.time() < deadline:
                status, body = await answered(token)
                await asyncio.sleep(0)  # the loop's other tasks (the token's read) get their turn, as on a server
                statuses.append(status)
                numbers.append(body.get("first"))

        await asyncio.gather(*(caller() for _ in range(16)))
        await asyncio.gather(*refresher.tasks)

    async_to_sync(callers)()
    assert statuses and set(statuses) == {200}
    assert_unique(numbers, len(statuses))
    # 2.5 s of a token known for 1 s: read again ahead each time, on the counting thread, while its requests were
    # answered from memory; before, a request that found it forgotten was admitted anew on a thread of its own
    # (and a new connection) at every expiry.
    assert on_threads == [1], len(on_threads)
    assert 2 <= len(reads) <= 8, len(reads)


def revoke(name: str) -> None:
    try:
        Client.objects.filter(name=name).update(revoked_at=timezone.now())
    finally:
        connections.close_all()


def test_a_token_revoked_elsewhere_is_refused_once_read_again(reads):
    token = add_client("revoked", "order*")

    async def requests() -> list[int]:
        statuses = [(await answered(token))[0]]
        # Revoked in another process: no signal here, so only a read of the table tells.
        await asyncio.to_thread(revoke, "revoked")
        await asyncio.sleep(0.55)  # within its last 0.6 s: answered from memory, and read again meanwhile
        statuses.append((await answered(token))[0])
        # A request that finds a usage write due is admitted on a thread, which starts no read ahead (on a loaded
        # machine the second can be one): the next answered from memory starts it, within the token's last 0.6 s.
        # On a loaded machine the token may outlive its KNOWN_FOR before a read ahead starts: it is then unknown, and
        # the lookup an unknown token gets refuses it at once, which is as right (never admitted past the lookup).
        asked_until = time.monotonic() + 5  # the token is known for 1 s: a read starts well before
        while len(reads) < 2:
            assert time.monotonic() < asked_until, "no request started a read of the token"
            status = (await answered(token))[0]
            if status == 401:
                break
            assert status == 200
        await asyncio.gather(*refresher.tasks)
        statuses.append((await answered(token))[0])
        return statuses

    assert async_to_sync(requests)() == [200, 200, 401]
