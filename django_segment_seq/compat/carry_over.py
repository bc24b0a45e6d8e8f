"""Carrying django-sequences' rows (its table `sequences_sequence`: name, last) over to this app's Sequence rows,
never lowering a value, all in one transaction, the old table left as it was."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import connections, transaction

from django_segment_seq.conf import app_settings
from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.db.rownames import validate_sequence_name
from django_segment_seq.db.statements import select_sequences_rows
from django_segment_seq.db.table import Sequence

# django-sequences' table, as its migration 0001 creates it.
SEQUENCES_TABLE = "sequences_sequence"


@dataclass(frozen=True)
class Carry:
    """What one of django-sequences' rows becomes here: a new row, a row moved forward, or nothing to do."""

    name: str
    last: int
    before: int | None  # this app's value before, None when the row is new
    # Whether the row here wraps (cycle on, or a maximum of its own): django-sequences' table holds no wrap,
    # its calls give reset_value, so a row without one takes it from the first compatible call that gives one.
    wraps: bool = False

    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        return "move" if self.before < self.last else "keep"


class CarryRefused(Exception):
    """Rows that cannot become Sequence rows here (a name too long, say): nothing was written."""


def plan(alias: str) -> list[Carry]:
    """What carrying django-sequences' rows over would do; CarryRefused lists every row that cannot be carried."""
    connection = connections[alias]
    if SEQUENCES_TABLE not in connection.introspection.table_names():
        raise CarryRefused(f"database {alias!r} has no table {SEQUENCES_TABLE!r}: django-sequences never ran there")
    with connection.cursor() as cursor:
        cursor.execute(select_sequences_rows(connection, SEQUENCES_TABLE))
        found = [(str(name), int(last)) for name, last in cursor.fetchall()]
    rows = Sequence._base_manager.using(alias).filter(name__in=[name for name, _ in found])
    existing = {row[0]: row[1:] for row in rows.values_list("name", "value", "max_value", "cycle")}
    refused = []
    for name, last in found:
        try:
            validate_sequence_name(name)
        except ValidationError as exc:
            refused.append(f"{name[:40]!r}: {' '.join(exc.messages).rstrip('.')}")
        if name in existing and existing[name][1] < last:
            refused.append(
                f"{name!r}: its maximum here, {existing[name][1]}, is below django-sequences' last value {last} "
                f"(raise it first: segment_seq set {name} --max N)"
            )
    if refused:
        raise CarryRefused("these rows cannot be carried over, so none was: " + "; ".join(refused))
    return [carry(name, last, existing.get(name)) for name, last in found]


def carry(name: str, last: int, row: tuple[int, int, bool] | None) -> Carry:
    """One of django-sequences' rows against this app's (value, max_value, cycle), or None when there is none."""
    if row is None:
        return Carry(name, last, None)
    value, max_value, cycle = row
    return Carry(name, last, value, wraps=cycle or max_value != BIGINT_MAX)


def carry_over(alias: str) -> list[Carry]:
    """Create the missing rows and move the others forward to django-sequences' last value, in one transaction."""
    with transaction.atomic(using=alias):
        rows = Sequence._base_manager.using(alias).select_for_update()
        list(rows.filter(name__in=[carry.name for carry in plan(alias)]))  # locked before the plan is made
        carries = plan(alias)
        for each in carries:
            if each.action == "create":
                Sequence.objects.using(alias).create(
                    name=each.name,
                    value=each.last,
                    min_value=min(1, each.last),
                    step=app_settings()["DEFAULT_STEP"],
                )
            elif each.action == "move":
                row = rows.get(name=each.name)
                row.value = each.last
                row.save(update_fields=["value"])  # a conditional, forward-only UPDATE
    return carries
