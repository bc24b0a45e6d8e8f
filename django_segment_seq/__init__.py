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
    SequenceUnavailable,
)
from .fields import SequenceField

__all__ = [
    "SequenceField",
    "SequenceManager",
    "SequenceQuerySet",
    "fill_sequences",
    "wait_for_prefetch",
    "next_value",
    "next_values",
    "anext_value",
    "anext_values",
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
