"""Private autocommit connections for allocation, so a range commits on its own, whatever the caller's transaction does."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from .exceptions import SequenceError


class ConnectionPool:
    """Idle private connections per database alias, shared by the threads of one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, list[BaseDatabaseWrapper]] = {}
        # Connections lent out right now (a background fetch may be using one when the process forks).
        self._borrowed: set[BaseDatabaseWrapper] = set()
        # Connections inherited through fork(): kept referenced and never closed, because closing one
        # in the child would end the parent's session on the shared socket.
        self._inherited: list[BaseDatabaseWrapper] = []

    @contextmanager
    def borrow(self, alias: str) -> Iterator[BaseDatabaseWrapper]:
        """A connection in autocommit mode; one that raised a database error is closed rather than returned."""
        with self._lock:
            idle = self._idle.get(alias)
            connection = idle.pop() if idle else None
        if connection is None:
            connection = connections.create_connection(alias)
            connection.inc_thread_sharing()
        with self._lock:
            self._borrowed.add(connection)
        try:
            yield connection
        except SequenceError:
            self._give_back(alias, connection)  # healthy: the sequence said no, not the database
            raise
        except (OperationalError, InterfaceError):
            # A restart or failover ends every session at once: the idle ones are as dead as this one, and
            # trying them one by one would spend the whole retry budget on connections already gone.
            self._drop(connection)
            self._discard_idle(alias)
            raise
        except BaseException:
            self._drop(connection)
            raise
        self._give_back(alias, connection)

    def _drop(self, connection: BaseDatabaseWrapper) -> None:
        with self._lock:
            self._borrowed.discard(connection)
        self._discard(connection)

    def _give_back(self, alias: str, connection: BaseDatabaseWrapper) -> None:
        with self._lock:
            if connection not in self._borrowed:
                return  # lent out before a fork: it belongs to the parent
            self._borrowed.discard(connection)
            self._idle.setdefault(alias, []).append(connection)

    def _discard_idle(self, alias: str) -> None:
        with self._lock:
            idle = self._idle.pop(alias, [])
        for connection in idle:
            self._discard(connection)

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for connection in conns:
                self._discard(connection)

    def forget_after_fork(self) -> None:
        """In a fork child: stop using the parent's connections without closing them."""
        self._lock = threading.Lock()
        for conns in self._idle.values():
            self._inherited.extend(conns)
        self._inherited.extend(self._borrowed)
        self._idle = {}
        self._borrowed = set()

    @staticmethod
    def _discard(connection: BaseDatabaseWrapper) -> None:
        try:
            connection.close()
        except Exception:  # noqa: BLE001 - the connection is broken already; a new one replaces it
            pass


pool = ConnectionPool()
os.register_at_fork(after_in_child=pool.forget_after_fork)
