"""Log records on the `django_segment_seq` logger for what needs a person: contention, failed prefetches, running out.

Each record carries `sequence` and `database` (and the figure that caused it) as extra attributes,
for structured log handlers.
"""

from __future__ import annotations

import logging
import os
import threading

from django_segment_seq.cache.events import Fetch
from django_segment_seq.conf import SETTING_NAME, app_settings
from django_segment_seq.observe.usage import used_share

logger = logging.getLogger("django_segment_seq")

# (alias, name) of the sequences this process has seen at or past LOG_USED_SHARE_AT: logged once per crossing.
_above: set[tuple[str, str]] = set()
_above_lock = threading.Lock()


def log_fetch(event: Fetch) -> None:
    """The records one range fetch calls for, if any."""
    if event.error is not None:
        logger.warning(
            "Background fetch of a range of sequence %r on database %r failed; the next caller that runs out "
            "fetches in the foreground.",
            event.name,
            event.alias,
            exc_info=event.error,
            extra={"sequence": event.name, "database": event.alias},
        )
        return
    allocation = event.allocation
    if allocation is None:
        return
    settings = app_settings()
    retries_at = settings["LOG_RETRIES_AT"]
    if retries_at is not None and allocation.retries >= retries_at:
        logger.warning(
            "Sequence %r on database %r: one range fetch lost %d compare-and-sets to other processes "
            "(%s['LOG_RETRIES_AT'] is %d). Larger ranges (the row's step, ADAPTIVE_STEP) mean fewer fetches.",
            event.name,
            event.alias,
            allocation.retries,
            SETTING_NAME,
            retries_at,
            extra={"sequence": event.name, "database": event.alias, "retries": allocation.retries},
        )
    share_at = settings["LOG_USED_SHARE_AT"]
    row = allocation.row
    if share_at is None or row is None or row.cycle:
        return  # a cycling sequence wraps around at its maximum: it never runs out
    share = used_share(allocation.block.last, row.min_value, row.max_value)
    key = (event.alias, event.name)
    with _above_lock:
        if share < share_at:
            _above.discard(key)  # the maximum was raised: the next crossing is news again
            return
        if key in _above:
            return
        _above.add(key)
    logger.warning(
        "Sequence %r on database %r has handed out %.1f%% of its numbers: up to %d, its max_value is %d.",
        event.name,
        event.alias,
        share * 100,
        allocation.block.last,
        row.max_value,
        extra={"sequence": event.name, "database": event.alias, "used_share": share},
    )


def _forget_crossings() -> None:
    """A child process logs its own crossings."""
    global _above_lock
    _above.clear()
    _above_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_crossings)
