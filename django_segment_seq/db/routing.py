"""Which database's Sequence table serves a call: `using`, else SEGMENT_SEQ['DATABASE'], else the routers."""

from __future__ import annotations

from typing import Any

from django.core.signals import setting_changed
from django.db import DEFAULT_DB_ALIAS, router
from django.dispatch import receiver

from django_segment_seq.conf import SETTING_NAME, app_settings
from django_segment_seq.db.table import Sequence

# The alias when no call can change it (set in SEGMENT_SEQ, or no routers): saves the hot path a router call.
_fixed_alias: str | None = None


def fixed_alias() -> str | None:
    """The alias every call without `using` gets, once it is known not to depend on the routers."""
    return _fixed_alias


def serving_alias(using: str | None = None) -> str:
    """sequence_database(using) for the hot path: the fixed alias without a call to the routers once it is known."""
    return using or _fixed_alias or sequence_database()


def sequence_database(using: str | None = None) -> str:
    """The alias whose Sequence table serves a call."""
    global _fixed_alias
    if using:
        return using
    alias = app_settings()["DATABASE"]
    if alias:
        _fixed_alias = alias
        return str(alias)
    if not router.routers:
        _fixed_alias = DEFAULT_DB_ALIAS
        return DEFAULT_DB_ALIAS

    return str(router.db_for_write(Sequence))


@receiver(setting_changed)
def _forget_alias(*, setting: str, **kwargs: Any) -> None:
    global _fixed_alias
    if setting in (SETTING_NAME, "DATABASE_ROUTERS"):
        _fixed_alias = None
