"""django-segment-seq: unique sequence numbers from per-process cached ranges.

The public names load on first use (PEP 562), so importing the package, as Django does before the app
registry is ready, imports no model and every module can import what it needs at its top.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from django_segment_seq import moved

moved.install()

if TYPE_CHECKING:
    from django_segment_seq.api import (
        anext_value,
        anext_values,
        clear_cache,
        close_connections,
        give_back_unused,
        next_value,
        next_values,
        sequence_stats,
        wait_for_prefetch,
    )
    from django_segment_seq.audit.exceptions import (
        AlreadyVoided,
        EmptyReason,
        InvalidVoidOption,
        NeverHandedOut,
        OtherSeries,
        UnknownField,
        UnreadableNumber,
        VoidError,
    )
    from django_segment_seq.audit.models import VoidedNumber
    from django_segment_seq.audit.void import void
    from django_segment_seq.exceptions import (
        ConcealKeyChanged,
        SequenceContention,
        SequenceError,
        SequenceExhausted,
        SequenceMisconfigured,
        SequenceNotFound,
        SequenceScopeError,
        SequenceUnavailable,
    )
    from django_segment_seq.fields import SequenceField
    from django_segment_seq.fields.bulk import SequenceManager, SequenceQuerySet, fill_sequences
    from django_segment_seq.fields.code_numbers import next_text, next_texts
    from django_segment_seq.flow.rules import NumberRule
    from django_segment_seq.snowflake.exceptions import (
        ClockMovedBackwards,
        SnowflakeError,
        WorkerIdFenced,
        WorkerIdsExhausted,
        WorkerLeaseExpired,
    )
    from django_segment_seq.snowflake.fields import SnowflakeField
    from django_segment_seq.snowflake.generator import next_snowflake, release_worker_leases
    from django_segment_seq.snowflake.layouts import SnowflakeParts, parse_snowflake
    from django_segment_seq.snowflake.leases import live_worker_leases
    from django_segment_seq.sync import sync_sequence

# Each public name and the module that defines it.
_HOMES = {
    "anext_value": "api",
    "anext_values": "api",
    "clear_cache": "api",
    "close_connections": "api",
    "give_back_unused": "api",
    "next_value": "api",
    "next_values": "api",
    "sequence_stats": "api",
    "wait_for_prefetch": "api",
    "void": "audit.void",
    "VoidedNumber": "audit.models",
    "AlreadyVoided": "audit.exceptions",
    "EmptyReason": "audit.exceptions",
    "InvalidVoidOption": "audit.exceptions",
    "NeverHandedOut": "audit.exceptions",
    "OtherSeries": "audit.exceptions",
    "UnknownField": "audit.exceptions",
    "UnreadableNumber": "audit.exceptions",
    "VoidError": "audit.exceptions",
    "ConcealKeyChanged": "exceptions",
    "SequenceContention": "exceptions",
    "SequenceError": "exceptions",
    "SequenceExhausted": "exceptions",
    "SequenceMisconfigured": "exceptions",
    "SequenceNotFound": "exceptions",
    "SequenceScopeError": "exceptions",
    "SequenceUnavailable": "exceptions",
    "SequenceField": "fields",
    "SequenceManager": "fields.bulk",
    "SequenceQuerySet": "fields.bulk",
    "fill_sequences": "fields.bulk",
    "next_text": "fields.code_numbers",
    "next_texts": "fields.code_numbers",
    "NumberRule": "flow.rules",
    "ClockMovedBackwards": "snowflake.exceptions",
    "SnowflakeError": "snowflake.exceptions",
    "WorkerIdsExhausted": "snowflake.exceptions",
    "WorkerIdFenced": "snowflake.exceptions",
    "WorkerLeaseExpired": "snowflake.exceptions",
    "SnowflakeField": "snowflake.fields",
    "next_snowflake": "snowflake.generator",
    "release_worker_leases": "snowflake.generator",
    "SnowflakeParts": "snowflake.layouts",
    "parse_snowflake": "snowflake.layouts",
    "live_worker_leases": "snowflake.leases",
    "sync_sequence": "sync",
}

# Written out, not computed from _HOMES, so a type checker sees which names are exported (a test keeps both alike).
__all__ = [
    "AlreadyVoided",
    "ClockMovedBackwards",
    "ConcealKeyChanged",
    "EmptyReason",
    "InvalidVoidOption",
    "NeverHandedOut",
    "NumberRule",
    "OtherSeries",
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
    "UnknownField",
    "UnreadableNumber",
    "VoidError",
    "VoidedNumber",
    "WorkerIdFenced",
    "WorkerIdsExhausted",
    "WorkerLeaseExpired",
    "anext_value",
    "anext_values",
    "clear_cache",
    "close_connections",
    "fill_sequences",
    "give_back_unused",
    "live_worker_leases",
    "next_snowflake",
    "next_text",
    "next_texts",
    "next_value",
    "next_values",
    "parse_snowflake",
    "release_worker_leases",
    "sequence_stats",
    "sync_sequence",
    "void",
    "wait_for_prefetch",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
