"""Project checks: the SEGMENT_SEQ setting, the router and SQLite's single writer, so a typo fails at
`manage.py check`, not under load. The fields' own checks are in fields/checks.py."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from django.conf import settings
from django.core import checks

from django_segment_seq.conf import DEFAULTS, SETTING_NAME

_TYPES: dict[str, tuple[type, ...]] = {
    "DATABASE": (str, type(None)),
    "DEFAULT_STEP": (int,),
    "MAX_RETRIES": (int,),
    "CONNECTION_RETRIES": (int,),
    "MAX_BACKOFF": (int, float),
    "LOCK_TIMEOUT": (int, float),
    "CONNECTION_MAX_IDLE": (int, float),
    "CREATE_ON_FIRST_USE": (bool,),
    "PREFETCH": (bool,),
    "PREFETCH_AT": (int, float),
    "ADAPTIVE_STEP": (bool,),
    "MAX_STEP": (int,),
    "STEP_TARGET_SECONDS": (int, float),
    "METRICS": (bool,),
    "LOG_RETRIES_AT": (int, type(None)),
    "LOG_USED_SHARE_AT": (int, float, type(None)),
    "GIVE_BACK_UNUSED": (bool,),
    "SNOWFLAKE_EPOCH_MS": (int,),
    "SNOWFLAKE_LEASE_SECONDS": (int, float),
    "SNOWFLAKE_CLOCK_TOLERANCE": (int, float),
    "SNOWFLAKE_MAX_WORKERS": (int, type(None)),
}
# Smallest and largest accepted values of numeric keys (others: not negative).
_BOUNDS: dict[str, tuple[float, float | None]] = {
    "DEFAULT_STEP": (1, None),
    "MAX_STEP": (1, None),
    "PREFETCH_AT": (0, 1),
    "STEP_TARGET_SECONDS": (0.001, None),
    "LOCK_TIMEOUT": (0.001, None),
    "LOG_RETRIES_AT": (1, None),
    "LOG_USED_SHARE_AT": (0.01, 1),
    "SNOWFLAKE_LEASE_SECONDS": (1, None),
    "SNOWFLAKE_CLOCK_TOLERANCE": (0, 10),
    "SNOWFLAKE_MAX_WORKERS": (1, 1024),
}


@checks.register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    configured = getattr(settings, SETTING_NAME, None)
    if configured is None:
        return []
    if not isinstance(configured, dict):
        return [
            checks.Error(
                f"{SETTING_NAME} must be a dict, not {type(configured).__name__}.",
                id="django_segment_seq.E001",
            )
        ]
    errors: list[checks.CheckMessage] = []
    for key in sorted(set(configured) - set(DEFAULTS)):
        errors.append(
            checks.Error(
                f"{SETTING_NAME} has an unknown key {key!r}.",
                hint=f"Known keys: {', '.join(sorted(DEFAULTS))}.",
                id="django_segment_seq.E002",
            )
        )
    for key, kinds in _TYPES.items():
        if key not in configured:
            continue
        value = configured[key]
        wrong_type = not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
        low, high = _BOUNDS.get(key, (0, None))
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        out_of_bounds = numeric and (value < low or (high is not None and value > high))
        if wrong_type or out_of_bounds:
            if kinds == (bool,):
                bounds = "."
            elif high is not None:
                bounds = f", from {low} to {high}."
            else:
                bounds = ", not negative." if low == 0 else f", at least {low}."
            errors.append(
                checks.Error(
                    f"{SETTING_NAME}[{key!r}] is {value!r}.",
                    hint=f"Expected {' or '.join(k.__name__ for k in kinds)}{bounds}",
                    id="django_segment_seq.E003",
                )
            )
    alias = configured.get("DATABASE")
    if isinstance(alias, str) and alias not in settings.DATABASES:
        errors.append(
            checks.Error(
                f"{SETTING_NAME}['DATABASE'] names {alias!r}, which is not in DATABASES.",
                id="django_segment_seq.E004",
            )
        )
    elif isinstance(alias, str):
        errors += _check_router_agrees(alias)
    if configured.get("METRICS") is True:
        errors += _check_metrics()
    return errors


def _check_router_agrees(alias: str) -> list[checks.CheckMessage]:
    """Numbers come from `alias`; the admin and migrations must see the same table, or edits miss it."""
    from django.db import router

    from django_segment_seq.models import Sequence

    routed = router.db_for_write(Sequence)
    if routed == alias:
        return []
    return [
        checks.Error(
            f"{SETTING_NAME}['DATABASE'] is {alias!r}, but the database routers send the Sequence model to "
            f"{routed!r}: the admin and migrations would use another table than the one numbers come from.",
            hint="Add 'django_segment_seq.routers.SequenceRouter' to DATABASE_ROUTERS.",
            id="django_segment_seq.E005",
        )
    ]


def _check_metrics() -> list[checks.CheckMessage]:
    """METRICS needs prometheus_client, and its multiprocess mode an existing directory to write to."""
    if importlib.util.find_spec("prometheus_client") is None:
        return [
            checks.Error(
                f"{SETTING_NAME}['METRICS'] is on, but prometheus_client is not installed: no metrics are exported.",
                hint="pip install django-segment-seq[prometheus]",
                id="django_segment_seq.E006",
            )
        ]
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory is not None and not os.path.isdir(directory):
        return [
            checks.Error(
                f"PROMETHEUS_MULTIPROC_DIR is {directory!r}, which is not a directory: every metric update would fail.",
                hint="Create it (empty) before the server starts its workers, or unset it for a single process.",
                id="django_segment_seq.E007",
            )
        ]
    return []


@checks.register()
def check_sqlite_single_writer(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A shared SQLite file whose transactions take the write lock at BEGIN leaves no room for an independent commit."""
    from django_segment_seq.db import sqlite
    from django_segment_seq.db.routing import sequence_database

    alias = sequence_database()
    if alias not in settings.DATABASES or not sqlite.shares_file(alias) or not sqlite.immediate_transactions(alias):
        return []
    return [
        checks.Warning(
            f"Database {alias!r} is SQLite with transaction_mode "
            f"{settings.DATABASES[alias]['OPTIONS']['transaction_mode']!r} and also holds the Sequence table: every "
            "transaction holds the file's write lock from its first statement, so numbers taken inside a transaction "
            "are taken there too and come back if it rolls back.",
            hint="Keep the Sequence table in a SQLite file of its own: SEGMENT_SEQ['DATABASE'] naming a second "
            "database and 'django_segment_seq.routers.SequenceRouter' in DATABASE_ROUTERS.",
            id="django_segment_seq.W001",
        )
    ]
