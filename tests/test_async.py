"""Async callers: anext_value()/anext_values(), the async ORM filling SequenceFields, and an async view under ASGI."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.asgi import get_asgi_application
from django.db import connection

import django_segment_seq.api as api
from django_segment_seq import anext_value, anext_values, next_value, sequence_stats
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.testapp.models import BulkItem, Order, Ticket

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def thread_hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every call api hands to a thread, still running it there."""
    hops: list[str] = []
    real = api.sync_to_async

    def counting(func: Any, **kwargs: Any) -> Any:
        hops.append(func.__name__)
        return real(func, **kwargs)

    monkeypatch.setattr(api, "sync_to_async", counting)
    return hops


def test_cached_numbers_come_without_a_thread_hop(thread_hops):
    Sequence.objects.create(name="order", step=100)
    assert next_value("order") == 1  # the range 1..100 is cached now

    async def take() -> tuple[list[int], range]:
        singles = [await anext_value("order") for _ in range(10)]
        return singles, await anext_values("order", 5)

    singles, block = async_to_sync(take)()
    assert singles == list(range(2, 12))
    assert list(block) == list(range(12, 17))
    assert thread_hops == []


def test_a_fetch_runs_on_a_thread_and_numbers_continue(thread_hops):
    Sequence.objects.create(name="order", step=10)

    async def take() -> tuple[list[int], range]:
        return [await anext_value("order") for _ in range(25)], await anext_values("order", 30)

    singles, block = async_to_sync(take)()
    assert singles == list(range(1, 26))
    assert list(block) == list(range(31, 61))  # 5 left in the range are too few: a block of its own, 26..30 a gap
    assert thread_hops.count("next_value") == 3  # one per range of 10 the singles ran into
    assert thread_hops.count("next_values") == 1
    assert sequence_stats()[(connection.alias, "order")].ranges_fetched == 4


def test_anext_values_refuses_a_bad_count_like_next_values():
    with pytest.raises(TypeError):
        async_to_sync(anext_values)("order", 2.5)
    with pytest.raises(ValueError):
        async_to_sync(anext_values)("order", 0)


def test_acreate_and_abulk_create_fill_sequence_fields():
    Sequence.objects.create(name="order", step=10)

    async def create() -> tuple[list[Order], list[BulkItem], list[Ticket]]:
        orders = [await Order.objects.acreate() for _ in range(15)]
        items = await BulkItem.objects.abulk_create([BulkItem(note=str(i)) for i in range(30)])
        tickets = await Ticket.objects.abulk_create([Ticket() for _ in range(5)])
        return orders, items, tickets

    orders, items, tickets = async_to_sync(create)()
    assert [order.order_no for order in orders] == list(range(1, 16))
    assert sorted(Order.objects.values_list("order_no", flat=True)) == list(range(1, 16))
    assert assert_unique(item.id for item in items) == list(range(1, 31))
    assert BulkItem.objects.count() == 30
    assert [ticket.code for ticket in tickets] == [1, 2, 3, 4, 5]


async def _get(application: Any, path: str) -> tuple[int, bytes]:
    """One GET request through the ASGI application, as a server would send it."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    requested = False
    messages: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        return {"type": "http.disconnect"}  # pragma: no cover

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await application(scope, receive, send)
    status = next(m["status"] for m in messages if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return status, body


def test_async_view_under_asgi_creates_1000_orders_with_unique_numbers():
    """Ten concurrent requests, each creating 100 orders at once and taking 200 more numbers in async code."""
    Sequence.objects.create(name="order", step=50)
    application = get_asgi_application()

    async def run() -> list[tuple[int, bytes]]:
        return await asyncio.wait_for(
            asyncio.gather(*(_get(application, "/async/orders/100/") for _ in range(10))), timeout=300
        )

    responses = async_to_sync(run)()
    assert [status for status, _ in responses] == [200] * 10, responses[0][1][:2000]
    bodies = [json.loads(body) for _, body in responses]
    orders = [n for body in bodies for n in body["orders"]]
    numbers = [n for body in bodies for n in body["numbers"]]
    assert len(orders) == 1000
    assert_unique(orders + numbers, 3000)
    assert sorted(Order.objects.values_list("order_no", flat=True)) == sorted(orders)
