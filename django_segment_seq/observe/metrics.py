"""sequence_stats() as Prometheus counters and gauges, labelled by alias and sequence, in one process or many.

The figures are the cache's own (SequenceStats); this module only mirrors them into prometheus_client
after each range fetch, never per number. Under gunicorn with PROMETHEUS_MULTIPROC_DIR set, each
worker writes its values to files of its own and MultiProcessCollector adds them up: counters are
summed, and each gauge says how (GAUGES). Imported only when SEGMENT_SEQ["METRICS"] is on (the
`prometheus` extra; observe/subscriptions.py); see docs/metrics.md.
"""

from __future__ import annotations

import atexit
import os
import threading
from dataclasses import dataclass
from typing import Literal

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge

from django_segment_seq.cache import events
from django_segment_seq.cache.events import Fetch
from django_segment_seq.cache.range_cache import ranges
from django_segment_seq.observe.usage import used_share

LABELS = ("alias", "sequence")

# SequenceStats fields exported as counters, named segment_seq_<field>_total.
COUNTERS = {
    "handed_out": "Numbers handed out, as of each range fetch of the process (and its exit).",
    "ranges_fetched": "Ranges allocated from the database, in the foreground and the background.",
    "foreground_fetches": "Ranges a caller fetched itself and waited for.",
    "background_fetches": "Ranges fetched in the background while callers took numbers from memory.",
    "background_failures": "Background fetches that failed; the next caller fetched in the foreground.",
    "waits_for_background": "Callers that ran out while a background fetch was running, and waited for it.",
    "retries": "Compare-and-sets lost to other processes.",
    "failures": "Database errors retried.",
    "busy": "Attempts that found the row held by another transaction.",
    "round_trips": "Statements the allocations sent: reads, compare-and-sets and row creations.",
    "fetched_in_caller_transaction": "Ranges taken inside the caller's transaction, which held the row.",
    "redis_takes": "Blocks taken from the Redis tier.",
    "redis_refills": "Super-segments this process reserved from the table and installed in Redis.",
    "redis_fenced": "Redis states made by another server process (restart, promotion, moved slot), dropped.",
    "redis_abandoned": "Super-segments whose INSTALL got no clear answer: never offered again, a gap.",
    "redis_fallbacks": "Blocks taken from the table because Redis failed or was being left alone.",
}

GaugeMode = Literal["livemax", "mostrecent"]


@dataclass(frozen=True)
class GaugeSpec:
    documentation: str
    # How MultiProcessCollector merges the processes' values (ignored in a single process).
    mode: GaugeMode


GAUGES = {
    # Each process sizes its own ranges (the adaptive step): a sum would describe no process. The largest
    # among running ones is the worst gap a restart leaves; a dead worker's size no longer matters.
    "segment_seq_range_size": GaugeSpec("Size of the latest range, the largest among running processes.", "livemax"),
    # Facts about the one row that every process reads: the latest reading is the truth, wherever it was
    # made, and a dead process's reading stays true until another process reads the row again. "max"
    # would keep a step lowered in the admin, or a share from before the maximum was raised, for ever.
    "segment_seq_row_step": GaugeSpec("The row's step at the latest range fetch.", "mostrecent"),
    "segment_seq_used_ratio": GaugeSpec(
        "Share of the numbers from min_value to max_value taken from the row, at the latest range fetch.", "mostrecent"
    ),
    "segment_seq_numbers_left": GaugeSpec(
        "Numbers after the latest range fetched up to max_value, before the sequence runs out or wraps.", "mostrecent"
    ),
}


class _Series:
    """One sequence's series of every metric, and the counter values exported so far from its cache slot."""

    __slots__ = ("counters", "done", "numbers_left", "range_size", "row_step", "source", "used_ratio")

    def __init__(self, counters: dict[str, Counter], gauges: dict[str, Gauge], key: tuple[str, str]) -> None:
        # Made once per sequence, so a fetch costs no label lookups; every series exists from then on, zeros included.
        self.counters = [(field, counter.labels(*key)) for field, counter in counters.items()]
        self.range_size = gauges["segment_seq_range_size"].labels(*key)
        self.row_step = gauges["segment_seq_row_step"].labels(*key)
        self.used_ratio = gauges["segment_seq_used_ratio"].labels(*key)
        self.numbers_left = gauges["segment_seq_numbers_left"].labels(*key)
        self.source: object = None
        self.done: dict[str, int] = {}


class _Exported:
    """The metric objects, made once per process, and each sequence's series."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.counters = {
            field: Counter(f"segment_seq_{field}", text, LABELS, registry=registry) for field, text in COUNTERS.items()
        }
        self.gauges = {
            name: Gauge(name, spec.documentation, LABELS, registry=registry, multiprocess_mode=spec.mode)
            for name, spec in GAUGES.items()
        }
        self.lock = threading.Lock()
        self.series: dict[tuple[str, str], _Series] = {}

    def record(self, event: Fetch) -> None:
        """Move the counters by what the figures grew since the slot's last event, and set the gauges."""
        key = (event.alias, event.name)
        stats = event.stats
        with self.lock:
            series = self.series.get(key)
            if series is None:
                series = self.series[key] = _Series(self.counters, self.gauges, key)
            if series.source is not event.source:
                series.source, series.done = event.source, {}  # a new slot's figures start from zero
            done = series.done
            for field, child in series.counters:
                value = getattr(stats, field)
                # A snapshot taken without the slot's lock may be older than the last one: never count backwards.
                if value > done.get(field, 0):
                    child.inc(value - done.get(field, 0))
                    done[field] = value
            if stats.step:
                series.range_size.set(stats.step)
            allocation = event.allocation
            if allocation is None or allocation.row is None:
                return
            row, last = allocation.row, allocation.block.last
            series.row_step.set(row.step)
            series.used_ratio.set(used_share(last, row.min_value, row.max_value))
            series.numbers_left.set(row.max_value - last)

    def forget(self) -> None:
        """After fork(): the child's cache starts empty, and prometheus_client moves to the child's own files."""
        self.lock = threading.Lock()
        for series in self.series.values():
            series.source, series.done = None, {}


_exported: _Exported | None = None
_setup = threading.Lock()


def register(registry: CollectorRegistry = REGISTRY) -> None:
    """Export from now on: make the metrics in `registry` (once per process) and follow every range fetch.

    SEGMENT_SEQ["METRICS"] calls this at startup; `registry` is only for the first call.
    """
    global _exported
    with _setup:
        if _exported is None:
            _exported = _Exported(registry)
            os.register_at_fork(after_in_child=_exported.forget)
            atexit.register(_flush_at_exit)
    events.subscribe(_exported.record)
    refresh()


def unregister() -> None:
    """Stop following range fetches; what was exported stays."""
    if _exported is not None:
        events.unsubscribe(_exported.record)


def refresh() -> None:
    """Bring the exported figures up to this process's now, e.g. the numbers handed out since the latest fetch."""
    if _exported is not None:
        for event in ranges.current():
            _exported.record(event)


def _flush_at_exit() -> None:
    """A process that exits has its last range's numbers counted too (gunicorn workers exit through sys.exit)."""
    if _exported is not None and _exported.record in events.listeners():
        refresh()
