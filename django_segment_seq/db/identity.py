"""The Sequence table's own identity, read with every row and written with every range, so a table a restore
re-created (pg_restore --clean, mysql < dump) is told from the one the row was last written in.

PostgreSQL: the table's oid (`tableoid`), which only DROP and CREATE change (VACUUM FULL, CLUSTER and a rewriting
ALTER TABLE keep it). MariaDB and MySQL: InnoDB's table id, read from information_schema (PROCESS privilege), which
a rebuild (OPTIMIZE TABLE, ALTER TABLE ... FORCE, a column type change) changes too. Read fresh in the statement
that reads or writes the row: a value kept per session would still be the old table's after a restore, and so
would the restored row's. SQLite, and a MariaDB user without PROCESS: no identity ("").
"""

from __future__ import annotations

import logging
import threading

from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger("django_segment_seq")

# Where each server keeps its InnoDB table ids, by name "<schema>/<table>".
INNODB_TABLE_LISTS = {"mariadb": "information_schema.INNODB_SYS_TABLES", "mysql": "information_schema.INNODB_TABLES"}
_PROBE = "SELECT TABLE_ID FROM {tables} WHERE NAME = ''"

# One answer per database alias and process: whether InnoDB's table ids can be read there, and where.
_kinds: dict[str, str] = {}
_guard = threading.Lock()


def identity_kind(connection: BaseDatabaseWrapper) -> str:
    """ "postgresql", "mariadb", "mysql" (where the identity is read from), or "" when it cannot be read."""
    if connection.vendor == "postgresql":
        return "postgresql"
    if connection.vendor != "mysql":
        return ""
    known = _kinds.get(connection.alias)
    if known is not None:
        return known
    flavour = "mariadb" if getattr(connection, "mysql_is_mariadb", False) else "mysql"
    try:
        with connection.cursor() as cursor:
            cursor.execute(_PROBE.format(tables=INNODB_TABLE_LISTS[flavour]))
            cursor.fetchall()
        kind = flavour
    except DatabaseError as exc:
        kind = ""
        logger.warning(
            "Database %r: InnoDB's table ids cannot be read (%s); a restore that re-creates the Sequence table "
            "will not be detected there: grant PROCESS, or run `segment_seq advance` after every restore.",
            connection.alias,
            exc,
        )
    with _guard:
        _kinds.setdefault(connection.alias, kind)
    return _kinds[connection.alias]


def identity_read(kind: str, table: str) -> str:
    """The SQL expression of the table's identity as text, for a statement that reads the row."""
    if kind == "postgresql":
        return "tableoid::text"
    if kind in INNODB_TABLE_LISTS:
        # A schema name InnoDB stores encoded (a character outside [A-Za-z0-9_$]) finds nothing: NULL, no identity.
        return (
            f"(SELECT CAST(TABLE_ID AS CHAR) FROM {INNODB_TABLE_LISTS[kind]} "
            f"WHERE NAME = CONCAT(DATABASE(), '/', '{table}'))"
        )
    return "''"


def history_written(kind: str, table: str) -> str:
    """The SQL expression a write stores as the row's history: the server history (a parameter), '/', the identity."""
    if kind == "postgresql":
        return "%s || '/' || tableoid::text"
    if kind in INNODB_TABLE_LISTS:
        return f"CONCAT(%s, COALESCE(CONCAT('/', {identity_read(kind, table)}), ''))"
    return "%s"
