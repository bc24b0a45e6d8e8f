"""An async view as a user writes one: orders created concurrently with the async ORM, numbers taken in async code."""

import asyncio

from django.http import HttpRequest, JsonResponse

from django_segment_seq import anext_value, anext_values

from .models import Order


async def create_orders(request: HttpRequest, count: int) -> JsonResponse:
    orders = await asyncio.gather(*(Order.objects.acreate() for _ in range(count)))
    singles = await asyncio.gather(*(anext_value("order") for _ in range(count)))
    block = await anext_values("order", count)
    return JsonResponse({"orders": [order.order_no for order in orders], "numbers": [*singles, *block]})
