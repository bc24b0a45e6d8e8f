"""Requests per client and window, counted in Django's cache, so every process sharing the cache counts together.

The count is atomic on every cache Django ships: Redis, Memcached and the local-memory cache raise a counter
with add() and incr(); the database cache's incr() is a read and a write, so there each request claims a
numbered key with add() (an INSERT, which the table's primary key makes atomic); the file cache's add() and
incr() are both a read and a write, so there the count is raised under an exclusive lock on a file in the
cache's directory.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Iterator

from django.conf import settings
from django.core.cache import BaseCache, caches
from django.core.cache.backends.db import DatabaseCache
from django.core.cache.backends.filebased import FileBasedCache

from django_segment_seq.service.tokens import Rate

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the file cache is counted without a lock there
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("django_segment_seq.service")
CACHE_ALIAS = "default"


def window_key(key: str, rate: Rate, now: float) -> tuple[str, int]:
    window = int(now // rate.seconds)
    return f"segment_seq:rate:{key}:{rate.seconds}:{window}", window


def retry_after(key: str, rate: Rate) -> int | None:
    """Count one request of `key`; None while under `rate`, else the whole seconds until its window ends.

    A fixed window: the count of the current window lives under a key of its own. A cache that fails lets the
    request through (and logs a warning).
    """
    now = time.time()
    name, window = window_key(key, rate, now)
    try:
        admitted = counted(caches[CACHE_ALIAS], name, rate)
    except Exception:
        logger.warning(
            "ID service: the rate of %r could not be counted; the request is let through", key, exc_info=True
        )
        return None
    if admitted:
        return None
    return max(1, math.ceil((window + 1) * rate.seconds - now))


def counted(cache: BaseCache, name: str, rate: Rate) -> bool:
    """Count one more under `name`; whether it is within `rate.limit`, atomically for the cache's kind."""
    timeout = rate.seconds + 1
    if isinstance(cache, FileBasedCache):
        with file_lock():
            count = int(cache.get(name, 0)) + 1
            cache.set(name, count, timeout=timeout)
        return count <= rate.limit
    if isinstance(cache, DatabaseCache):
        return claimed(cache, name, rate.limit, timeout)
    cache.add(name, 0, timeout=timeout)
    try:
        count = cache.incr(name)
    except ValueError:  # expired between add() and incr()
        cache.add(name, 1, timeout=timeout)
        count = 1
    return bool(count <= rate.limit)


# A claim whose write failed (SQLite answers a contended write with "database is locked" at once, without waiting)
# is tried again this many times, after pauses growing by CLAIM_PAUSE: 1.3 s in all at most, a bounded wait.
CLAIM_RETRIES = 10
CLAIM_PAUSE = 0.025


def claimed(cache: BaseCache, name: str, limit: int, timeout: int) -> bool:
    """Claim the first free of the keys name:1 ... name:limit with add(); `name` holds the highest claimed, a
    hint that may lag (never lead), so a request past the limit costs one read and no write."""
    number, failures = int(cache.get(name, 0)), 0
    while number < limit:
        key = f"{name}:{number + 1}"
        if cache.add(key, 1, timeout=timeout):
            cache.set(name, number + 1, timeout=timeout)
            return True
        if cache.get(key) is None and failures < CLAIM_RETRIES:  # the write failed (a lock), not the claim
            failures += 1
            time.sleep(CLAIM_PAUSE * failures)  # SQLite refuses a busy write at once: give the writer a moment
            continue
        number += 1
    return False


def peek(key: str, rate: Rate) -> int | None:
    """Like retry_after() without counting: the seconds to wait when `key` is already past `rate`, else None."""
    now = time.time()
    name, window = window_key(key, rate, now)
    try:
        count = int(caches[CACHE_ALIAS].get(name, 0))
    except Exception:
        logger.warning("ID service: the rate of %r could not be read; the request is let through", key, exc_info=True)
        return None
    if count < rate.limit:
        return None
    return max(1, math.ceil((window + 1) * rate.seconds - now))


@contextlib.contextmanager
def file_lock() -> Iterator[None]:
    """An exclusive lock every process sharing the file cache's directory takes to count."""
    directory = os.path.abspath(str(settings.CACHES[CACHE_ALIAS]["LOCATION"]))
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "segment_seq_rate.lock"), "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
