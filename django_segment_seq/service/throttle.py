"""Requests per client and window, counted where every process sharing the cache counts together, exactly.

Redis, Memcached and the local-memory cache raise a counter with add() and incr(), atomic there. Django's
database and file caches cull their keys past MAX_ENTRIES (a third of them: the lowest by key, or a random
third), whatever else the project keeps there, so a count kept in them could vanish mid-window and admit a
client again: with either, the count is kept in the database instead (RateWindow), one row per window raised
by a conditional UPDATE, which no other key can cull.
"""

from __future__ import annotations

import logging
import math
import time

from django.core.cache import BaseCache, caches
from django.core.cache.backends.db import DatabaseCache
from django.core.cache.backends.filebased import FileBasedCache
from django.db import IntegrityError, router, transaction
from django.db.models import F

from django_segment_seq.service.models import RateWindow
from django_segment_seq.service.outages import Outage
from django_segment_seq.service.tokens import Rate

logger = logging.getLogger("django_segment_seq.service")
CACHE_ALIAS = "default"
counting = Outage("rates cannot be counted; requests are let through")


def window_key(key: str, rate: Rate, now: float) -> tuple[str, int]:
    window = int(now // rate.seconds)
    return f"segment_seq:rate:{key}:{rate.seconds}:{window}", window


def culls(cache: BaseCache) -> bool:
    """Whether the cache drops keys past MAX_ENTRIES whatever they are, so a count there is kept in the database."""
    return isinstance(cache, DatabaseCache | FileBasedCache)


def retry_after(key: str, rate: Rate) -> int | None:
    """Count one request of `key`; None while under `rate`, else the whole seconds until its window ends.

    A fixed window: the count of the current window lives under a key of its own. A cache or database that fails
    lets the request through (and logs one warning per outage).
    """
    now = time.time()
    name, window = window_key(key, rate, now)
    try:
        cache = caches[CACHE_ALIAS]
        if culls(cache):
            admitted = counted_in_database(name, rate.limit, (window + 1) * rate.seconds)
        else:
            admitted = counted(cache, name, rate)
    except Exception as exc:  # noqa: BLE001 - a cache or database that does not answer: the request goes through
        counting.failed(repr(key), exc)
        return None
    ended()
    if admitted:
        return None
    return max(1, math.ceil((window + 1) * rate.seconds - now))


def ended() -> None:
    failures = counting.ended()
    if failures is not None:
        logger.warning("ID service: rates are counted again, after %d failures", failures)


def counted(cache: BaseCache, name: str, rate: Rate) -> bool:
    """Count one more under `name` in a cache that keeps it; whether it is within `rate.limit`, atomically."""
    timeout = rate.seconds + 1
    cache.add(name, 0, timeout=timeout)
    try:
        count = cache.incr(name)
    except ValueError:  # expired between add() and incr()
        cache.add(name, 1, timeout=timeout)
        count = 1
    return bool(count <= rate.limit)


def counted_in_database(name: str, limit: int, ends_at: float) -> bool:
    """Count one more in window `name`'s row unless it holds `limit` already; whether this one was counted.

    The first request of a window makes its row (and deletes the rows of windows that have ended); one that
    meets the row made meanwhile by another counts there.
    """
    rows = RateWindow.objects.filter(key=name)
    if rows.filter(count__lt=limit).update(count=F("count") + 1):
        return True
    if not rows.exists():
        try:
            with transaction.atomic(using=router.db_for_write(RateWindow)):
                RateWindow.objects.create(key=name, count=1, ends_at=ends_at)
        except IntegrityError:
            pass  # made meanwhile by a request of another process: counted there, below
        else:
            RateWindow.objects.filter(ends_at__lt=time.time()).delete()
            return True
    # The row exists now (it may have been made after the first update found none): this update decides.
    return bool(rows.filter(count__lt=limit).update(count=F("count") + 1))


def peek(key: str, rate: Rate) -> int | None:
    """Like retry_after() without counting: the seconds to wait when `key` is already past `rate`, else None."""
    now = time.time()
    name, window = window_key(key, rate, now)
    try:
        cache = caches[CACHE_ALIAS]
        if culls(cache):
            found = RateWindow.objects.filter(key=name).values_list("count", flat=True).first()
            count = 0 if found is None else found
        else:
            count = int(cache.get(name, 0))
    except Exception as exc:  # noqa: BLE001 - as in retry_after()
        counting.failed(repr(key), exc)
        return None
    if count < rate.limit:
        return None
    return max(1, math.ceil((window + 1) * rate.seconds - now))
