"""One call per range fetch, from the cache to whoever listens (observe/ subscribes the logs and the Prometheus export).

Never called per number, so taking a number stays a dict lookup and a lock. Listeners run on the
thread that fetched, most often holding the sequence's lock: they must be quick and must not take a
number. One that raises is logged and never costs the caller its numbers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from django_segment_seq.allocator.request import Allocation
from django_segment_seq.cache.stats import SequenceStats

logger = logging.getLogger("django_segment_seq")


@dataclass(frozen=True, slots=True)
class Fetch:
    """A range fetch that ended, or (with `error`) a background one that failed, and the figures after it."""

    alias: str
    name: str
    # The cache slot the figures belong to: another one after clear_cache() or fork() means they start from zero.
    source: object
    stats: SequenceStats
    allocation: Allocation | None = None
    background: bool = False
    error: BaseException | None = None


Listener = Callable[[Fetch], None]

# Replaced whole, never changed in place, so emitting needs no lock.
_listeners: tuple[Listener, ...] = ()
_subscribing = threading.Lock()


def subscribe(listener: Listener) -> None:
    """Call `listener` after every range fetch of this process from now on; subscribing twice is once."""
    global _listeners
    with _subscribing:
        if listener not in _listeners:
            _listeners = (*_listeners, listener)


def unsubscribe(listener: Listener) -> None:
    global _listeners
    with _subscribing:
        _listeners = tuple(known for known in _listeners if known != listener)


def listeners() -> tuple[Listener, ...]:
    """The listeners now, in the order they are called."""
    return _listeners


def emit(event: Fetch) -> None:
    """Hand `event` to every listener; one that raises is logged, and the others still run."""
    for listener in _listeners:
        try:
            listener(event)
        except Exception:
            logger.exception(
                "A listener of range fetches failed for sequence %r on database %r", event.name, event.alias
            )
