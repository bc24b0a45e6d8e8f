"""How a Snowflake id splits into time, worker id and counter, per layout, and how to read one back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from django_segment_seq.conf import app_settings

UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Layout:
    """Bit widths of one layout: time (in `unit_ms` ticks since the epoch), worker id and counter, high to low."""

    name: str
    time_bits: int
    worker_bits: int
    counter_bits: int
    unit_ms: int

    @property
    def max_time(self) -> int:
        return (1 << self.time_bits) - 1

    @property
    def max_worker(self) -> int:
        return (1 << self.worker_bits) - 1

    @property
    def max_counter(self) -> int:
        return (1 << self.counter_bits) - 1

    @property
    def worker_shift(self) -> int:
        return self.counter_bits

    @property
    def time_shift(self) -> int:
        return self.counter_bits + self.worker_bits

    @property
    def bits(self) -> int:
        return self.time_bits + self.worker_bits + self.counter_bits

    @property
    def ids_per_second(self) -> int:
        """The most ids one worker (one process) can make in a second; past that it waits for the next tick."""
        return (self.max_counter + 1) * 1000 // self.unit_ms

    @property
    def lifetime(self) -> timedelta:
        return timedelta(milliseconds=(self.max_time + 1) * self.unit_ms)

    def compose(self, ticks: int, worker_id: int, counter: int) -> int:
        return (ticks << self.time_shift) | (worker_id << self.worker_shift) | counter


# 41-bit milliseconds (69.7 years), 1,024 workers, 4,096 ids per millisecond each: Twitter's layout.
CLASSIC = Layout("classic", time_bits=41, worker_bits=10, counter_bits=12, unit_ms=1)
# Below 2**53, so a JavaScript number holds it exactly: 31-bit seconds (68 years), 256 workers, 16,384 ids/s each.
JS53 = Layout("js53", time_bits=31, worker_bits=8, counter_bits=14, unit_ms=1000)

LAYOUTS: dict[str, Layout] = {layout.name: layout for layout in (CLASSIC, JS53)}


def get_layout(name: str) -> Layout:
    try:
        return LAYOUTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"Unknown Snowflake layout {name!r}; use one of {', '.join(sorted(LAYOUTS))}.") from None


class SnowflakeParts(NamedTuple):
    """What an id says: when it was made (UTC), by which worker id, and its place among that tick's ids."""

    instant: datetime
    worker_id: int
    counter: int


def instant_of_ms(milliseconds: int) -> datetime | None:
    """A Unix-millisecond column as an aware UTC datetime; None for 0 (never set)."""
    return UNIX_EPOCH + timedelta(milliseconds=milliseconds) if milliseconds else None


def epoch_ms() -> int:
    """The configured epoch, Unix milliseconds: ids count time from here."""

    return int(app_settings()["SNOWFLAKE_EPOCH_MS"])


def parse_snowflake(value: int, *, layout: str = "classic", epoch: int | None = None) -> SnowflakeParts:
    """Split an id made with `layout` (and the configured epoch, or `epoch` in Unix ms) into its parts."""
    shape = get_layout(layout)
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"A Snowflake id is an int, not {type(value).__name__}.")
    if value < 0 or value >> shape.bits:
        raise ValueError(f"{value} is not a {layout!r} Snowflake id: it must be between 0 and 2**{shape.bits} - 1.")
    ticks = value >> shape.time_shift
    worker_id = (value >> shape.worker_shift) & shape.max_worker
    counter = value & shape.max_counter
    start = epoch_ms() if epoch is None else epoch
    instant = UNIX_EPOCH + timedelta(milliseconds=start + ticks * shape.unit_ms)
    return SnowflakeParts(instant, worker_id, counter)
