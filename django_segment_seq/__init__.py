"""django-segment-seq: unique sequence numbers from per-process cached ranges."""

from .api import (
    anext_value,
    anext_values,
    clear_cache,
    close_connections,
    next_value,
    next_values,
    sequence_stats,
    wait_for_prefetch,
)
from .bulk import SequenceManager, SequenceQuerySet, fill_sequences
from .exceptions import (
    SequenceContention,
    SequenceError,
    SequenceExhausted,
    SequenceMisconfigured,
    SequenceNotFound,
    SequenceScopeError,
    SequenceUnavailable,
)
from .fields import SequenceField
from .snowflake.exceptions import ClockMovedBackwards, SnowflakeError, WorkerIdsExhausted, WorkerLeaseExpired
from .snowflake.fields import SnowflakeField
from .snowflake.generator import next_snowflake, release_worker_leases
from .snowflake.layouts import SnowflakeParts, parse_snowflake
from .snowflake.leases import live_worker_leases
from .sync import sync_sequence

__all__ = [
    "ClockMovedBackwards",
    "SequenceContention",
    "SequenceError",
    "SequenceExhausted",
    "SequenceField",
    "SequenceManager",
    "SequenceMisconfigured",
    "SequenceNotFound",
    "SequenceQuerySet",
    "SequenceScopeError",
    "SequenceUnavailable",
    "SnowflakeError",
    "SnowflakeField",
    "SnowflakeParts",
    "WorkerIdsExhausted",
    "WorkerLeaseExpired",
    "anext_value",
    "anext_values",
    "clear_cache",
    "close_connections",
    "fill_sequences",
    "live_worker_leases",
    "next_snowflake",
    "next_value",
    "next_values",
    "parse_snowflake",
    "release_worker_leases",
    "sequence_stats",
    "sync_sequence",
    "wait_for_prefetch",
]
