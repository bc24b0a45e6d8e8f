"""Requests per client and window, counted where every process sharing the cache counts together, exactly.

Redis, Memcached and the local-memory cache raise a counter with add() and incr(), atomic there. Django's
database and file caches cull their keys past MAX_ENTRIES (a third of them: the lowest by key, or a random
third), whatever else the project keeps there, so a count kept in them could vanish mid-window and admit a
client again: with either, the count is kept in the database instead (RateWindow), one row per window raised
by a conditional UPDATE, which no other key can cull. A client's rate is counted a lease at a time, wherever it
is kept (leases.py); the failed authentications of an address, one at a time.
"""

from __future__ import annotations

import logging
import math
import time
from enum import Enum
from functools import lru_cache
from typing import Any

from django.core.cache import BaseCache, caches
from django.core.cache.backends.db import DatabaseCache
from django.core.cache.backends.filebased import FileBasedCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.exceptions import SynchronousOnlyOperation
from django.core.signals import setting_changed
from django.db import IntegrityError, connections, router, transaction
from django.db.models import F, QuerySet

from django_segment_seq.db.bounded import bounded_when_used, own_savepoint
from django_segment_seq.service.leases import Window, leases
from django_segment_seq.service.models import RateWindow
from django_segment_seq.service.outages import Outage
from django_segment_seq.service.tokens import Rate

logger = logging.getLogger("django_segment_seq.service")
CACHE_ALIAS = "default"
counting = Outage("rates cannot be counted; requests are let through")


# The windows a request is counted in at most: its own, and the next when its own ended while it was counted.
WINDOWS_TRIED = 2
# A busy client's lease of the next window is taken this long before the window begins, so its first requests find
# it in memory rather than all wait for it at once.
NEXT_WINDOW_AHEAD = 0.1
# A window's row is deleted only once it ended this many seconds ago by the deleting host's clock: each host names
# windows by its own clock, so a row that has ended for a host whose clock runs ahead may still be counted in by one
# whose clock lags (deleted, its window was counted again from nothing there). Hosts' clocks must differ by less.
ENDED_FOR = 300.0


