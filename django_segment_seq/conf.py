"""The SEGMENT_SEQ settings dict: defaults, and a cached merged view that follows override_settings."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

SETTING_NAME = "SEGMENT_SEQ"

DEFAULTS: dict[str, Any] = {
    # Database alias holding the Sequence table; None asks the database router (db_for_write).
    "DATABASE": None,
    # Step of rows created on first use.
    "DEFAULT_STEP": 1000,
    # Conditional UPDATEs lost to other processes before SequenceContention.
    "MAX_RETRIES": 100,
    # Database errors in a row (lost connection, lock timeout) before SequenceUnavailable.
    "CONNECTION_RETRIES": 5,
    # Upper bound of the jittered back-off between attempts, in seconds.
    "MAX_BACKOFF": 0.5,
    # Longest wait, in seconds, for a sequence row another transaction holds (and for a background
    # fetch still running) before the caller fetches itself or gets SequenceUnavailable.
    "LOCK_TIMEOUT": 2.0,
    # Seconds an idle private allocation connection stays open; it reopens on demand.
    "CONNECTION_MAX_IDLE": 30.0,
    # Create a missing Sequence row on first use; False raises SequenceNotFound instead.
    "CREATE_ON_FIRST_USE": True,
    # Fetch the next range in a background thread before the current one runs out.
    "PREFETCH": True,
    # Share of the current range used (0.0-1.0) when the next one is fetched in the background.
    "PREFETCH_AT": 0.2,
    # Take bigger ranges under heavy demand and smaller ones under light demand (never below the row's step).
    "ADAPTIVE_STEP": True,
    # Ceiling of the adaptive range size; a row whose own step is larger keeps its step.
    "MAX_STEP": 1_000_000,
    # The adaptive step aims at ranges that last about this many seconds.
    "STEP_TARGET_SECONDS": 60.0,
    # Export sequence_stats() as Prometheus metrics (the prometheus extra; see docs/metrics.md).
    "METRICS": False,
    # A range fetch that lost this many compare-and-sets to other processes is logged; None: never.
    "LOG_RETRIES_AT": 10,
    # A sequence whose ranges pass this share (0.01-1.0) of its numbers, min_value to max_value, is logged once
    # per process and crossing; None: never.
    "LOG_USED_SHARE_AT": 0.8,
    # At a clean exit (and in close_connections()), give the unused rest of each cached range back to
    # its row when no other process allocated since, so a restart continues without a gap.
    "GIVE_BACK_UNUSED": True,
    # Snowflake ids count time from this instant, in Unix milliseconds (default 2026-01-01T00:00:00Z).
    "SNOWFLAKE_EPOCH_MS": 1_767_225_600_000,
    # A worker id's lease not renewed for this many seconds is free for another process.
    "SNOWFLAKE_LEASE_SECONDS": 60.0,
    # A clock found behind the last id by at most this many seconds is waited out; further back raises.
    "SNOWFLAKE_CLOCK_TOLERANCE": 0.1,
    # Worker ids a layout hands out, from 0; None means all its worker bits allow (1,024 classic, 256 js53).
    "SNOWFLAKE_MAX_WORKERS": None,
}

_cache: dict[str, Any] | None = None


def app_settings() -> dict[str, Any]:
    """The merged settings; unknown keys are reported by the system check, not here."""
    global _cache
    if _cache is None:
        merged = dict(DEFAULTS)
        merged.update(getattr(django_settings, SETTING_NAME, None) or {})
        _cache = merged
    return _cache


@receiver(setting_changed)
def _forget_settings(*, setting: str, **kwargs: Any) -> None:
    global _cache
    if setting == SETTING_NAME:
        _cache = None
