"""The demo's worker process: sets Django up on its own, creates orders with receipts, reports the numbers it got."""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier


@dataclass
class Batch:
    """What one worker sends back: its numbers, its range figures, or the traceback that stopped it."""

    worker: int
    pid: int
    order_nos: list[int] = field(default_factory=list)
    receipt_ids: list[int] = field(default_factory=list)
    ranges_fetched: int = 0
    retries: int = 0
    error: str = ""


def run_worker(worker: int, orders: int, start: Barrier, results: Queue) -> None:
    """Process entry point (spawned, so nothing is inherited): create `orders` orders, each with a receipt."""
    batch = Batch(worker=worker, pid=os.getpid())
    try:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop_site.settings")
        import django

        django.setup()
        from django.db import transaction

        from django_segment_seq import sequence_stats

        from .models import Order, Receipt

        start.wait(timeout=120)  # every worker is set up: now they all write at once
        for n in range(orders):
            with transaction.atomic():
                order = Order.objects.create(customer=f"customer {worker}-{n + 1}")
                receipt = Receipt.objects.create(order=order)
            batch.order_nos.append(order.order_no)
            batch.receipt_ids.append(receipt.id)
        for stats in sequence_stats().values():
            batch.ranges_fetched += stats.ranges_fetched
            batch.retries += stats.retries
    except BaseException:  # noqa: BLE001 - any failure, interrupts too, is reported to the parent
        start.abort()  # release workers still waiting at the start line
        batch.error = traceback.format_exc()
    finally:
        close_connections()
    results.put(batch)


def close_connections() -> None:
    """Close Django's connections and the private ones django-segment-seq allocates ranges on."""
    try:
        from django.db import connections

        from django_segment_seq import close_connections as close_private_connections
    except Exception:  # noqa: BLE001 - Django never got set up, so nothing was opened
        return
    connections.close_all()
    close_private_connections()
