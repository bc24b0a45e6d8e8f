"""What the server behind a connection is, as far as taking a range goes: writable or not, a Galera node or not,
and for a Galera node whether it is Synced and ready, asked once per session.

A Galera node that is joining, donating or cut off from the cluster's primary component answers errors
(1047) or stale rows; a read-only server refuses the compare-and-set. Private connections are not opened
on either (allocator/connections.py), and a Galera node's pause on a lost peer is waited out longer.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any, NamedTuple

from django.db import DatabaseError, InterfaceError
from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.db.sessions import PerSession
from django_segment_seq.db.statements import MARIADB_NODE_STATE, MYSQL_NODE_STATE


class NodeState(NamedTuple):
    """One answer of the node-state query."""

    read_only: bool
    galera: bool
    # wsrep_local_state_comment ('Synced', 'Joining', 'Donor/Desynced', ...), None outside Galera.
    state: str | None
    ready: bool

    def refusal(self) -> str | None:
        """Why no range may be taken on this server, or None."""
        if self.read_only:
            return "is read-only"
        if self.galera and not self.ready:
            return "is a Galera node that is not ready (wsrep_ready OFF)"
        if self.galera and self.state != "Synced":
            return f"is a Galera node that is not Synced ({self.state})"
        return None


NOT_A_CLUSTER = NodeState(read_only=False, galera=False, state=None, ready=True)

# The state of each connection's current session; a reconnect asks again.
_known: PerSession[NodeState] = PerSession()


def state_of(found: tuple[Any, ...]) -> NodeState:
    """The state of one answer of the node-state query."""
    read_only, wsrep_on, state, ready = found
    galera = str(wsrep_on or "").upper() == "ON"
    return NodeState(
        read_only=bool(int(read_only or 0)),
        galera=galera,
        state=str(state) if galera and state is not None else None,
        ready=not galera or str(ready or "").upper() == "ON",
    )


def node_state(connection: BaseDatabaseWrapper, *, fresh: bool = False) -> NodeState:
    """The state of the server `connection` is open on, asked once per session unless `fresh`; PostgreSQL and
    SQLite: none.

    Database errors propagate: a Galera node that is not ready may refuse even this question.
    """
    if connection.vendor != "mysql":
        return NOT_A_CLUSTER
    connection.ensure_connection()
    known = _known.get(connection)
    if known is not None and not fresh:
        return known
    query = MARIADB_NODE_STATE if getattr(connection, "mysql_is_mariadb", False) else MYSQL_NODE_STATE
    with connection.cursor() as cursor:
        cursor.execute(query)
        state = state_of(tuple(cursor.fetchone()))
    _known.keep(connection, state)
    return state


def on_galera(connection: BaseDatabaseWrapper) -> bool:
    """Whether `connection` is open on a Galera node; False when it cannot be asked (a session just lost)."""
    if connection.vendor != "mysql":
        return False
    with suppress(DatabaseError, InterfaceError):
        return node_state(connection).galera
    return False
