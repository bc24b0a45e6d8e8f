"""One call per range fetch, from the cache to whoever listens: the log records, and the Prometheus export when on.

Never called per number, so taking a number stays a dict lookup and a lock. Listeners run on the
thread that fetched, most often holding the sequence's lock: they must be quick and must not take a
number. One that raises is logged and never costs the caller its numbers.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from django_segment_seq.conf import SETTING_NAME
from django_segment_seq.observe.logs import log_fetch

if TYPE_CHECKING:
    from django_segment_seq.allocator.loop import Allocation
    from django_segment_seq.cache.range_cache import SequenceStats, _Slot

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
_listeners: tuple[Listener, ...] = (log_fetch,)
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


def fetched(slot: _Slot, allocation: Allocation, *, background: bool = False) -> None:
    """A block was taken and its figures recorded on the slot."""
    _emit(Fetch(slot.alias, slot.name, slot, slot.snapshot(), allocation, background))


def fetch_failed(slot: _Slot, error: BaseException) -> None:
    """A background fetch failed; the next caller that runs out fetches in the foreground."""
    _emit(Fetch(slot.alias, slot.name, slot, slot.snapshot(), None, True, error))


def current() -> Iterator[Fetch]:
    """Every sequence's figures in this process now, as fetch-less events: for listeners that catch up (at exit)."""
    from django_segment_seq.cache.range_cache import ranges

    for slot in list(ranges._slots.values()):
        # A foreground fetch holds the lock during its round trip; the figures are worth less than that wait.
        locked = slot.lock.acquire(timeout=0.1)
        try:
            stats = slot.snapshot()
        finally:
            if locked:
                slot.lock.release()
        yield Fetch(slot.alias, slot.name, slot, stats)


def _emit(event: Fetch) -> None:
    for listener in _listeners:
        try:
            listener(event)
        except Exception:
            logger.exception(
                "A listener of range fetches failed for sequence %r on database %r", event.name, event.alias
            )


def apply_metrics_setting() -> None:
    """Subscribe the Prometheus export while METRICS is on and prometheus_client is installed; unsubscribe it when off.

    Without prometheus_client nothing is exported and a warning says so; `manage.py check` reports it
    as django_segment_seq.E006. Read from the raw setting: one that is not even a dict is for check E001
    to report, not for startup to crash on.
    """
    configured = getattr(settings, SETTING_NAME, None)
    if isinstance(configured, dict) and configured.get("METRICS") is True:
        try:
            from django_segment_seq.observe import metrics
        except ImportError as exc:
            logger.warning(
                "%s['METRICS'] is on but prometheus_client cannot be imported (%s): no metrics are exported. "
                "Install django-segment-seq[prometheus].",
                SETTING_NAME,
                exc,
            )
            return
        metrics.register()
    elif "django_segment_seq.observe.metrics" in sys.modules:
        sys.modules["django_segment_seq.observe.metrics"].unregister()


@receiver(setting_changed)
def _follow_metrics_setting(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        apply_metrics_setting()
