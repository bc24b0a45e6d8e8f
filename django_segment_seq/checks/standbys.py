"""PostgreSQL's standbys: STANDBYS well formed, and (at `check --database`) a primary whose standbys the app does
not watch, or whose gapless numbers an asynchronous standby may lose, since a promoted standby would hand out
those numbers again."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks
from django.db import DatabaseError, connections

from django_segment_seq.conf import SETTING_NAME
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.standbys import asynchronous_replication, streaming_standbys, watched


def standbys_errors(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """STANDBYS maps aliases of PostgreSQL databases to a count of standbys: a typo would leave a primary unguarded."""
    standbys = configured.get("STANDBYS")
    if not isinstance(standbys, dict):
        return []  # None, or a wrong type that E003 reports
    return [
        checks.Error(
            f"{SETTING_NAME}['STANDBYS'][{alias!r}] is {count!r}: STANDBYS maps aliases of PostgreSQL databases "
            "to the number (0 or more) of standbys that must confirm the primary's writes.",
            hint='For example {"default": 1}; {"default": 0} for a primary run alone on purpose.',
            id="django_segment_seq.E055",
        )
        for alias, count in standbys.items()
        if alias not in settings.DATABASES
        or "postgresql" not in str(settings.DATABASES[alias].get("ENGINE", ""))
        or not isinstance(count, int)
        or isinstance(count, bool)
        or count < 0
    ]


@checks.register(checks.Tags.database)
def check_unwatched_standbys(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """A PostgreSQL primary with standbys that the app does not watch: cut off from them, it would hand out numbers
    a promoted standby hands out again (manage.py check --database)."""
    alias = sequence_database()
    if not databases or alias not in databases or connections[alias].vendor != "postgresql":
        return []
    connection = connections[alias]
    try:
        found = streaming_standbys(connection)
    except DatabaseError:
        return []  # a standby, or a server that does not say: nothing to warn of
    if found == 0 or watched(connection):
        return []
    return [
        checks.Warning(
            f"Database {alias!r} is a PostgreSQL primary with {found} standby(s), and the app does not require them "
            "to confirm its writes: cut off from them while application servers still reach it, it would hand out "
            "numbers that the promoted standby hands out again.",
            hint=f'Set {SETTING_NAME}["STANDBYS"] = {{{alias!r}: 1}} (HOST listing several hosts does it by itself); '
            "see docs/clusters.md, Partitions.",
            id="django_segment_seq.W004",
        )
    ]


@checks.register(checks.Tags.database)
def check_gapless_replication(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """Gapless numbers commit with the caller's rows on the primary alone: with asynchronous standbys, an old
    primary cut off from them for up to STANDBY_LAG commits numbers a promoted standby hands out again."""
    alias = sequence_database()
    if not databases or alias not in databases or connections[alias].vendor != "postgresql":
        return []
    fields = gapless_fields()
    if not fields:
        return []
    try:
        reason = asynchronous_replication(connections[alias])
    except DatabaseError:
        return []  # a server that does not say: nothing to warn of
    if reason is None:
        return []
    window = (
        f"for up to {SETTING_NAME}['STANDBY_LAG'] seconds"
        if watched(connections[alias])
        else "for as long as the partition lasts, its standbys being unwatched (W004)"
    )
    return [
        checks.Warning(
            f"Database {alias!r} is a PostgreSQL primary where gapless numbers are taken ({', '.join(fields)}), "
            f"and {reason}: cut off from its standby while callers still reach it, it commits gapless "
            f"numbers ({window}) that the promoted standby never received and hands out again.",
            hint="Make a standby synchronous: synchronous_standby_names naming it, with synchronous_commit on or "
            "remote_apply (Patroni: synchronous_mode: true); see docs/clusters.md, Partitions.",
            id="django_segment_seq.W005",
        )
    ]


def gapless_fields() -> list[str]:
    """The fields, as "app.Model.field", that take gapless numbers."""
    return [
        f"{model._meta.label}.{field.name}"
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if getattr(field, "gapless", False) is True and isinstance(getattr(field, "sequence_name", None), str)
    ]
