"""Private autocommit connections for allocation, so a range commits on its own, whatever the caller's transaction does.

They are opened only when the caller's own connection cannot carry an allocation (it is inside a
transaction), for background fetches, or always when SEGMENT_SEQ["SERVERS"] lists the nodes of a Galera
cluster for the alias, and closed after CONNECTION_MAX_IDLE seconds unused. With SERVERS, a connection
is opened on the first node in the list that answers and may take a range (db/nodes.py).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import load_backend

from django_segment_seq.conf import app_settings
from django_segment_seq.db import postgres_driver
from django_segment_seq.db.nodes import node_state
from django_segment_seq.db.statements import SESSION_LOCK_TIMEOUT, session_lock_timeout_params

# Seconds a private connection may take to connect, unless the project's OPTIONS say otherwise.
CONNECT_TIMEOUT = 10
# SERVERS: seconds a server that refused a connection is tried only after the others, and after which a
# connection on a server further down the list is closed, so the first server is used again once it is back.
RECHECK_SECONDS = 5.0

# SERVERS: seconds a failed connection took that make it a server that did not answer (not one that refused).
SLOW_FAILURE = 1.0
# SERVERS: until when each "host:port" that failed or refused is tried last.
_down: dict[str, float] = {}
# SERVERS: per private connection, its server's place in the list and when it was opened.
_placed: weakref.WeakKeyDictionary[BaseDatabaseWrapper, tuple[int, float]] = weakref.WeakKeyDictionary()


def servers_of(alias: str) -> list[str]:
    """The servers SERVERS lists for `alias`, in the order they are tried; empty when it lists none."""
    servers = (app_settings()["SERVERS"] or {}).get(alias)
    return list(servers) if servers else []


def split_address(address: str) -> tuple[str, str]:
    """("host", "port") of "host:port" or "[v6 address]:port"; the port is "" when none is given."""
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        return host, rest.lstrip(":")
    host, _, port = address.rpartition(":") if address.count(":") == 1 else (address, "", "")
    return host, port


class NoServerFit(OperationalError):
    """No server SERVERS lists for the alias answered and may take a range."""


def open_private_connection(alias: str, deadline: float | None = None) -> BaseDatabaseWrapper:
    """A new connection to `alias` that always runs in autocommit and never waits long for a lock.

    With SERVERS listing the alias's servers, each is tried in turn (those that failed lately last), and
    one that is read-only or, on Galera, not Synced and ready, is passed over. Once `deadline` (on the monotonic
    clock) has passed, no server is tried after one that was slow to fail (SLOW_FAILURE: it did not answer, and
    the next may cost another connect_timeout); one that refused at once is followed by the next. NoServerFit
    when none will do.
    """
    servers = servers_of(alias)
    if not servers:
        return _open(alias, None)
    now = time.monotonic()
    in_turn = [a for a in servers if _down.get(a, 0) <= now] + [a for a in servers if _down.get(a, 0) > now]
    reasons: list[str] = []
    for address in in_turn:
        began = time.monotonic()
        try:
            connection = _open(alias, address)
        except (OperationalError, InterfaceError) as exc:
            reasons.append(f"{address}: {exc}")
            _down[address] = time.monotonic() + RECHECK_SECONDS
            if deadline is not None and time.monotonic() >= deadline and time.monotonic() - began >= SLOW_FAILURE:
                reasons.append("no other server tried: the call's time ran out (CLUSTER_LOST)")
                break
            continue
        try:
            refusal = node_state(connection).refusal()
        except (DatabaseError, InterfaceError) as exc:  # a Galera node that is not ready may refuse the question
            refusal = f"did not answer ({exc})"
        if refusal is None:
            _down.pop(address, None)
            _placed[connection] = (servers.index(address), time.monotonic())
            return connection
        reasons.append(f"{address} {refusal}")
        _down[address] = time.monotonic() + RECHECK_SECONDS
        with suppress(Exception):  # refused: closed, whatever state its session is in
            connection.close()
    raise NoServerFit(f"no server of database {alias!r} can take a range now: {'; '.join(reasons)}")


def refuse_if_unfit(alias: str, connection: BaseDatabaseWrapper) -> None:
    """After an attempt on a private connection of SERVERS found the row held or failed: is its node still fit?

    A Galera node can stop being fit while connections are open on it: a donor of a full state transfer
    (rsync) blocks every write until the transfer ends. Such a node is tried last from now on, and
    OperationalError is raised, so the pool drops the connection and the next attempt opens one elsewhere.
    """
    placed = _placed.get(connection)
    if placed is None:
        return
    try:
        refusal = node_state(connection, fresh=True).refusal()
    except (DatabaseError, InterfaceError):
        return  # the session is gone: the failure itself drops the connection
    if refusal is None:
        return
    servers = servers_of(alias)
    address = servers[placed[0]] if placed[0] < len(servers) else "?"
    _down[address] = time.monotonic() + RECHECK_SECONDS
    raise OperationalError(f"server {address} of database {alias!r} {refusal}")


def _due_for_recheck(connection: BaseDatabaseWrapper) -> bool:
    """A connection on a server further down SERVERS, opened RECHECK_SECONDS ago: the first may be back."""
    placed = _placed.get(connection)
    return placed is not None and placed[0] > 0 and time.monotonic() - placed[1] > RECHECK_SECONDS


def _open(alias: str, address: str | None) -> BaseDatabaseWrapper:
    """One private connection to `alias`, on `address` ("host:port") instead of its HOST and PORT when given.

    The project's settings are copied, not shared: AUTOCOMMIT=False there (a project managing its own
    transactions) must not leave an allocation uncommitted here, and Django's connection pool (OPTIONS
    "pool", one per alias) stays the project's: a private session neither waits for its connections nor
    returns to it with the app's lock timeout.
    """
    source = connections.settings[alias]
    options = {key: value for key, value in (source.get("OPTIONS") or {}).items() if key != "pool"}
    settings_dict = dict(source, AUTOCOMMIT=True, OPTIONS=options)
    if address is not None:
        host, port = split_address(address)
        settings_dict.update(HOST=host, PORT=port or source.get("PORT", ""))
    backend = load_backend(settings_dict["ENGINE"])
    connection: BaseDatabaseWrapper = backend.DatabaseWrapper(settings_dict, alias)
    vendor = connection.vendor
    if vendor in ("postgresql", "mysql"):
        settings_dict["OPTIONS"].setdefault("connect_timeout", CONNECT_TIMEOUT)
    connection.inc_thread_sharing()
    connection.ensure_connection()
    if vendor in SESSION_LOCK_TIMEOUT:
        with connection.cursor() as cursor:
            cursor.execute(
                SESSION_LOCK_TIMEOUT[vendor], session_lock_timeout_params(vendor, app_settings()["LOCK_TIMEOUT"])
            )
    return connection


class ConnectionPool:
    """Idle private connections per database alias, shared by the threads of one process."""

    def __init__(self) -> None:
        self._reset()
        # Connections inherited through fork(): kept referenced and never closed, because closing one
        # in the child would end the parent's session on the shared socket.
        self._inherited: list[BaseDatabaseWrapper] = []

    def _reset(self) -> None:
        self._lock = threading.Lock()
        # Per alias, idle connections with the monotonic time each became idle, most recent last.
        self._idle: dict[str, list[tuple[BaseDatabaseWrapper, float]]] = {}
        # Connections lent out right now (a background fetch may be using one when the process forks).
        self._borrowed: set[BaseDatabaseWrapper] = set()
        self._reaper: threading.Timer | None = None

    @contextmanager
    def borrow(self, alias: str, deadline: float | None = None) -> Iterator[BaseDatabaseWrapper]:
        """A connection in autocommit mode; one that raised a database error is closed rather than returned.
        A new one is opened on the servers of SERVERS until `deadline` at the latest."""
        self.close_stale()
        with self._lock:
            idle = self._idle.get(alias)
            connection = idle.pop()[0] if idle else None
        if connection is not None and _due_for_recheck(connection):
            self._discard(connection)
            connection = None
        if connection is None:
            connection = open_private_connection(alias, deadline)
        with self._lock:
            self._borrowed.add(connection)
        try:
            yield connection
        except (OperationalError, InterfaceError):
            # A restart or failover ends every session at once: the idle ones are as dead as this one, and
            # trying them one by one would spend the whole retry budget on connections already gone.
            self._drop(connection)
            self._discard_idle(alias)
            raise
        except DatabaseError:
            self._drop(connection)
            raise
        except Exception:
            self._give_back(alias, connection)  # healthy: the sequence or the row said no, not the database
            raise
        except BaseException:
            self._drop(connection)
            raise
        self._give_back(alias, connection)

    def close_stale(self) -> None:
        """Close the connections idle for longer than CONNECTION_MAX_IDLE."""
        limit = time.monotonic() - app_settings()["CONNECTION_MAX_IDLE"]
        stale: list[BaseDatabaseWrapper] = []
        with self._lock:
            for alias, idle in self._idle.items():
                fresh = [(conn, since) for conn, since in idle if since > limit]
                stale += [conn for conn, since in idle if since <= limit]
                self._idle[alias] = fresh
        for connection in stale:
            self._discard(connection)

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for connection, _since in conns:
                self._discard(connection)

    def forget_after_fork(self) -> None:
        """In a fork child: stop using the parent's connections, and make sure the child never ends their sessions."""
        inherited = [conn for conns in self._idle.values() for conn, _since in conns] + list(self._borrowed)
        for connection in inherited:
            _detach_socket(connection)
        self._inherited.extend(inherited)
        self._reset()

    def _drop(self, connection: BaseDatabaseWrapper) -> None:
        with self._lock:
            self._borrowed.discard(connection)
        self._discard(connection)

    def _give_back(self, alias: str, connection: BaseDatabaseWrapper) -> None:
        with self._lock:
            if connection not in self._borrowed:
                return  # lent out before a fork: it belongs to the parent
            self._borrowed.discard(connection)
            self._idle.setdefault(alias, []).append((connection, time.monotonic()))
            if self._reaper is None:
                # A process that goes quiet never borrows again: a timer closes what it left open.
                self._reaper = threading.Timer(app_settings()["CONNECTION_MAX_IDLE"] + 0.05, self._reap)
                self._reaper.daemon = True
                self._reaper.start()

    def _reap(self) -> None:
        with self._lock:
            self._reaper = None
        self.close_stale()
        with self._lock:
            waiting = any(self._idle.values())
            if waiting and self._reaper is None:
                self._reaper = threading.Timer(app_settings()["CONNECTION_MAX_IDLE"] + 0.05, self._reap)
                self._reaper.daemon = True
                self._reaper.start()

    def _discard_idle(self, alias: str) -> None:
        with self._lock:
            idle = self._idle.pop(alias, [])
        for connection, _since in idle:
            self._discard(connection)

    @staticmethod
    def _discard(connection: BaseDatabaseWrapper) -> None:
        with suppress(Exception):  # the connection is broken already; a new one replaces it
            connection.close()


