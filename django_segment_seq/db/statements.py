"""Every SQL statement of allocations, give-backs, row creation and backfills, per database vendor, in one place.

The other statements live beside them in db/: cleanup.py (between a project's tests); and Snowflake's
worker leases keep a table of their own in snowflake/sql.py.

Placeholders in braces are quoted table and column names, filled in once per connection vendor.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.conf import app_settings
from django_segment_seq.db.columns import column_of
from django_segment_seq.db.identity import identity_read
from django_segment_seq.db.table import Sequence

# The last column is the table's identity now (db/identity.py), to compare with the one the history recorded.
_COLUMNS_READ = "{value}, {step}, {min_value}, {max_value}, {cycle}, {version}, {history}, {identity}"

# MariaDB: every statement the app sends waits at most the lock timeout for a row lock
# (innodb_lock_wait_timeout) and for a table or metadata lock (lock_wait_timeout, a day by default:
# what LOCK TABLES, ALTER TABLE or FLUSH TABLES WITH READ LOCK make others wait for), on any connection.
MYSQL_BOUND = "SET STATEMENT lock_wait_timeout = {lock_wait}, innodb_lock_wait_timeout = {lock_wait} FOR "
MYSQL_NO_WAIT = "SET STATEMENT lock_wait_timeout = 0, innodb_lock_wait_timeout = 0 FOR "

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
# Every write also records the server history it was made on (db/history.py) and the table's identity
# (db/identity.py), for the failover and restore fence.
_CAS_SET = "UPDATE {table} SET {value} = %s, {version} = {version} + 1, {modified} = %s, {history} = %s "
_CAS_WHERE = "{name} = %s AND {value} = %s AND {version} = %s"
COMPARE_AND_SET = {
    # A row another transaction holds is skipped (no row changed) instead of waited for.
    "postgresql": _CAS_SET + "WHERE {id} = (SELECT {id} FROM {table} WHERE " + _CAS_WHERE + " FOR UPDATE SKIP LOCKED)",
    # MariaDB cannot skip inside an UPDATE; the statement's own lock wait is bounded instead.
    "mysql": _CAS_SET + "WHERE " + _CAS_WHERE,
    "sqlite": _CAS_SET + "WHERE " + _CAS_WHERE,
}
# A give-back at a clean exit: the same compare-and-set, moving the row back to just before the first
# unused number only if it still stands where this process's last block left it (value and version).
# A row another transaction holds is skipped (PostgreSQL) or waited for within the bound (MariaDB). The
# history stays the one that write recorded: the row is in the same table, on the same server history.
_GIVE_BACK_SET = "UPDATE {table} SET {value} = %s, {version} = {version} + 1, {modified} = %s "
GIVE_BACK = {vendor: statement.replace(_CAS_SET, _GIVE_BACK_SET) for vendor, statement in COMPARE_AND_SET.items()}

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
BEGIN = "BEGIN"
COMMIT = "COMMIT"
ROLLBACK = "ROLLBACK"

# A write that changes nothing, sent first inside a caller's SQLite transaction to take the write lock
# before reading, so the read cannot go stale before the compare-and-set.
TAKE_WRITE_LOCK = "UPDATE {table} SET {value} = {value} WHERE {name} = %s"

# A new row records the history it was created on, as a range does: a row created before a standby fell behind
# and first used in what it never received is then still seen to come from another history after the promotion.
_INSERT = (
    "INSERT INTO {table} ({name}, {value}, {step}, {min_value}, {max_value}, {cycle}, {version}, {created}, "
    "{modified}, {base_name}, {period}, {history}) VALUES (%s, %s, %s, %s, %s, %s, 0, %s, %s, %s, %s, %s)"
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
# the server's default (PostgreSQL: none; MariaDB: 50 s for a row, a day for a table).
SESSION_LOCK_TIMEOUT = {
    "postgresql": "SELECT set_config('lock_timeout', %s, false)",
    "mysql": "SET SESSION innodb_lock_wait_timeout = %s, lock_wait_timeout = %s",
}
# The session's own values of the settings SESSION_LOCK_TIMEOUT sets, in its order.
SESSION_LOCK_WAITS = {
    "postgresql": "SELECT current_setting('lock_timeout')",
    "mysql": "SELECT @@SESSION.innodb_lock_wait_timeout, @@SESSION.lock_wait_timeout",
}

# PostgreSQL, on the caller's own connection, whose session settings are the project's: the lock
# timeout is set for the app's statements only, the caller's own value read in the same round trip
# and put back after them (locally to a savepoint inside the caller's transaction, for the session
# on a connection idle in autocommit).
PG_SWAP_LOCK_TIMEOUT = "SELECT current_setting('lock_timeout'), set_config('lock_timeout', %s, true)"
PG_SET_LOCK_TIMEOUT = "SELECT set_config('lock_timeout', %s, true)"
PG_SWAP_SESSION_LOCK_TIMEOUT = "SELECT current_setting('lock_timeout'), set_config('lock_timeout', %s, false)"

# Savepoints the app sets in a caller's transaction (atomic() or a raw BEGIN alike), so an error of
# its statements never breaks that transaction.
SAVEPOINT = "SAVEPOINT {savepoint}"
ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT {savepoint}"
RELEASE_SAVEPOINT = "RELEASE SAVEPOINT {savepoint}"

# MariaDB: whether the session has a transaction open; Django's get_autocommit() stays true after a
# raw BEGIN or START TRANSACTION, the server knows.
MYSQL_IN_TRANSACTION = "SELECT @@in_transaction"

# MariaDB: which session's transaction a waiting session waits for. A row lock is visible to other
# sessions only while somebody waits for it, so a private connection is sent to wait for the row
# (PROBE_WAIT, sent without waiting for its answer, marked with a token of its own) while the caller's
# connection asks this. InnoDB's lock tables are a cache that may be older than the wait: the token
# tells the wait asked about from an earlier one. Needs the PROCESS privilege.
MYSQL_BLOCKERS_OF = (
    "SELECT b.trx_mysql_thread_id FROM information_schema.INNODB_LOCK_WAITS w "
    "JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id "
    "JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id "
    "WHERE r.trx_mysql_thread_id = %s AND r.trx_query LIKE %s"
)
MYSQL_PROBE_WAIT = (
    "SET STATEMENT lock_wait_timeout = 1, innodb_lock_wait_timeout = 1 FOR "
    "SELECT {id} FROM {table} WHERE {name} = %s FOR UPDATE /* segment_seq probe %s */"
)
MYSQL_KILL_QUERY = "KILL QUERY %s"

# MariaDB: whether a server may take an allocation (read-only, and for a Galera node whether it is Synced
# and ready), and whether it is a Galera node at all; asked once per session (db/nodes.py). The variables are
# read from information_schema so a server built without Galera answers NULL instead of failing.
MARIADB_NODE_STATE = (
    "SELECT @@GLOBAL.read_only, "
    "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'WSREP_ON'), "
    "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT'), "
    "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_READY')"
)
MYSQL_NODE_STATE = "SELECT @@GLOBAL.read_only, NULL, NULL, NULL"


def session_lock_timeout_params(vendor: str, seconds: float) -> list[str | int]:
    """The parameters of SESSION_LOCK_TIMEOUT: milliseconds on PostgreSQL, whole seconds (twice) on MariaDB."""
    if vendor == "postgresql":
        return [pg_lock_timeout(seconds)]
    return [mysql_lock_wait(seconds)] * 2


def pg_lock_timeout(seconds: float) -> str:
    """PostgreSQL's lock_timeout as a setting's text, in whole milliseconds, at least 1."""
    return f"{pg_lock_ms(seconds)}ms"


def pg_lock_ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def mysql_lock_wait(seconds: float) -> int:
    """innodb_lock_wait_timeout takes whole seconds; round up so the bound is never shorter than asked."""
    return max(1, -int(-seconds // 1))


# PostgreSQL: whether the caller's own transaction created or updated the row: a row version the caller sees
# whose creator (xmin) is still in progress is the caller's own, since no other's uncommitted version is
# visible. An xid is made a full xid8 with the epoch of the current snapshot (live xids lie within 2^31 of it).
# The row's xmax is never read: it may be a MultiXact id (several lockers, or one transaction's locks of
# two strengths), which no xid function can read; who holds a lock is asked of a waiting probe instead.
_XID8 = (
    "(((t.top >> 32) - CASE WHEN {x}::text::bigint - (t.top & 4294967295) > 2147483648 THEN 1 ELSE 0 END) << 32"
    " | {x}::text::bigint)::text::xid8"
)
_IN_PROGRESS = "CASE WHEN {x}::text::bigint = 0 THEN false ELSE pg_xact_status(" + _XID8 + ") = 'in progress' END"
_TOP = "(SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS top) t"
PG_ROW_CREATED_HERE = (
    "SELECT " + _IN_PROGRESS.replace("{x}", "s.{xmin}") + " FROM {table} s, " + _TOP + " WHERE s.{name} = %s"
)
# PostgreSQL: a private connection waits for the row's lock as an allocation would (FOR UPDATE, as
# SELECT_ROW_UNLESS_LOCKED), sent without waiting for its answer; pg_blocking_pids() on the caller's
# connection then names every session it waits for, MultiXact members and sharers included.
PG_PROBE_WAIT = "SELECT 1 FROM {table} WHERE {name} = $1 FOR UPDATE"
PG_BLOCKERS_OF = "SELECT pg_blocking_pids(%s)"
PG_CANCEL_BACKEND = "SELECT pg_cancel_backend(%s)"

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
    "history",
    "created",
    "modified",
    "base_name",
    "period",
)


class Statements(NamedTuple):
    """The app's statements on one vendor, names quoted; on MariaDB each carries its lock bound."""

    select_row: str
    # The caller's own view of the row, asked while deciding whether it holds it: its own locks never
    # make it wait, so on MariaDB it waits for no lock at all (another's table lock means no).
    probe_select_row: str
    select_row_unless_locked: str
    compare_and_set: str
    compare_and_set_locked: str
    give_back: str
    take_write_lock: str | None
    begin_write: str | None
    insert_if_missing: str
    lock_row: str
    # The gapless lock of django-sequences' nowait=True: an error at once when another transaction holds the row.
    lock_row_nowait: str
    row_created_here: str | None
    probe_wait: str | None
    # Whether compare_and_set queues for a row lock (within the bound) rather than skipping a locked row: there a
    # row found locked may be taken at the version last committed, and the database's own lock wait tells a row
    # held by a transaction from one locked for a moment by other processes' compare-and-sets.
    compare_and_set_queues: bool


