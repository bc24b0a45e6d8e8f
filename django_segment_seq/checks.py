"""System checks of the SEGMENT_SEQ setting, so a typo fails at `manage.py check`, not under load."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from .conf import DEFAULTS, SETTING_NAME

_TYPES: dict[str, tuple[type, ...]] = {
    "DATABASE": (str, type(None)),
    "DEFAULT_STEP": (int,),
    "MAX_RETRIES": (int,),
    "CONNECTION_RETRIES": (int,),
    "MAX_BACKOFF": (int, float),
    "CREATE_ON_FIRST_USE": (bool,),
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
    errors = []
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
        negative = isinstance(value, (int, float)) and not isinstance(value, bool) and value < (1 if key == "DEFAULT_STEP" else 0)
        if wrong_type or negative:
            errors.append(
                checks.Error(
                    f"{SETTING_NAME}[{key!r}] is {value!r}.",
                    hint=f"Expected {' or '.join(k.__name__ for k in kinds)}"
                    + (", at least 1." if key == "DEFAULT_STEP" else ", not negative." if kinds != (bool,) else "."),
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
    return errors
