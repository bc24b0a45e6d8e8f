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
    # Create a missing Sequence row on first use; False raises SequenceNotFound instead.
    "CREATE_ON_FIRST_USE": True,
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