def _bounded(vendor: str, statement: str) -> str:
    return MYSQL_BOUND + statement if vendor == "mysql" else statement


@cache
def _for_vendor(vendor: str, quote: tuple[tuple[str, str], ...], lock_wait: int, lock_ms: int) -> Statements:
    identity = identity_read(vendor, Sequence._meta.db_table)
    names = dict(quote, lock_wait=str(lock_wait), lock_ms=str(lock_ms), identity=identity)
    if vendor not in IF_MISSING:
        raise NotImplementedError(f"django-segment-seq supports PostgreSQL, MySQL/MariaDB and SQLite, not {vendor!r}.")

    def bounded(statement: str) -> str:
        return _bounded(vendor, statement).format(**names)

    # Gapless takers queue for the row behind each other's transactions by design (the database's own
    # row lock wait); on MariaDB the wait for a table or metadata lock is bounded all the same.
    lock_row = LOCK_ROW[vendor].format(**names)
    return Statements(
        select_row=bounded(SELECT_ROW),
        probe_select_row=(MYSQL_NO_WAIT + SELECT_ROW if vendor == "mysql" else SELECT_ROW).format(**names),
        select_row_unless_locked=bounded(SELECT_ROW_UNLESS_LOCKED[vendor]),
        compare_and_set=bounded(COMPARE_AND_SET[vendor]),
        compare_and_set_locked=bounded(COMPARE_AND_SET_LOCKED),
        give_back=bounded(GIVE_BACK[vendor]),
        take_write_lock=TAKE_WRITE_LOCK.format(**names) if vendor == "sqlite" else None,
        begin_write=BEGIN_WRITE.get(vendor),
        insert_if_missing=bounded(_INSERT + IF_MISSING[vendor]),
        lock_row=("SET STATEMENT lock_wait_timeout = {lock_wait} FOR ".format(**names) + lock_row)
        if vendor == "mysql"
        else lock_row,
        lock_row_nowait=(SELECT_ROW if vendor == "sqlite" else SELECT_ROW + " FOR UPDATE NOWAIT").format(**names),
        row_created_here=PG_ROW_CREATED_HERE.format(xmin="xmin", **names) if vendor == "postgresql" else None,
        probe_wait={"mysql": MYSQL_PROBE_WAIT, "postgresql": PG_PROBE_WAIT}[vendor].format(**names)
        if vendor in ("mysql", "postgresql")
        else None,
        compare_and_set_queues=vendor == "mysql",
    )


