"""Every SQL statement the worker leases send, per database vendor, in one place.

Lease times are read from the database server's clock (`{now}`), so processes on hosts whose clocks
disagree still agree on which lease has expired.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.db.columns import column_of
from django_segment_seq.snowflake.models import WorkerLease

# The database's clock as Unix milliseconds.
NOW_MS = {
    "postgresql": "CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000 AS BIGINT)",
    "mysql": "CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)",
    "sqlite": "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
}

# A new worker id's row; a row another process inserted first makes it change nothing.
INSERT_IF_MISSING = {
    "postgresql": "INSERT INTO {table} {values} ON CONFLICT ({layout}, {worker_id}) DO NOTHING",
    "sqlite": "INSERT INTO {table} {values} ON CONFLICT ({layout}, {worker_id}) DO NOTHING",
    "mysql": "INSERT IGNORE INTO {table} {values}",
}
_VALUES = (
    "({layout}, {worker_id}, {owner}, {token}, {acquired_ms}, {renewed_ms}, {expires_ms}, {time_ceiling_ms}, "
    "{version}, {history}, {failover_ms}) "
    "VALUES (%s, %s, %s, %s, {now}, {now}, {now} + %s, %s, 1, %s, %s)"
)

SELECT_NOW = "SELECT {now}"
SELECT_ROWS = (
    "SELECT {worker_id}, {expires_ms}, {time_ceiling_ms}, {version}, {now}, {history}, {failover_ms} FROM {table} "
    "WHERE {layout} = %s"
)
# A write on a row of another server history notes the failover's time (the row's first write since it); the
# assignment comes before the history's, which MySQL applies in order.
_NOTE_FAILOVER = (
    "{failover_ms} = CASE WHEN {history} <> %s AND {history} <> '' THEN {now} ELSE {failover_ms} END, {history} = %s"
)
# Take an expired row, and only the version that was read (so its time ceiling is the one we know).
TAKE_EXPIRED = (
    "UPDATE {table} SET {owner} = %s, {token} = %s, {acquired_ms} = {now}, {renewed_ms} = {now}, "
    "{time_ceiling_ms} = %s, {expires_ms} = {now} + %s, {version} = {version} + 1, {history} = %s, "
    "{failover_ms} = %s WHERE {layout} = %s AND {worker_id} = %s AND {version} = %s AND {expires_ms} <= {now}"
)
# Renew only a lease still ours: a row taken by another process after expiry has another token.
RENEW = (
    "UPDATE {table} SET {renewed_ms} = {now}, {expires_ms} = {now} + %s, {time_ceiling_ms} = %s, "
    "{version} = {version} + 1, " + _NOTE_FAILOVER + " WHERE {layout} = %s AND {worker_id} = %s AND {token} = %s"
)
RELEASE = (
    "UPDATE {table} SET {expires_ms} = 0, {time_ceiling_ms} = %s, {version} = {version} + 1, "
    + _NOTE_FAILOVER
    + " WHERE {layout} = %s AND {worker_id} = %s AND {token} = %s"
)
SELECT_LIVE = (
    "SELECT {layout}, {worker_id}, {owner}, {acquired_ms}, {renewed_ms}, {expires_ms}, {now} FROM {table} "
    "WHERE {expires_ms} > {now} ORDER BY {layout}, {worker_id}"
)
# Every row, live or not, with the database's now to judge it by (manage.py segment_seq leases).
SELECT_ALL = (
    "SELECT {layout}, {worker_id}, {owner}, {acquired_ms}, {renewed_ms}, {expires_ms}, {now} FROM {table} "
    "ORDER BY {layout}, {worker_id}"
)

_COLUMNS = (
    "layout", "worker_id", "owner", "token", "acquired_ms", "renewed_ms", "expires_ms", "time_ceiling_ms", "version",
    "history", "failover_ms",
)  # fmt: skip


class LeaseStatements(NamedTuple):
    select_now: str
    select_rows: str
    take_expired: str
    insert_if_missing: str
    renew: str
    release: str
    select_live: str
    select_all: str


@cache
def _for_vendor(vendor: str, quote: tuple[tuple[str, str], ...]) -> LeaseStatements:
    names = dict(quote)
    try:
        names["now"] = NOW_MS[vendor]
        insert = INSERT_IF_MISSING[vendor]
    except KeyError:
        raise NotImplementedError(
            f"Snowflake worker leases support PostgreSQL, MySQL/MariaDB and SQLite, not {vendor!r}."
        ) from None
    names["values"] = _VALUES.format(**names)
    return LeaseStatements(
        SELECT_NOW.format(**names),
        SELECT_ROWS.format(**names),
        TAKE_EXPIRED.format(**names),
        insert.format(**names),
        RENEW.format(**names),
        RELEASE.format(**names),
        SELECT_LIVE.format(**names),
        SELECT_ALL.format(**names),
    )


def statements(connection: BaseDatabaseWrapper) -> LeaseStatements:
    """The statements for this connection's vendor, with the WorkerLease table and columns quoted."""

    meta = WorkerLease._meta
    quote = connection.ops.quote_name
    names = {"table": quote(meta.db_table)}
    names.update((name, quote(column_of(WorkerLease, name))) for name in _COLUMNS)
    return _for_vendor(connection.vendor, tuple(sorted(names.items())))