def window_key(key: str, rate: Rate, now: float) -> tuple[str, int]:
    window = int(now // rate.seconds)
    return window_name(key, rate, window), window


def window_name(key: str, rate: Rate, window: int) -> str:
    return f"segment_seq:rate:{key}:{rate.seconds}:{window}"


def lease_window(rate: Rate, now: float) -> Window:
    """The window a lease of `rate` is for at `now` (what window_key() names, without making its name)."""
    return rate.seconds, int(now // rate.seconds)


def culls(cache: BaseCache) -> bool:
    """Whether the cache drops keys past MAX_ENTRIES whatever they are, so a count there is kept in the database."""
    return isinstance(cache, DatabaseCache | FileBasedCache)


class Kept(Enum):
    """Where the counts of rates are kept."""

    MEMORY = "this process's memory (a local-memory cache), which the event loop may reach"
    CACHE = "a cache that keeps its own connections"
    DATABASE = "the database (RateWindow), for a cache that culls"


@lru_cache(maxsize=1)
def kept_in() -> Kept:
    """Where the counts are kept, decided once per CACHES setting (asking caches[] builds a cache per request)."""
    cache = caches[CACHE_ALIAS]
    if isinstance(cache, LocMemCache):
        return Kept.MEMORY
    return Kept.DATABASE if culls(cache) else Kept.CACHE


def forget_where_kept(setting: str, **kwargs: Any) -> None:
    """Forget where counts are kept, and the leases counted there: the caches changed."""
    if setting == "CACHES":
        kept_in.cache_clear()
        leases.clear()


setting_changed.connect(forget_where_kept, dispatch_uid="segment_seq_service_rates_kept_in")


def retry_after(key: str, rate: Rate, *, ahead: bool = False, at_least: int = 1) -> int | None:
    """Count one request of `key`; None while under `rate`, else the whole seconds until its window ends.

    A fixed window: the count of the current window lives under a key of its own. With `ahead` (a client's
    rate) requests are counted a lease at a time, of at least `at_least` requests (those waiting for it now),
    and a window found full is refused from memory until it ends. A cache or database that fails lets the
    request through (and logs one warning per outage).

    A window found full after it ended is not this request's to be refused by: a count that took long (a loaded
    machine, a row lock) may meet its window's row deleted as ended, or full; the request is counted again in the
    window it is in now.
    """
    for _attempt in range(WINDOWS_TRIED):
        now = time.time()
        name, window = window_key(key, rate, now)
        if ahead and leases.take(key, (rate.seconds, window)):
            return None
        if ahead and leases.is_full(key, (rate.seconds, window), rate.limit):
            break
        size = max(leases.size(key, rate.limit), at_least) if ahead else 1
        granted = reserved(name, window, rate, size)
        if granted is None:
            return None
        if granted:
            if ahead:
                leases.add(key, (rate.seconds, window), granted, 1)
            return None
        if time.time() < (window + 1) * rate.seconds:
            if ahead:
                leases.note_full(key, (rate.seconds, window), rate.limit)
            break  # full, and still the current window
    return max(1, math.ceil((window + 1) * rate.seconds - now))


def reserved(name: str, window: int, rate: Rate, size: int) -> int | None:
    """Raise window `name`'s shared count by `size` (by what is left when fewer are); how much it was raised, or
    None when the count could not be kept (the request goes through)."""
    try:
        if kept_in() is Kept.DATABASE:
            granted = counted_in_database(name, rate.limit, (window + 1) * rate.seconds, size)
        else:
            granted = counted(caches[CACHE_ALIAS], name, rate, size)
    except Exception as exc:  # noqa: BLE001 - a cache or database that does not answer: the request goes through
        counting.failed(repr(name), exc)
        return None
    ended()
    return granted


def lease_ticket(key: str, rate: Rate) -> bool | None:
    """One request of `key` counted from its lease of the current window, as nearly every request of a busy client
    is: None when the lease is used up (nothing counted), else whether the next lease may be due (the lease runs
    low, or the window ends within NEXT_WINDOW_AHEAD), so LeaseTakers.ahead() need not look on every request."""
    now = time.time()
    seconds = rate.seconds
    if not leases.take(key, (seconds, int(now // seconds))):
        return None
    return key in leases.low or seconds - now % seconds <= NEXT_WINDOW_AHEAD


def retry_after_in_memory(key: str, rate: Rate) -> int | None:
    """retry_after(ahead=True) where nothing but memory may be reached (the event loop): SynchronousOnlyOperation,
    without counting, when the request's lease is used up and a new one is not in this process's memory (nor
    the window known to be full)."""
    if lease_ticket(key, rate) is not None:
        return None
    now = time.time()
    window = lease_window(rate, now)
    if leases.is_full(key, window, rate.limit):
        return max(1, math.ceil((window[1] + 1) * rate.seconds - now))
    if kept_in() is Kept.MEMORY:
        return retry_after(key, rate, ahead=True)
    raise SynchronousOnlyOperation("the rate's lease is used up: the next is taken from the cache or the database")


def lease_runs_low(key: str) -> bool:
    """Whether `key`'s lease is down to half, so the next is best taken ahead of use (in the cache or the database:
    one kept in memory is taken at once, when used up)."""
    return key in leases.low and kept_in() is not Kept.MEMORY


def lease_ahead(key: str, rate: Rate, coming: int | None = None) -> None:
    """Take `key`'s next lease before its requests need it (sync: the cache or the database): of the current window,
    once its lease runs low, or of window `coming`, which has not begun yet (counted in that window's own count)."""
    window = int(time.time() // rate.seconds) if coming is None else coming
    granted = reserved(window_name(key, rate, window), window, rate, leases.size(key, rate.limit))
    if coming is not None:
        if granted:
            leases.add_coming(key, (rate.seconds, window), granted)
        return
    leases.low.discard(key)  # tried once for this lease, whatever the count said
    if granted:
        leases.add(key, (rate.seconds, window), granted, 0)


def next_window_due(key: str, rate: Rate) -> int | None:
    """The next window, when the current one ends within NEXT_WINDOW_AHEAD and `key`'s lease of the next is not
    taken yet (in the cache or the database: one kept in memory is taken at once, when needed); else None."""
    now, seconds = time.time(), rate.seconds
    if seconds - now % seconds > NEXT_WINDOW_AHEAD or kept_in() is Kept.MEMORY:
        return None
    window = int(now // seconds) + 1
    return None if leases.has_coming(key, (seconds, window)) else window


def ended() -> None:
    failures = counting.ended()
    if failures is not None:
        logger.warning("ID service: rates are counted again, after %d failures", failures)


def counted(cache: BaseCache, name: str, rate: Rate, size: int = 1) -> int:
    """Count `size` more under `name` in a cache that keeps it, atomically; how many of them are within `rate`."""
    timeout = rate.seconds + 1
    cache.add(name, 0, timeout=timeout)
    try:
        count = cache.incr(name, size)
    except ValueError:  # expired between add() and incr()
        cache.add(name, size, timeout=timeout)
        count = size
    return max(0, min(size, rate.limit - (count - size)))


def counted_in_database(name: str, limit: int, ends_at: float, size: int = 1) -> int:
    """Count `size` more in window `name`'s row, or one when fewer are left; how many were counted (0: none left).

    Every lock wait is bounded by LOCK_TIMEOUT (a row another session holds fails the count, and the request goes
    through), and inside a caller's transaction the count is a savepoint of its own, so its failure leaves that
    transaction whole.
    """
    connection = connections[router.db_for_write(RateWindow)]
    with bounded_when_used([connection.alias]), own_savepoint(connection):
        return counted_in_rows(name, limit, ends_at, size)


def counted_in_rows(name: str, limit: int, ends_at: float, size: int) -> int:
    """counted_in_database() within its bounds. The first request of a window makes its row (and deletes the rows
    of windows that ended more than ENDED_FOR ago, which no host whose clock differs by less counts in); one that
    meets the row made meanwhile by another counts there."""
    rows = RateWindow.objects.filter(key=name)
    granted = raised(rows, limit, size)
    if granted is not None:
        return granted
    size = min(size, limit)
    try:
        with transaction.atomic(using=router.db_for_write(RateWindow)):
            RateWindow.objects.create(key=name, count=size, ends_at=ends_at)
    except IntegrityError:  # made meanwhile by a request of another process: counted there
        return raised(rows, limit, size) or 0
    RateWindow.objects.filter(ends_at__lt=time.time() - ENDED_FOR).delete()
    return size


def raised(rows: QuerySet[RateWindow], limit: int, size: int) -> int | None:
    """Raise the window's count by `size`, or by what is left (else by one) when fewer are left, unless at `limit`;
    by how much it was (0: full), or None when the row is missing (found so after the update: a row made meanwhile
    by another process is counted in)."""
    if rows.filter(count__lte=limit - size).update(count=F("count") + size):
        return size
    current = rows.values_list("count", flat=True).first()
    if current is None:
        return None
    left = limit - current
    for taken in dict.fromkeys((min(size, left), 1)):
        if 1 <= taken <= left and rows.filter(count__lte=limit - taken).update(count=F("count") + taken):
            return taken
    return 0


def peek(key: str, rate: Rate) -> int | None:
    """Like retry_after() without counting: the seconds to wait when `key` is already past `rate`, else None."""
    now = time.time()
    name, window = window_key(key, rate, now)
    try:
        if kept_in() is Kept.DATABASE:
            found = RateWindow.objects.filter(key=name).values_list("count", flat=True).first()
            count = 0 if found is None else found
        else:
            count = int(caches[CACHE_ALIAS].get(name, 0))
    except Exception as exc:  # noqa: BLE001 - as in retry_after()
        counting.failed(repr(key), exc)
        return None
    if count < rate.limit:
        return None
    return max(1, math.ceil((window + 1) * rate.seconds - now))
