"""Requests per client and window, counted in Django's cache, so every process sharing the cache counts together."""

from __future__ import annotations

import logging
import math
import time

from django.core.cache import caches

from django_segment_seq.service.tokens import Rate

logger = logging.getLogger("django_segment_seq.service")
CACHE_ALIAS = "default"


def retry_after(key: str, rate: Rate) -> int | None:
    """Count one request of `key`; None while under `rate`, else the whole seconds until its window ends.

    A fixed window: the count of the current window lives under a key of its own, created with add()
    (atomic where the backend is) and raised with incr(). A cache that fails lets the request through.
    """
    now = time.time()
    window = int(now // rate.seconds)
    name = f"segment_seq:rate:{key}:{rate.seconds}:{window}"
    cache = caches[CACHE_ALIAS]
    try:
        cache.add(name, 0, timeout=rate.seconds + 1)
        try:
            count = cache.incr(name)
        except ValueError:  # expired between add() and incr()
            cache.set(name, 1, timeout=rate.seconds + 1)
            count = 1
    except Exception:
        logger.warning(
            "ID service: the rate of %s could not be counted; the request is let through", key, exc_info=True
        )
        return None
    if count <= rate.limit:
        return None
    return max(1, math.ceil((window + 1) * rate.seconds - now))
