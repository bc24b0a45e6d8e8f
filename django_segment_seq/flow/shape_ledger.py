"""Which shape (format, reset, scope) each sequence name was first used with: recorded at first use, compared before a
process makes numbers by a rule.

A reset or a scope added, dropped or changed under a name already used moves its counting to new rows that start at
the minimum, so texts already handed out would be made again: such a change is refused with SequenceShapeChanged. A
changed format alone keeps counting in the same rows, so the new shape is recorded and numbers go on.
"""

from __future__ import annotations

from django.db import Error, connections, router
from django.utils import timezone

from django_segment_seq.allocator.connections import pool
from django_segment_seq.db.bounded import bounded_when_used, own_savepoint
from django_segment_seq.db.rule_shapes import RecordedShape, insert_if_missing_sqlite, select_shape
from django_segment_seq.db.sqlite import holds_write_lock
from django_segment_seq.exceptions import SequenceShapeChanged, SequenceUnavailable

# (alias, sequence name, shape) this process has compared with the record.
_verified: set[tuple[str, str, tuple[object, ...]]] = set()

Shape = tuple[str | None, str, tuple[str, ...]]  # a RuleShape: format, reset, scope


class Generation:
    """Moved by forget(), so a field that compared its shape once knows when to compare again."""

    number = 0


def verify(alias: str, name: str, shape: Shape) -> None:
    """SequenceShapeChanged when `name` was recorded with another reset or scope; the shape recorded when it was not
    recorded yet. Once per process and shape."""
    if (alias, name, shape) in _verified:
        return
    if not router.allow_migrate_model(alias, RecordedShape):
        _verified.add((alias, name, shape))
        return
    # The driver's own error, raised raw by a session killed mid-statement (the wrapper's class attribute, untyped).
    driver_error: type[Exception] = getattr(connections[alias], "Database").Error  # noqa: B009
    try:
        if connections[alias].vendor == "sqlite":
            recorded = _on_sqlite(alias, name, shape)
        else:
            recorded = _on_callers_connection(alias, name, shape)
        refuse_if_changed(name, recorded, shape)
        if recorded[2] != (shape[0] or ""):
            _reformat(alias, name, shape)  # the same rows, a new format: numbers go on, the record follows
    except (Error, driver_error) as exc:  # the table held locked past LOCK_TIMEOUT, the server or the session gone
        raise SequenceUnavailable(name, alias, 1, exc) from exc
    _verified.add((alias, name, shape))


def refuse_if_changed(name: str, recorded: tuple[str, str, str], shape: Shape) -> None:
    """SequenceShapeChanged when the recorded reset or scope is not the shape's."""
    reset, scope, _format = recorded
    if (reset, scope) != (shape[1], ",".join(shape[2])):
        raise SequenceShapeChanged(
            name, described(recorded[2], reset, scope), described(shape[0] or "", shape[1], ",".join(shape[2]))
        )


def described(format: str, reset: str, scope: str) -> str:
    """A recorded shape as people read it in an error."""
    return f"reset={reset or None!r} and scope={scope or None!r} (format {format or None!r})"


def reshape(alias: str, name: str) -> bool:
    """Forget the recorded shape of `name`, so its next use records the rule it has then; whether one was recorded."""
    deleted, _by_model = RecordedShape.objects.using(alias).filter(sequence_name=name).delete()
    forget()
    return bool(deleted)


def recorded_shapes(alias: str) -> dict[str, tuple[str, str, str]]:
    """Every recorded (reset, scope, format) by sequence name: what `check --database` compares the rules with."""
    rows = RecordedShape.objects.using(alias).values_list("sequence_name", "reset", "scope", "format")
    return {name: (reset, scope, format) for name, reset, scope, format in rows}


def _on_callers_connection(alias: str, name: str, shape: Shape) -> tuple[str, str, str]:
    """The recorded shape, recorded first if missing, on the caller's connection: no second connection is needed
    (a role at its connection limit still gets numbers), each statement's lock wait is bounded by LOCK_TIMEOUT, and
    a failure leaves the caller's transaction whole (its own savepoint). A test's transaction takes the record back
    with the rows it made."""
    connection = connections[alias]
    with bounded_when_used([alias]), own_savepoint(connection):
        row, _created = RecordedShape.objects.using(alias).get_or_create(
            sequence_name=name, defaults={"reset": shape[1], "scope": ",".join(shape[2]), "format": shape[0] or ""}
        )
    return (row.reset, row.scope, row.format)


def _on_sqlite(alias: str, name: str, shape: Shape) -> tuple[str, str, str]:
    """The recorded shape on SQLite's single writer, the record written first if missing (a read would take a shared
    lock that SQLite then refuses at once to upgrade while another connection writes). In place when the caller's
    transaction holds the file's lock already, as its numbers are then taken; else on a private connection, so the
    caller's transaction takes no lock for it and its numbers are still taken and committed on their own."""
    format, reset, scope = shape[0] or "", shape[1], ",".join(shape[2])
    caller = connections[alias]
    if not caller.in_atomic_block or holds_write_lock(caller):
        row = RecordedShape(sequence_name=name, format=format, reset=reset, scope=scope)
        RecordedShape.objects.using(alias).bulk_create([row], ignore_conflicts=True)
        stored = RecordedShape.objects.using(alias).filter(sequence_name=name).values_list("reset", "scope", "format")
        first = stored.first()
        found = None if first is None else (str(first[0]), str(first[1]), str(first[2]))
    else:
        with pool.borrow(alias) as private, private.cursor() as cursor:
            cursor.execute(insert_if_missing_sqlite(private), [name, format, reset, scope, timezone.now()])
            cursor.execute(select_shape(private), [name])
            fetched = cursor.fetchone()
        found = None if fetched is None else (str(fetched[0]), str(fetched[1]), str(fetched[2]))
    if found is None:  # pragma: no cover - the insert above either made it or found it
        raise SequenceUnavailable(name, alias, 1, RuntimeError("the recorded shape vanished"))
    return found


def _reformat(alias: str, name: str, shape: Shape) -> None:
    """Record a new format for rows whose reset and scope stay the same, bounded as the record's first write."""
    with bounded_when_used([alias]), own_savepoint(connections[alias]):
        RecordedShape.objects.using(alias).filter(sequence_name=name).update(format=shape[0] or "")


def forget() -> None:
    """Compare again on next use (after a test rewrites the record)."""
    _verified.clear()
    Generation.number += 1