def select_sequences_rows(connection: BaseDatabaseWrapper, table: str) -> str:
    """django-sequences' rows (name, last), read to carry them over."""
    quote = connection.ops.quote_name
    return f"SELECT {quote('name')}, {quote('last')} FROM {quote(table)} ORDER BY {quote('name')}"


def fill_if_empty(connection: BaseDatabaseWrapper, table: str, column: str, pk: str, rows: int, text: bool) -> str:
    """One UPDATE that sets `rows` rows' column by primary key (parameters: pk, value per row, then the pks),
    changing only rows whose value is still empty (NULL, or '' for a text column): someone may have filled one."""
    quote = connection.ops.quote_name
    table, column, pk = quote(table), quote(column), quote(pk)
    empty = f"{column} IS NULL" + (f" OR {column} = ''" if text else "")
    cases = " ".join(["WHEN %s THEN %s"] * rows)
    keys = ", ".join(["%s"] * rows)
    return f"UPDATE {table} SET {column} = CASE {pk} {cases} END WHERE {pk} IN ({keys}) AND ({empty})"


def _quoted_names(connection: BaseDatabaseWrapper) -> tuple[tuple[str, str], ...]:
    """The table and its columns quoted the connection's way, hashable for the per-vendor cache."""

    opts = Sequence._meta
    quote = connection.ops.quote_name
    names = {"table": quote(opts.db_table)}
    for field in _COLUMNS:
        names[field] = quote(column_of(Sequence, field))
    return tuple(sorted(names.items()))


def statements_for(connection: BaseDatabaseWrapper, lock_timeout: float | None = None) -> Statements:
    """The statements for this connection's vendor, with names quoted its way and lock waits bounded.

    The bound is `lock_timeout` seconds, LOCK_TIMEOUT when not given.
    """
    if lock_timeout is None:
        lock_timeout = app_settings()["LOCK_TIMEOUT"]
    return _for_vendor(
        connection.vendor, _quoted_names(connection), mysql_lock_wait(lock_timeout), pg_lock_ms(lock_timeout)
    )
