"""Which server history a connection writes on, so a range taken after a failover can be told from one before it.

PostgreSQL: the system identifier and the current timeline, which a promotion moves on. MariaDB: the Galera
cluster's state id (every node of one cluster shares it) or, outside Galera, the server id, which differs
between a primary and its replicas. SQLite has no failover: its history is "".
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.db.sessions import PerSession

HISTORY_QUERIES = {
    # pg_current_wal_lsn() fails on a standby: a server in recovery is never written on.
    "postgresql": "SELECT system_identifier::text, pg_walfile_name(pg_current_wal_lsn()) FROM pg_control_system()",
    "mariadb": (
        "SELECT @@server_id, (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
        "WHERE VARIABLE_NAME = 'WSREP_CLUSTER_STATE_UUID')"
    ),
    # MySQL has no Galera status table there; each server has an id of its own.
    "mysql": "SELECT @@server_uuid, NULL",
}
# Ends the history of a range a PostgreSQL standby confirmed (db/standbys.py): the row's next range on that
# history is taken only with a standby confirming too.
STANDBY_MARK = "+standby"
# A Galera state id before the node has joined a cluster.
NO_CLUSTER = {"", "00000000-0000-0000-0000-000000000000"}

# The history of each connection's current session.
_known: PerSession[str] = PerSession()


def history_of(vendor: str, found: tuple[Any, ...]) -> str:
    """The history text of one answer of HISTORY_QUERIES[vendor]."""
    if vendor == "postgresql":
        system, walfile = found
        return f"pg:{system}:{int(str(walfile)[:8], 16)}"
    server_id, cluster = found
    if cluster not in NO_CLUSTER and cluster is not None:
        return f"galera:{cluster}"
    return f"{vendor}:{server_id}"


def history_flavour(connection: BaseDatabaseWrapper) -> str:
    """The key of HISTORY_QUERIES for `connection`: MariaDB and MySQL ask differently."""
    return "mariadb" if getattr(connection, "mysql_is_mariadb", False) else connection.vendor


def known_history(connection: BaseDatabaseWrapper) -> str | None:
    """The history this session was found on, if it has been asked."""
    return _known.get(connection)


def keep_history(connection: BaseDatabaseWrapper, history: str) -> None:
    """The history this session is on, found by a statement that asked more (db/identity.py)."""
    _known.keep(connection, history)


def server_history(connection: BaseDatabaseWrapper) -> str:
    """The history of the server `connection` is open on, asked once per session."""
    flavour = history_flavour(connection)
    query = HISTORY_QUERIES.get(flavour)
    if query is None:
        return ""
    connection.ensure_connection()
    known = _known.get(connection)
    if known is not None:
        return known
    with connection.cursor() as cursor:
        cursor.execute(query)
        history = history_of(flavour, tuple(cursor.fetchone()))
    _known.keep(connection, history)
    return history


def with_table(history: str, table: str) -> str:
    """The history a write stores: the server's, then "/" and the Sequence table's identity when it has one."""
    return f"{history}/{table}" if history and table else history


def without_mark(history: str) -> tuple[str, bool]:
    """The history without its STANDBY_MARK, and whether it had one."""
    if history.endswith(STANDBY_MARK):
        return history[: -len(STANDBY_MARK)], True
    return history, False


def same_history(stored: str, current: str) -> bool:
    """Whether a row last written with history `stored` is written again in the same history, `current`.

    The servers must match. The tables must match too when both texts name one, except on a Galera cluster,
    whose nodes number their tables each in its own way; a text without a table (written before tables were
    recorded, or where they cannot be read) matches any table of its server.
    """
    stored_server, _, stored_table = without_mark(stored)[0].partition("/")
    server, _, table = without_mark(current)[0].partition("/")
    if stored_server != server:
        return False
    return not stored_table or not table or stored_table == table or server.startswith("galera:")


def unfenced_history(stored: str, current: str) -> str:
    """What a write that skips nothing (gapless, inside the caller's transaction) records: `current`, unless the row
    names another history or table, which it keeps, so the next range taken on its own still skips."""
    return current if not stored or same_history(stored, current) else stored
