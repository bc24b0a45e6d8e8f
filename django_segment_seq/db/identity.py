"""The Sequence table's own identity, read with every row and recorded with every range, so a table a restore
re-created (pg_restore --clean, mysql < dump) is told from the one the row was last written in.

PostgreSQL: the table's oid (`tableoid`, read with the row), which only DROP and CREATE change (VACUUM FULL,
CLUSTER and a rewriting ALTER TABLE keep it). MariaDB and MySQL: InnoDB's table id, which a rebuild (OPTIMIZE
TABLE, ALTER TABLE ... FORCE, a column type change) changes too, but an instant or in-place ALTER (a column or an
index added) does not. Reading it scans InnoDB's whole table list (information_schema, PROCESS privilege), so it is
asked once per session (with the server's history, in one statement) and again only when the table's creation
time, read cheaply with every row, has changed: any ALTER, rebuild or re-creation moves that time. SQLite: no
identity ("").
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.db.history import (
    HISTORY_QUERIES,
    history_flavour,
    history_of,
    keep_history,
    known_history,
    server_history,
)
from django_segment_seq.db.sessions import PerSession
from django_segment_seq.db.table import Sequence

logger = logging.getLogger("django_segment_seq")

# Read with every row: the oid, or the table's creation time (a keyed lookup, whatever the number of tables).
IDENTITY_READ = {
    "postgresql": "tableoid::text",
    "mysql": (
        "(SELECT CAST(UNIX_TIMESTAMP(CREATE_TIME) AS CHAR) FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{table_name}')"
    ),
}
# Where each server keeps InnoDB's table ids, by name "<schema>/<table>" (a schema or table name InnoDB stores
# encoded, with a character outside [A-Za-z0-9_$], finds nothing: the creation time stands in for it).
INNODB_TABLE_ID = {
    "mariadb": "SELECT TABLE_ID FROM information_schema.INNODB_SYS_TABLES WHERE NAME = CONCAT(DATABASE(), '/', %s)",
    "mysql": "SELECT TABLE_ID FROM information_schema.INNODB_TABLES WHERE NAME = CONCAT(DATABASE(), '/', %s)",
}

# Per session: the table's creation time last read, and the table id found for it.
_known: PerSession[tuple[str, str]] = PerSession()
_warned: set[str] = set()


def identity_read(vendor: str, table_name: str) -> str:
    """The SQL expression, in a statement that reads the row, of what identifies the table ('' where nothing)."""
    return IDENTITY_READ.get(vendor, "''").format(table_name=table_name.replace("'", "''"))


def current_identity(connection: BaseDatabaseWrapper, cursor: Any) -> str:
    """The table's identity read without a row (the row is missing): the oid of its name, or InnoDB's id."""
    if connection.vendor == "postgresql":
        cursor.execute("SELECT to_regclass(%s)::oid::text", [connection.ops.quote_name(Sequence._meta.db_table)])
    elif connection.vendor == "mysql":
        cursor.execute("SELECT " + identity_read("mysql", Sequence._meta.db_table))
    else:
        return ""
    found = cursor.fetchone()
    return table_identity(connection, cursor, "" if found is None or found[0] is None else str(found[0]))


def table_identity(connection: BaseDatabaseWrapper, cursor: Any, read: str) -> str:
    """The table's identity from what identity_read() gave in the row's statement, on the same transaction.

    MariaDB: InnoDB's table id, asked only when the creation time differs from the one this session last saw;
    "c" and the creation time where it cannot be read (no PROCESS privilege).
    """
    if connection.vendor != "mysql" or not read:
        return read
    known = _known.get(connection)
    if known is not None and known[0] == read:
        return known[1]
    flavour = "mariadb" if getattr(connection, "mysql_is_mariadb", False) else "mysql"
    try:
        cursor.execute(INNODB_TABLE_ID[flavour], [Sequence._meta.db_table])
        found = cursor.fetchone()
    except DatabaseError as exc:
        found = None
        if connection.alias not in _warned:
            _warned.add(connection.alias)
            logger.warning(
                "Database %r: InnoDB's table ids cannot be read (%s): every ALTER TABLE of the Sequence table, "
                "not only a rebuild or a restore, will cost each row a FAILOVER_SKIP. Grant PROCESS to avoid it.",
                connection.alias,
                exc,
            )
    identity = str(found[0]) if found is not None and found[0] is not None else f"c{read}"
    _known.keep(connection, (read, identity))
    return identity


def server_history_and_identity(connection: BaseDatabaseWrapper) -> str:
    """server_history(); on MariaDB and MySQL, in a session that has asked neither, asked in one statement with the
    table's creation time and InnoDB's id, which table_identity() then finds known: a session's first range takes
    one round trip less. Without the PROCESS privilege InnoDB's ids cannot be read: the history alone then."""
    flavour = history_flavour(connection)
    if flavour not in INNODB_TABLE_ID:
        return server_history(connection)
    connection.ensure_connection()
    if known_history(connection) is not None or _known.get(connection) is not None:
        return server_history(connection)
    table = Sequence._meta.db_table
    columns = f"{identity_read('mysql', table)}, ({INNODB_TABLE_ID[flavour]})"
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"{HISTORY_QUERIES[flavour]}, {columns}", [table])
            found = tuple(cursor.fetchone())
    except DatabaseError:
        return server_history(connection)  # no PROCESS privilege: table_identity() asks, and says what it costs
    history = history_of(flavour, found[:2])
    keep_history(connection, history)
    created, table_id = found[2], found[3]
    if created is not None and table_id is not None:
        _known.keep(connection, (str(created), str(table_id)))
    return history
