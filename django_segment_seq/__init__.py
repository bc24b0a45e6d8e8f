"""django-segment-seq: unique sequence numbers from per-process cached ranges."""

from .api import clear_cache, close_connections, next_value, next_values, sequence_stats, wait_for_prefetch
from .bulk import SequenceManager, SequenceQuerySet, fill_sequences
from .exceptions import (
    SequenceContention,
    SequenceError,
    SequenceExhausted,
    SequenceMisconfigured,
    SequenceNotFound,
    SequenceUnavailable,
)
from .fields import SequenceField
from .sync import sync_sequence

__all__ = [
    "SequenceField",
    "SequenceManager",
    "SequenceQuerySet",
    "fill_sequences",
    "sync_sequence",
    "wait_for_prefetch",
    "next_value",
    "next_values",
    "sequence_stats",
    "clear_cache",
    "close_connections",
    "SequenceError",
    "SequenceExhausted",
    "SequenceContention",
    "SequenceUnavailable",
    "SequenceNotFound",
    "SequenceMisconfigured",
]
