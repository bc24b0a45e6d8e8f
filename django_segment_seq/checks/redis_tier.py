"""SEGMENT_SEQ["REDIS"]: the tier's settings, redis-py installed, and no gapless field or cycling row on it,
since a block's unused rest would be a gap and a wrap-around would bring Redis numbers back."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core import checks
from django.db import DatabaseError, connections

from django_segment_seq.conf import SETTING_NAME, redis_settings
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.table import Sequence
from django_segment_seq.db.tables import has_table
from django_segment_seq.redistier.config import problems, redis_installed, tier_config


@checks.register()
def check_redis_tier(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """SEGMENT_SEQ["REDIS"]: known keys and values, one server named, redis-py installed, no gapless row on it."""
    merged = redis_settings()
    if merged is None:
        return []
    found = problems(merged)
    if found:
        return [
            checks.Error(
                f"{SETTING_NAME}['REDIS']: {problem}.", hint="See docs/redis.md.", id="django_segment_seq.E060"
            )
            for problem in found
        ]
    if not redis_installed():
        return [
            checks.Error(
                f"{SETTING_NAME}['REDIS'] is set, but redis-py is not installed: every row takes its blocks from "
                "the table.",
                hint="pip install django-segment-seq[redis]",
                id="django_segment_seq.E061",
            )
        ]
    return _gapless_on_the_tier()


def _gapless_on_the_tier() -> list[checks.CheckMessage]:
    """A gapless field's rows cannot take blocks from Redis: a block's unused rest would be a gap."""
    config = tier_config()
    if config is None:
        return []
    errors: list[checks.CheckMessage] = []
    for model in apps.get_models():
        for field in model._meta.get_fields():
            name = getattr(field, "sequence_name", None)
            if not getattr(field, "gapless", False) or not isinstance(name, str):
                continue
            if any(config.covers(row) for row in (name, f"{name}@2026-11-26", f"{name}@x=1")):
                errors.append(
                    checks.Error(
                        f"{model._meta.label}.{field.name} is gapless, and its sequence {name!r} is named by "
                        f"{SETTING_NAME}['REDIS']['SEQUENCES']: the Redis tier hands out blocks, which leave gaps.",
                        hint="Leave gapless sequences out of SEQUENCES.",
                        obj=field,
                        id="django_segment_seq.E062",
                    )
                )
    return errors


@checks.register(checks.Tags.database)
def check_redis_rows(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Rows on the tier that cycle: a wrap-around would bring Redis numbers back (manage.py check --database)."""
    config = tier_config()
    alias = sequence_database()
    if config is None or not databases or alias not in databases:
        return []
    try:
        if not has_table(connections[alias], Sequence._meta.db_table):
            return []  # not migrated yet (migrate runs this check before it creates the table)
        rows = list(Sequence._base_manager.using(alias).filter(cycle=True).values_list("name", flat=True))
    except DatabaseError:
        return []  # the database is away: other checks and the first query say so
    return [
        checks.Error(
            f"Sequence row {name!r} cycles and is named by {SETTING_NAME}['REDIS']['SEQUENCES']: it takes its "
            "blocks from the table instead.",
            hint="Leave cycling rows out of SEQUENCES, or turn cycle off.",
            id="django_segment_seq.E063",
        )
        for name in rows
        if config.covers(name)
    ]
