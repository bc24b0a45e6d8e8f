"""Every SQL statement the allocator sends, per database vendor, in one place.

Placeholders in braces are quoted table and column names, filled in once per connection vendor.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from django.db.backends.base.base import BaseDatabaseWrapper

SELECT_ROW = "SELECT {value}, {step}, {min_value}, {max_value}, {cycle} FROM {table} WHERE {name} = %s"

# The compare-and-set: it changes the row only if nobody moved `value` since we read it.
COMPARE_AND_SET = "UPDATE {table} SET {value} = %s, {modified} = %s WHERE {name} = %s AND {value} = %s"

# A write that changes nothing, sent first inside a caller's SQLite transaction to take the write lock
# before reading, so the read cannot go stale before the compare-and-set.
TAKE_WRITE_LOCK = "UPDATE {table} SET {value} = {value} WHERE {name} = %s"

# SQLite's lock wait of one connection, read and set around an attempt that must not wait long.
SQLITE_GET_BUSY_TIMEOUT = "PRAGMA busy_timeout"
SQLITE_SET_BUSY_TIMEOUT = "PRAGMA busy_timeout = {milliseconds:d}"

_INSERT = (
    "INSERT INTO {table} ({name}, {value}, {step}, {min_value}, {max_value}, {cycle}, {created}, {modified}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)

# Creation on first use: many processes may try at once; all but one must quietly find the row there.
IF_MISSING = {
    "postgresql": " ON CONFLICT ({name}) DO NOTHING",
    "sqlite": " ON CONFLICT ({name}) DO NOTHING",
    "mysql": " ON DUPLICATE KEY UPDATE {name} = {name}",
}
INSERT_IF_MISSING = {vendor: _INSERT + clause for vendor, clause in IF_MISSING.items()}

# Every column a statement names, by model field name.
_COLUMNS = ("name", "value", "step", "min_value", "max_value", "cycle", "created", "modified", "base_name", "period")


class Statements(NamedTuple):
    select_row: str
    compare_and_set: str
    take_write_lock: str
    insert_if_missing: str


@lru_cache(maxsize=None)
def _for_vendor(vendor: str, quote: tuple[tuple[str, str], ...]) -> Statements:
    names = dict(quote)
    try:
        insert = INSERT_IF_MISSING[vendor]
    except KeyError:
        raise NotImplementedError(
            f"django-segment-seq supports PostgreSQL, MySQL/MariaDB and SQLite, not {vendor!r}."
        ) from None
    return Statements(
        SELECT_ROW.format(**names),
        COMPARE_AND_SET.format(**names),
        TAKE_WRITE_LOCK.format(**names),
        insert.format(**names),
    )


def _quoted_names(connection: BaseDatabaseWrapper) -> tuple[tuple[str, str], ...]:
    """The table and its columns quoted the connection's way, hashable for the per-vendor caches."""
    from .models import Sequence

    opts = Sequence._meta
    quote = connection.ops.quote_name
    names = {"table": quote(opts.db_table)}
    for field in _COLUMNS:
        names[field] = quote(opts.get_field(field).column)
    return tuple(sorted(names.items()))


def statements_for(connection: BaseDatabaseWrapper) -> Statements:
    """The statements for this connection's vendor, with names quoted its way."""
    return _for_vendor(connection.vendor, _quoted_names(connection))


# Flow numbers (formatted fields): rows derived from a base sequence, and the gapless in-transaction path.

_INSERT_DERIVED = (
    "INSERT INTO {table} ({name}, {value}, {step}, {min_value}, {max_value}, {cycle}, {created}, {modified}, "
    "{base_name}, {period}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)

# A per-period row (or a row capped by a format's width), created on first use by whoever gets there first.
INSERT_DERIVED_IF_MISSING = {vendor: _INSERT_DERIVED + clause for vendor, clause in IF_MISSING.items()}

# Gapless: read the row and keep it locked until the caller's transaction ends. SQLite has no FOR UPDATE;
# TAKE_WRITE_LOCK is sent first there, and its single writer lock serialises the rest.
LOCK_ROW = {
    "postgresql": SELECT_ROW + " FOR UPDATE",
    "sqlite": SELECT_ROW,
    "mysql": SELECT_ROW + " FOR UPDATE",
}

# Gapless: the row is locked, so a plain UPDATE is enough.
SET_VALUE = "UPDATE {table} SET {value} = %s, {modified} = %s WHERE {name} = %s"


class FlowStatements(NamedTuple):
    insert_derived_if_missing: str
    lock_row: str
    take_write_lock: str | None
    set_value: str


@lru_cache(maxsize=None)
def _flow_for_vendor(vendor: str, quote: tuple[tuple[str, str], ...]) -> FlowStatements:
    names = dict(quote)
    if vendor not in INSERT_DERIVED_IF_MISSING:
        raise NotImplementedError(
            f"django-segment-seq supports PostgreSQL, MySQL/MariaDB and SQLite, not {vendor!r}."
        )
    return FlowStatements(
        INSERT_DERIVED_IF_MISSING[vendor].format(**names),
        LOCK_ROW[vendor].format(**names),
        TAKE_WRITE_LOCK.format(**names) if vendor == "sqlite" else None,
        SET_VALUE.format(**names),
    )


def flow_statements_for(connection: BaseDatabaseWrapper) -> FlowStatements:
    """The flow-number statements for this connection's vendor, with names quoted its way."""
    return _flow_for_vendor(connection.vendor, _quoted_names(connection))
