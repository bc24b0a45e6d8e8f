"""Numbering rules as a project has them: those made in code validated as fields are, one shape per sequence name
across fields and rules, and (at `check --database`) the table migrated and each name's recorded shape kept."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core import checks
from django.db import DatabaseError, connections

from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rule_shapes import RecordedShape
from django_segment_seq.db.table import Sequence
from django_segment_seq.db.tables import has_table, migrate_running
from django_segment_seq.exceptions import SequenceShapeChanged
from django_segment_seq.fields.labels import label_of, sequence_fields
from django_segment_seq.flow import shape_ledger
from django_segment_seq.flow.rules import NumberRule, rules_made_in_code

Place = tuple[str, NumberRule, Any]  # where a rule is used (a field's label, a module), the rule, the check's obj


def rule_places() -> list[Place]:
    """Every field of an installed model and every rule made in code, with where each is."""
    places: list[Place] = [(label_of(model, field), field.rule, field) for model, field in sequence_fields()]
    places += [(f"NumberRule in {module}", rule, None) for rule, module in rules_made_in_code()]
    return places


@checks.register()
def check_rules_made_in_code(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A rule made in code is checked as a field is, at `manage.py check`, not at its first number in production."""
    return [
        checks.Error(
            f"NumberRule {rule.sequence_name!r} (made in {module}): {problem}.",
            hint="Fix the rule where it is made; next_text() and next_value() refuse it until then.",
            id="django_segment_seq.E064",
        )
        for rule, module in rules_made_in_code()
        for problem in rule.problems
    ]


@checks.register()
def check_one_shape_per_name(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Fields and rules of one sequence name have one format, reset and scope."""
    return shape_clashes(rule_places())


def shape_clashes(places: Iterable[Place]) -> list[checks.CheckMessage]:
    """One error per place whose rule's shape differs from the first place of its sequence name. Two fields scoped
    differently are E025's, reported by the field."""
    first: dict[str, Place] = {}
    errors: list[checks.CheckMessage] = []
    for place in places:
        where, rule, obj = place
        if not isinstance(rule.sequence_name, str) or rule.problems:
            continue  # the field's checks, or E064, say what is wrong with it
        seen = first.setdefault(rule.sequence_name, place)
        if seen is place:
            continue
        shape, other = rule.shape, seen[1].shape
        if obj is not None and seen[2] is not None and shape.scope != other.scope:
            continue  # two fields scoped differently: E025
        if shape != other:
            errors.append(
                checks.Error(
                    f"Sequence {rule.sequence_name!r} has two shapes: {other.described()} in {seen[0]}, and "
                    f"{shape.described()} in {where}. Both count in the rows of one name, so one starts where the "
                    "other left off, and the ID service refuses a name that is not plain.",
                    hint="Give each rule its own sequence name, or the same format, reset and scope.",
                    obj=obj,
                    id="django_segment_seq.E065",
                )
            )
    return errors


@checks.register(checks.Tags.database)
def check_migrated_and_shapes_kept(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """At `check --database`: the app's table exists (E066), and each name keeps the reset and scope it was first
    used with (E067), so a deploy that would repeat texts is stopped before its first number."""
    alias = sequence_database()
    if not databases or alias not in databases or migrate_running():
        return []
    try:
        connection = connections[alias]
        if not has_table(connection, Sequence._meta.db_table):
            return [
                checks.Error(
                    f"Database {alias!r} has no table {Sequence._meta.db_table}: the app was not migrated there, "
                    "so every number would fail.",
                    hint=f"Run `python manage.py migrate --database {alias}`.",
                    id="django_segment_seq.E066",
                )
            ]
        if not has_table(connection, RecordedShape._meta.db_table):
            return []  # migrated before shapes were recorded: the migration that makes the table comes next
        recorded = shape_ledger.recorded_shapes(alias)
    except DatabaseError:
        return []  # the database is away: other checks and the first query say so
    errors: list[checks.CheckMessage] = []
    for where, rule, obj in rule_places():
        found = recorded.get(rule.sequence_name) if isinstance(rule.sequence_name, str) else None
        if found is None or rule.problems:
            continue
        try:
            shape_ledger.refuse_if_changed(rule.sequence_name, found, rule.shape)
        except SequenceShapeChanged as exc:
            errors.append(checks.Error(f"{where}: {exc}", obj=obj, id="django_segment_seq.E067"))
    return errors