def _detach_socket(connection: BaseDatabaseWrapper) -> None:
    """Point this process's copy of the connection's socket at /dev/null.

    The parent keeps its session; whatever the child's driver sends at exit (mysqlclient's COM_QUIT
    when the object is freed) goes nowhere instead of ending the parent's session.
    """
    raw: Any = connection.connection
    if raw is None or connection.vendor == "sqlite":
        return
    try:
        fd = raw.fileno() if connection.vendor == "mysql" else postgres_driver.socket_of(raw)
    except Exception:  # noqa: BLE001 - SQLite has no socket; a closed connection has none either
        return
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


def _forget_inherited_django_connections() -> None:
    """In a fork child: Django's connections of the forking thread are the parent's sessions too.

    Their sockets are pointed at /dev/null and, outside a transaction, the wrappers let go of them,
    so Django reconnects on demand in the child and nothing the child does or frees at exit can end
    or corrupt the parent's sessions.
    """
    for connection in connections.all(initialized_only=True):
        _detach_socket(connection)
        if connection.connection is not None and not connection.in_atomic_block and connection.vendor != "sqlite":
            connection.connection = None


pool = ConnectionPool()
os.register_at_fork(after_in_child=pool.forget_after_fork)
os.register_at_fork(after_in_child=_forget_inherited_django_connections)
