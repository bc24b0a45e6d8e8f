"""Why a Snowflake id was refused: each under SequenceError, so callers that catch the app's errors catch these."""

from __future__ import annotations

from django_segment_seq.exceptions import SequenceError

__all__ = ["ClockMovedBackwards", "SnowflakeError", "WorkerIdFenced", "WorkerIdsExhausted", "WorkerLeaseExpired"]


class SnowflakeError(SequenceError):
    """Base class of the Snowflake errors: no id was handed out."""


class WorkerLeaseExpired(SnowflakeError):
    """This process could not renew its worker id's lease in time, so it stopped issuing before another may take it."""

    def __init__(self, layout: str, worker_id: int | None, detail: str) -> None:
        self.layout = layout
        self.worker_id = worker_id
        super().__init__(
            f"Snowflake layout {layout!r}: the lease of worker id {worker_id} could not be renewed in time ({detail}); "
            "no id is issued until a lease is renewed or taken again."
        )


class WorkerIdFenced(SnowflakeError):
    """A failover was noticed less than a lease time ago: ids of a newly taken worker id wait until it has passed."""

    def __init__(self, layout: str, worker_id: int, seconds: float) -> None:
        self.layout = layout
        self.worker_id = worker_id
        self.seconds = seconds
        super().__init__(
            f"Snowflake layout {layout!r}: worker id {worker_id} was taken after a database failover; a lease "
            f"the failover lost may still be in use by another process, so its ids start in {seconds:.1f} s."
        )


class WorkerIdsExhausted(SnowflakeError):
    """Every worker id of the layout is leased by a live process; none is free until one expires or is released."""

    def __init__(self, layout: str, live: int, total: int) -> None:
        self.layout = layout
        self.live = live
        self.total = total
        super().__init__(
            f"Snowflake layout {layout!r}: all {total} worker ids are leased and {live} leases are live "
            "(none expired). Stop some processes, wait for dead ones' leases to expire, or raise "
            "SEGMENT_SEQ['SNOWFLAKE_MAX_WORKERS'] if it is below what the layout allows."
        )


class ClockMovedBackwards(SnowflakeError):
    """The wall clock is further behind the last id's time than the tolerance, so waiting is refused."""

    def __init__(self, layout: str, behind_ms: float, tolerance_ms: float) -> None:
        self.layout = layout
        self.behind_ms = behind_ms
        self.tolerance_ms = tolerance_ms
        super().__init__(
            f"Snowflake layout {layout!r}: the clock moved back {behind_ms:.0f} ms, more than the "
            f"{tolerance_ms:.0f} ms SEGMENT_SEQ['SNOWFLAKE_CLOCK_TOLERANCE'] allows waiting out; "
            "ids resume when the clock is past the last id's time again."
        )
