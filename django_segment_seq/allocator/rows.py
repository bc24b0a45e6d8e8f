"""Sequence rows made on first use: a sequence's own row, and the rows derived from it per period and scope,
created where the caller's transaction allows, as allocations are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from django_segment_seq.allocator import callers
from django_segment_seq.allocator.attempts import TRANSIENT_ERRORS, RowBusy, RowMissing, is_lock_timeout
from django_segment_seq.allocator.blocks import Row
from django_segment_seq.allocator.retry import Plan, run
from django_segment_seq.conf import app_settings
from django_segment_seq.db.bounded import in_savepoint, write_transaction
from django_segment_seq.db.columns import concrete_field
from django_segment_seq.db.history import server_history
from django_segment_seq.db.statements import Statements, statements_for
from django_segment_seq.db.table import Sequence
from django_segment_seq.exceptions import SequenceMisconfigured, SequenceNotFound, SequenceUnavailable


def read_row(cursor: Any, select_row: str, name: str) -> Row | None:
    """The row as `select_row` sees it, or None if it does not exist."""
    cursor.execute(select_row, [name])
    found = cursor.fetchone()
    if found is None:
        return None
    value, step, min_value, max_value, cycle, version, history, table = found
    return Row(
        int(value), int(step), int(min_value), int(max_value), bool(cycle), int(version), history or "", table or ""
    )


def create_row(
    connection: BaseDatabaseWrapper,
    cursor: Any,
    insert: str,
    alias: str,
    name: str,
    settings: dict[str, Any],
    *,
    template: Row | None = None,
    base_name: str | None = None,
    period: str | None = None,
) -> None:
    """INSERT the row if missing: from `template`, else as a new sequence gets it on first use.

    It records the server history it is created on, so its first range, if a failover loses it, is fenced.
    """
    row = template or new_row(alias, name, settings)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    history = server_history(connection)
    cursor.execute(
        insert,
        [name, row.value, row.step, row.min_value, row.max_value, row.cycle, now, now, base_name, period, history],
    )


def new_row(alias: str, name: str, settings: dict[str, Any]) -> Row:
    """The row a sequence gets on first use (the model's defaults, DEFAULT_STEP), if CREATE_ON_FIRST_USE allows it."""

    if not settings["CREATE_ON_FIRST_USE"]:
        raise SequenceNotFound(name, alias)
    min_value = concrete_field(Sequence, "min_value").default
    max_value = concrete_field(Sequence, "max_value").default
    return Row(min_value - 1, settings["DEFAULT_STEP"], min_value, max_value, False, 0)


def ensure_derived_row(
    alias: str,
    name: str,
    *,
    base_name: str | None = None,
    period: str | None = None,
    cap: int | None = None,
) -> bool:
    """Make sure row `name` exists; True once it is known to be committed.

    It is created where an allocation would run (the retry loop, retry.py): on the caller's idle connection
    or a private one. When the caller's transaction holds the base row (or the row, or SQLite's write
    lock), another connection would wait for it: the row is then created inside that transaction,
    and False is returned, since it is gone again if that transaction rolls back.
    """
    settings = app_settings()
    job = _Making(alias, name, base_name, period, cap, settings)
    return run(job, Plan.begin(connections[alias], settings, patient=False))


@dataclass(frozen=True, slots=True)
class _Making:
    """One derived row made as the retry loop runs it: True once committed, False when made in the caller's
    transaction."""

    alias: str
    name: str
    base_name: str | None
    period: str | None
    cap: int | None
    settings: dict[str, Any]
    # Always made; and a row held is not waited for: the INSERT has waited LOCK_TIMEOUT already (see retry.Job).
    creates = True
    patient = False

    @property
    def rows(self) -> tuple[str, ...]:
        return (self.name,) if self.base_name is None else (self.base_name, self.name)

    def attempt(self, connection: BaseDatabaseWrapper, plan: Plan) -> bool:
        """Create the row on `connection`, INSERT-if-missing, so that many processes may race here and all but one
        quietly find it there. A missing base row is made too, unless the caller's transaction may hold it: then
        RowMissing (as a row held, RowBusy) asks that transaction; a table lock held elsewhere makes the question
        fail at once: no."""
        sql = statements_for(connection, self.settings["LOCK_TIMEOUT"])
        try:
            with connection.cursor() as cursor, write_transaction(cursor, sql, callers=plan.use_caller):
                self._insert(connection, cursor, create_base=not plan.ask_caller)
        except DatabaseError as exc:
            if is_lock_timeout(exc, sqlite_too=True):
                raise RowBusy(str(exc)) from exc
            raise
        return True

    def inside(self, caller: BaseDatabaseWrapper, plan: Plan) -> bool:
        """Create the row inside the caller's transaction, which holds what another connection would wait for."""
        alias, name, timeout = self.alias, self.name, self.settings["LOCK_TIMEOUT"]
        sql = statements_for(caller, timeout)
        try:
            with in_savepoint(caller, timeout) as cursor:
                if sql.take_write_lock is not None:
                    # Write before reading, so the caller's transaction waits for the lock instead of deadlocking.
                    cursor.execute(sql.take_write_lock, [name])
                self._insert(caller, cursor)
        except DatabaseError as exc:
            if is_lock_timeout(exc, sqlite_too=True):
                raise SequenceUnavailable(name, alias, 1, RowBusy(str(exc))) from exc
            raise
        except TRANSIENT_ERRORS as exc:
            raise SequenceUnavailable(name, alias, 1, exc) from exc
        callers.remember(caller, name)
        return False

    def inside_if_held(self, caller: BaseDatabaseWrapper, plan: Plan) -> bool:
        """As inside(): the caller's transaction was found to hold the row, so a failure there is a named error."""
        return self.inside(caller, plan)

    def _insert(self, connection: BaseDatabaseWrapper, cursor: Any, *, create_base: bool = True) -> None:
        """Insert the row from its base row's step and limits (the base created first if allowed), capped at `cap`;
        an existing row is left as it is. Without `create_base`, a missing base row is RowMissing: it may be the
        caller's uncommitted one."""
        name, cap = self.name, self.cap
        sql = statements_for(connection, self.settings["LOCK_TIMEOUT"])
        if read_row(cursor, sql.select_row, name) is not None:
            return
        template = self._template(connection, cursor, sql, create_base)
        max_value = template.max_value if cap is None else min(template.max_value, cap)
        if max_value < template.min_value:
            raise SequenceMisconfigured(
                name, f"its format holds numbers up to {cap}, below the sequence's min_value {template.min_value}"
            )
        step = min(template.step, max_value - template.min_value + 1)
        row = Row(template.min_value - 1, step, template.min_value, max_value, template.cycle, 0)
        create_row(
            connection,
            cursor,
            sql.insert_if_missing,
            self.alias,
            name,
            self.settings,
            template=row,
            base_name=self.base_name,
            period=self.period,
        )

    def _template(self, connection: BaseDatabaseWrapper, cursor: Any, sql: Statements, create_base: bool) -> Row:
        """The row the new one takes its step and limits from: its base row (made first if missing and allowed),
        or a new sequence's defaults."""
        alias, base_name = self.alias, self.base_name
        if base_name is None:
            return new_row(alias, self.name, self.settings)
        template = read_row(cursor, sql.select_row, base_name)
        if template is None:
            if not create_base:
                raise RowMissing
            create_row(connection, cursor, sql.insert_if_missing, alias, base_name, self.settings)
            template = read_row(cursor, sql.select_row, base_name)
            if template is None:  # pragma: no cover - the insert above either created it or found it
                raise SequenceNotFound(base_name, alias)
        return template
