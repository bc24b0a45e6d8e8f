"""The SEGMENT_SEQ setting as a whole: known keys, values of the right type and bounds, a database the routers
agree on, and what METRICS needs; each key with more to it is checked by its own module, called from here."""

from __future__ import annotations

import importlib.util
import math
import os
import time
from typing import Any

from django.conf import settings
from django.core import checks
from django.db import router

from django_segment_seq.checks.concealment import conceal_fallback_errors
from django_segment_seq.checks.servers import servers_errors
from django_segment_seq.checks.standbys import standbys_errors
from django_segment_seq.conf import DEFAULTS, SETTING_NAME, SETTINGS, Setting
from django_segment_seq.db.table import Sequence


@checks.register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """SEGMENT_SEQ is a dict of known keys, each value as conf.SETTINGS allows, naming a database that exists."""
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
    errors = [
        *_check_keys(configured),
        *_check_values(configured),
        *_check_database(configured),
        *servers_errors(configured),
        *standbys_errors(configured),
        *conceal_fallback_errors(configured),
    ]
    if configured.get("METRICS") is True:
        errors += _check_metrics()
    return errors


def _check_keys(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """Every key is one conf.SETTINGS declares: a misspelt one would silently leave the default in force."""
    return [
        checks.Error(
            f"{SETTING_NAME} has an unknown key {key!r}.",
            hint=f"Known keys: {', '.join(sorted(DEFAULTS))}.",
            id="django_segment_seq.E002",
        )
        for key in sorted(set(configured) - set(DEFAULTS))
    ]


def _check_values(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """Each value has its setting's type and lies within its bounds."""
    return [
        checks.Error(
            f"{SETTING_NAME}[{setting.name!r}] is {configured[setting.name]!r}.",
            hint=f"Expected {expected(setting)}",
            id="django_segment_seq.E003",
        )
        for setting in SETTINGS
        if setting.name in configured and not valid(setting, configured[setting.name])
    ]


def _check_database(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """DATABASE names an alias of DATABASES that the routers also send the Sequence model to."""
    alias = configured.get("DATABASE")
    if not isinstance(alias, str):
        return []
    if alias not in settings.DATABASES:
        return [
            checks.Error(
                f"{SETTING_NAME}['DATABASE'] names {alias!r}, which is not in DATABASES.",
                id="django_segment_seq.E004",
            )
        ]
    return _check_router_agrees(alias)


def _check_router_agrees(alias: str) -> list[checks.CheckMessage]:
    """Numbers come from `alias`; the admin and migrations must see the same table, or edits miss it."""
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


def valid(setting: Setting, value: Any) -> bool:
    """Whether `value` has one of the setting's types and, for a number, is finite and within its bounds."""
    if isinstance(value, bool) and bool not in setting.kinds:
        return False
    if not isinstance(value, setting.kinds):
        return False
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    if setting.past_instant and value > time.time() * 1000:
        return False
    return math.isfinite(value) and value >= setting.low and (setting.high is None or value <= setting.high)


def expected(setting: Setting) -> str:
    """What a setting takes, as the hint of E003 says it."""
    kinds = " or ".join(kind.__name__ for kind in setting.kinds)
    if setting.past_instant:
        return f"{kinds}, an instant in Unix milliseconds that is not in the future."
    if setting.is_flag or not ({int, float} & set(setting.kinds)):
        return f"{kinds}."
    if setting.high is not None:
        return f"{kinds}, from {setting.low:g} to {setting.high:g}."
    return f"{kinds}, not negative." if setting.low == 0 else f"{kinds}, at least {setting.low:g}."
