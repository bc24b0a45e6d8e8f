"""The concealment keys: each former key well formed, and (at `check --database`) the keys recorded at migrate
still making and reading the concealed texts, so a changed CONCEAL_KEY is said before the first number."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.db import DatabaseError, connections

from django_segment_seq.conf import SETTING_NAME, app_settings
from django_segment_seq.db.concealed_formats import ConcealedFormat
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.tables import has_table
from django_segment_seq.fields.concealed import concealed_formats
from django_segment_seq.flow.concealing import key_id, key_problem, usable_keys


def conceal_fallback_errors(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """Each former key is a key: one mistyped would leave the texts it made unreadable, found only when revealed."""
    fallbacks = configured.get("CONCEAL_KEY_FALLBACKS")
    if not isinstance(fallbacks, (list, tuple)):
        return []  # not set, or a wrong type that E003 reports
    errors: list[checks.CheckMessage] = []
    for index, key in enumerate(fallbacks):
        problem = key_problem(key, f"{SETTING_NAME}['CONCEAL_KEY_FALLBACKS'][{index}]")
        if problem is not None:
            errors.append(
                checks.Error(
                    f"{problem}.",
                    hint="List each former CONCEAL_KEY as it was: 32, 48 or 64 hex digits, read from the environment.",
                    id="django_segment_seq.E052",
                )
            )
    return errors


@checks.register(checks.Tags.database)
def check_concealment_keys(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The keys recorded at migrate for the concealed formats still make (E053) and read (W003) their texts: a
    changed CONCEAL_KEY is said at `check --database`, not found at the first number or a wrong reveal()."""
    alias = sequence_database()
    made = set(concealed_formats())
    if not databases or alias not in databases or not made or key_problem(app_settings().get("CONCEAL_KEY")):
        return []  # E047/E048 report a key that is missing or malformed
    try:
        if not has_table(connections[alias], ConcealedFormat._meta.db_table):
            return []  # not migrated yet: migrate records the formats
        recorded = list(ConcealedFormat.objects.using(alias).values_list("sequence_name", "format", "key_id"))
    except DatabaseError:
        return []  # the database is away: other checks and the first query say so
    current, usable = key_id(str(app_settings()["CONCEAL_KEY"])), usable_keys()
    names = {name for name, _format in made}
    found: list[checks.CheckMessage] = []
    for name, format, recorded_id in recorded:
        if (name, format) in made and recorded_id != current:
            found.append(
                checks.Error(
                    f"Sequence {name!r}: its texts {format!r} were concealed under another key than "
                    f"{SETTING_NAME}['CONCEAL_KEY'], so no new number is made (ConcealKeyChanged).",
                    hint="Change the format too (a new prefix, say) and list the former key in "
                    "CONCEAL_KEY_FALLBACKS, or put the former key back.",
                    id="django_segment_seq.E053",
                )
            )
        elif (name, format) not in made and name in names and recorded_id not in usable:
            found.append(
                checks.Warning(
                    f"Sequence {name!r}: the texts of its former format {format!r} were concealed under a key "
                    "that is neither CONCEAL_KEY nor in CONCEAL_KEY_FALLBACKS: reveal(), sync and the gap "
                    "report cannot read them.",
                    hint=f"Add the former key to {SETTING_NAME}['CONCEAL_KEY_FALLBACKS'].",
                    id="django_segment_seq.W003",
                )
            )
    return found
