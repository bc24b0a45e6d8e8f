"""What exists only inside a caller's transaction: the Sequence rows it created or locked.

Such a thing stands while the transaction's writes stand, and Django drops the on_commit hooks of a
rolled-back transaction or savepoint together with its writes: a hook still queued is the proof.
Outside atomic() (a manual transaction) there are no hooks, so nothing is remembered there.
"""

from __future__ import annotations

from collections.abc import Callable
from weakref import WeakKeyDictionary

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper


def commit_hook_queued(connection: BaseDatabaseWrapper, callback: Callable[[], None] | None) -> bool:
    """Whether `callback` still waits in the connection's on_commit queue."""
    # Each entry is (sids, func, robust).
    return callback is not None and any(entry[1] is callback for entry in connection.run_on_commit)


class Held:
    """A row that one transaction created or locked, known while that transaction's commit hook is queued."""

    __slots__ = ("committed", "hook")

    def __init__(self) -> None:
        self.hook: Callable[[], None] | None = None
        self.committed = False

    def alive(self, connection: BaseDatabaseWrapper) -> bool:
        return self.committed or commit_hook_queued(connection, self.hook)


class TransactionMemory:
    """Per caller connection and name, what its current transaction holds."""

    def __init__(self) -> None:
        self._held: WeakKeyDictionary[BaseDatabaseWrapper, dict[str, Held]] = WeakKeyDictionary()

    def get(self, connection: BaseDatabaseWrapper, name: str) -> Held | None:
        held = self._held.get(connection, {}).get(name)
        return held if held is not None and held.alive(connection) else None

    def keep(
        self,
        connection: BaseDatabaseWrapper,
        alias: str,
        name: str,
        held: Held,
        on_commit: Callable[[Held], None] | None = None,
    ) -> Held | None:
        """Remember `held` until the transaction ends; `on_commit(held)` runs once it is durable.

        Returns None, remembering nothing, outside atomic(): a manual transaction has no hooks.
        """
        if not connection.in_atomic_block:
            return None
        held_here = self._held.setdefault(connection, {})

        def committed() -> None:
            held.committed = True
            if held_here.get(name) is held:
                del held_here[name]
            if on_commit is not None:
                on_commit(held)

        held.hook = committed
        held_here[name] = held
        transaction.on_commit(committed, using=alias)
        return held

    def clear(self) -> None:
        self._held = WeakKeyDictionary()
