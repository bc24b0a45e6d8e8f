"""What the app asks of a connection's server once per session: kept per connection, forgotten when it reconnects.

A session is told apart by Django's connection_created signal, sent on every connect, not by id() of the DB-API
connection: a new one can reuse a closed one's address, and a session opened after a failover would then answer
with what the one before it was told.
"""

from __future__ import annotations

import weakref
from typing import Any, Generic, TypeVar

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

T = TypeVar("T")


class PerSession(Generic[T]):
    """One value per connection wrapper, valid until that wrapper connects again."""

    def __init__(self) -> None:
        self._values: weakref.WeakKeyDictionary[BaseDatabaseWrapper, T] = weakref.WeakKeyDictionary()
        connection_created.connect(self._forget, weak=False)

    def get(self, connection: BaseDatabaseWrapper) -> T | None:
        return self._values.get(connection)

    def keep(self, connection: BaseDatabaseWrapper, value: T) -> None:
        self._values[connection] = value

    def _forget(self, sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
        self._values.pop(connection, None)
