"""The functions callers use to get numbers; everything else is plumbing behind them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from asgiref.sync import sync_to_async

from django_segment_seq.allocator.connections import pool
from django_segment_seq.cache.giveback import give_back
from django_segment_seq.cache.prefetch import prefetcher
from django_segment_seq.cache.range_cache import ranges
from django_segment_seq.cache.stats import SequenceStats
from django_segment_seq.db.routing import fixed_alias, serving_alias
from django_segment_seq.flow import formats, key_ledger, shape_ledger
from django_segment_seq.flow.derived import forget
from django_segment_seq.flow.rules import NumberRule
from django_segment_seq.redistier import deployment_id

_slot_named = ranges.by_name.get


def next_value(
    sequence_name: str | NumberRule,
    *,
    scope: Mapping[str, Any] | None = None,
    at: date | datetime | None = None,
    using: str | None = None,
) -> int:
    """The next number of the named sequence, from this process's cached range when it has one.

    Given a NumberRule, the integer of that rule's counter for `scope` ({"company": 42}) in the period of `at`
    (default: now): the number behind the text next_text() would make, from the same row.
    """
    # RangeCache.take's hot path, inlined: one dict lookup and one short lock, no further call. A lock
    # held by another thread sends the caller to take(), which knows how long it may wait for it.
    slot = _slot_named(sequence_name) if using is None else None  # type: ignore[arg-type] # a rule finds none
    if slot is not None:
        lock = slot.lock
        if lock.acquire(False):
            try:
                number = slot.next
                if number < slot.trigger:
                    slot.next = number + 1
                    return number
            finally:
                lock.release()
    if isinstance(sequence_name, NumberRule):
        return _rule_value(sequence_name, scope, at, using)
    if scope is not None or at is not None:
        raise TypeError(f"Sequence {sequence_name!r}: scope= and at= need a NumberRule, not a sequence name")
    alias = serving_alias(using)
    number = ranges.take(alias, sequence_name)
    if not using and alias == fixed_alias():
        ranges.index_by_name(alias, sequence_name)
    return number


def _rule_value(
    rule: NumberRule, scope: Mapping[str, Any] | None, at: date | datetime | None, using: str | None
) -> int:
    """next_value() for a rule: its scope named as the rule names it, its period picked by `at`."""
    rule.require_valid()
    moment = formats.now() if at is None else formats.instant_of(at)
    return rule.number(scope=rule.scope_key(scope), moment=moment, record=dict(scope or {}), using=using)


def next_values(sequence_name: str, count: int, *, using: str | None = None) -> range:
    """`count` distinct, increasing, contiguous numbers, taken in one allocation when the cache lacks them."""
    if not isinstance(count, int) or isinstance(count, bool):
        raise TypeError(f"Sequence {sequence_name!r}: count must be an int, not {type(count).__name__}")
    return ranges.take_many(serving_alias(using), sequence_name, count)


async def anext_value(sequence_name: str, *, using: str | None = None) -> int:
    """next_value() for async code: a cached number without leaving the event loop, a fetch on Django's sync thread."""
    numbers = ranges.take_cached(serving_alias(using), sequence_name)
    if numbers is not None:
        return numbers[0]
    # thread_sensitive: the thread Django's async ORM calls run on, whose connection is in autocommit
    # and so carries the allocation itself; a thread per fetch would leave a connection per thread.
    return await sync_to_async(next_value, thread_sensitive=True)(sequence_name, using=using)


def cached_values(sequence_name: str, count: int, *, using: str | None = None) -> range | None:
    """`count` numbers from this process's cached range if it holds them now, else None: never waits or fetches.

    For code on an event loop that can answer at once without awaiting anext_values().
    """
    if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
        return ranges.take_cached(serving_alias(using), sequence_name, count)
    return None


async def anext_values(sequence_name: str, count: int, *, using: str | None = None) -> range:
    """next_values() for async code: from the cached range without leaving the event loop when it holds `count`."""
    numbers = cached_values(sequence_name, count, using=using)
    if numbers is not None:
        return numbers
    return await sync_to_async(next_values, thread_sensitive=True)(sequence_name, count, using=using)


def sequence_stats() -> dict[tuple[str, str], SequenceStats]:
    """This process's figures per (alias, sequence name), copied: numbers handed out, fetches, retries, step.

    Fields: handed_out, ranges_fetched, foreground_fetches, background_fetches, background_failures,
    waits_for_background, retries, failures, busy, round_trips, step, row_step,
    fetched_in_caller_transaction, the Redis tier's redis_takes, redis_refills, redis_fenced,
    redis_abandoned and redis_fallbacks, and the property blocking_fetches (foreground fetches plus
    waits for a background one).
    """
    return ranges.stats()


def wait_for_prefetch(timeout: float | None = None) -> bool:
    """Wait until no background fetch is running; True if so within `timeout` seconds."""

    return prefetcher.drain(timeout)


def give_back_unused() -> None:
    """Give this process's unused cached numbers back to their rows where no other process allocated since.

    With GIVE_BACK_UNUSED on (the default) this runs at a clean exit, and in close_connections().
    """
    give_back()


def close_connections() -> None:
    """Before a process ends: give_back_unused(), then close the private connections (reopened on demand).

    Call it before a worker process exits when its exit skips interpreter cleanup (os._exit).
    """
    give_back_unused()
    pool.close_all()


def clear_cache() -> None:
    """Drop this process's cached ranges; their unused numbers become gaps. Needed after deleting Sequence rows."""

    ranges.clear()
    forget()
    key_ledger.forget()
    shape_ledger.forget()
    deployment_id.forget()  # the Redis tier's deployment identity is read from the database again
