"""Every SQL statement the app sends, per database vendor, in one place.

Placeholders in braces are quoted table and column names, filled in once per connection vendor.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from django.db.backends.base.base import BaseDatabaseWrapper

_COLUMNS_READ = "{value}, {step}, {min_value}, {max_value}, {cycle}, {version}"

SELECT_ROW = "SELECT " + _COLUMNS_READ + " FROM {table} WHERE {name} = %s"

# The row unless another transaction holds it locked: a row lock held by the caller's own transaction
# is no conflict, so this also tells whether the row is free for *this* connection, without waiting.
# SQLite has no row locks: its single write lock is waited for with the connection's busy timeout.
SELECT_ROW_UNLESS_LOCKED = {
    "postgresql": SELECT_ROW + " FOR UPDATE SKIP LOCKED",
    "mysql": SELECT_ROW + " FOR UPDATE SKIP LOCKED",
    "sqlite": SELECT_ROW,
}

# The compare-and-set: it moves the row only if nobody wrote it since we read it, and every success
# moves `version`, so even a block that ends where the row stood (a wrap-around) is never taken twice.
_CAS_SET = "UPDATE {table} SET {value} = %s, {version} = {version} + 1, {modified} = %s "
_CAS_WHERE = "{name} = %s AND {value} = %s AND {version} = %s"
COMPARE_AND_SET = {
    # A row another transaction holds is skipped (no row changed) instead of waited for.
    "postgresql": _CAS_SET + "WHERE {id} = (SELECT {id} FROM {table} WHERE " + _CAS_WHERE + " FOR UPDATE SKIP LOCKED)",
    # MariaDB cannot skip inside an UPDATE; the statement's own lock wait is bounded instead.
    "mysql": "SET STATEMENT innodb_lock_wait_timeout = {lock_wait} FOR " + _CAS_SET + "WHERE " + _CAS_WHERE,
    "sqlite": _CAS_SET + "WHERE " + _CAS_WHERE,
}
# A give-back at a clean exit: the same compare-and-set, moving the row back to just before the first
# unused number only if it still stands where this process's last block left it (value and version).
# A row another transaction holds is skipped (PostgreSQL) or waited for within the bound (MariaDB).
GIVE_BACK = COMPARE_AND_SET

# SQLite: the private connection's wait for the write lock, read and bounded around a give-back.
SQLITE_BUSY_TIMEOUT = "PRAGMA busy_timeout"


def sqlite_set_busy_timeout(milliseconds: int) -> str:
    """PRAGMA takes no parameters: the bound is written into the statement, an int only."""
    return f"PRAGMA busy_timeout = {int(milliseconds)}"


# Inside the transaction that holds the row lock (gapless, or the caller's own transaction), a plain
# conditional UPDATE: nobody else can move the row.
COMPARE_AND_SET_LOCKED = _CAS_SET + "WHERE " + _CAS_WHERE

# SQLite: an allocation on its own takes the write lock before it reads, holding nothing while it waits
# for it; reading first would hold a shared lock that a committing writer waits for (a deadlock SQLite
# breaks by failing one side at once).
BEGIN_WRITE = {"sqlite": "BEGIN IMMEDIATE"}
COMMIT = "COMMIT"
ROLLBACK = "ROLLBACK"

# A write that changes nothing, sent first inside a caller's SQLite transaction to take the write lock
# before reading, so the read cannot go stale before the compare-and-set.
TAKE_WRITE_LOCK = "UPDATE {table} SET {value} = {value} WHERE {name} = %s"

_INSERT = (
    "INSERT INTO {table} ({name}, {value}, {step}, {min_value}, {max_value}, {cycle}, {version}, {created}, "
    "{modified}, {base_name}, {period}) VALUES (%s, %s, %s, %s, %s, %s, 0, %s, %s, %s, %s)"
)

# Creation on first use: many processes may try at once; all but one must quietly find the row there.
IF_MISSING = {
    "postgresql": " ON CONFLICT ({name}) DO NOTHING",
    "sqlite": " ON CONFLICT ({name}) DO NOTHING",
    "mysql": " ON DUPLICATE KEY UPDATE {name} = {name}",
}

# Gapless: read the row and keep it locked until the caller's transaction ends. SQLite has no FOR UPDATE;
# TAKE_WRITE_LOCK is sent first there, and its single writer lock serialises the rest.
LOCK_ROW = {
    "postgresql": SELECT_ROW + " FOR UPDATE",
    "sqlite": SELECT_ROW,
    "mysql": SELECT_ROW + " FOR UPDATE",
}

# Set once on every private connection: no lock is waited for longer than the lock timeout, whatever
# the server's default (PostgreSQL: none; MariaDB: 50 s).
SESSION_LOCK_TIMEOUT = {
    "postgresql": "SELECT set_config('lock_timeout', %s, false)",
    "mysql": "SET SESSION innodb_lock_wait_timeout = %s",
}


def session_lock_timeout_param(vendor: str, seconds: float) -> str | int:
    """The parameter of SESSION_LOCK_TIMEOUT: milliseconds on PostgreSQL, whole seconds on MariaDB."""
    if vendor == "postgresql":
        return f"{max(1, round(seconds * 1000))}ms"
    return mysql_lock_wait(seconds)


def mysql_lock_wait(seconds: float) -> int:
    """innodb_lock_wait_timeout takes whole seconds; round up so the bound is never shorter than asked."""
    return max(1, -int(-seconds // 1))


# PostgreSQL: whether the caller's own transaction (or one of its live savepoints) created, updated or
# locked the row: the row's xmin or xmax is a transaction id this session holds.
CALLER_HOLDS_ROW = (
    "SELECT 1 FROM {table} s WHERE s.{name} = %s AND EXISTS (SELECT 1 FROM pg_locks l WHERE "
    "l.pid = pg_backend_pid() AND l.locktype = 'transactionid' "
    "AND (l.transactionid = s.xmin OR l.transactionid = s.xmax))"
)

# Every column a statement names, by model field name.
_COLUMNS = (
    "id",
    "name",
    "value",
    "step",
    "min_value",
    "max_value",
    "cycle",
    "version",
    "created",
    "modified",
    "base_name",
    "period",
)


class Statements(NamedTuple):
    select_row: str
    select_row_unless_locked: str
    compare_and_set: str
    compare_and_set_locked: str
    give_back: str
    take_write_lock: str | None
    begin_write: str | None
    insert_if_missing: str
    lock_row: str
    caller_holds_row: str | None


@cache
def _for_vendor(vendor: str, quote: tuple[tuple[str, str], ...], lock_wait: int) -> Statements:
    names = dict(quote, lock_wait=str(lock_wait))
    if vendor not in IF_MISSING:
        raise NotImplementedError(f"django-segment-seq supports PostgreSQL, MySQL/MariaDB and SQLite, not {vendor!r}.")
    return Statements(
        select_row=SELECT_ROW.format(**names),
        select_row_unless_locked=SELECT_ROW_UNLESS_LOCKED[vendor].format(**names),
        compare_and_set=COMPARE_AND_SET[vendor].format(**names),
        compare_and_set_locked=COMPARE_AND_SET_LOCKED.format(**names),
        give_back=GIVE_BACK[vendor].format(**names),
        take_write_lock=TAKE_WRITE_LOCK.format(**names) if vendor == "sqlite" else None,
        begin_write=BEGIN_WRITE.get(vendor),
        insert_if_missing=(_INSERT + IF_MISSING[vendor]).format(**names),
        lock_row=LOCK_ROW[vendor].format(**names),
        caller_holds_row=CALLER_HOLDS_ROW.format(**names) if vendor == "postgresql" else None,
    )


def _quoted_names(connection: BaseDatabaseWrapper) -> tuple[tuple[str, str], ...]:
    """The table and its columns quoted the connection's way, hashable for the per-vendor cache."""
    from .models import Sequence, column_of

    opts = Sequence._meta
    quote = connection.ops.quote_name
    names = {"table": quote(opts.db_table)}
    for field in _COLUMNS:
        names[field] = quote(column_of(Sequence, field))
    return tuple(sorted(names.items()))


def statements_for(connection: BaseDatabaseWrapper, lock_timeout: float = 1.0) -> Statements:
    """The statements for this connection's vendor, with names quoted its way and lock waits bounded."""
    return _for_vendor(connection.vendor, _quoted_names(connection), mysql_lock_wait(lock_timeout))
