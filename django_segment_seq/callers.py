"""What the caller's own connection allows: is it in a transaction, may it carry an allocation, did one commit."""

from __future__ import annotations

import os
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.dispatch import receiver

# Set on every connection wrapper when it connects: a wrapper inherited through fork() belongs to the parent.
_OPENED_IN = "_segment_seq_opened_in"


@receiver(connection_created)
def _note_process(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    setattr(connection, _OPENED_IN, os.getpid())


def in_transaction(connection: BaseDatabaseWrapper) -> bool:
    """Whether the caller has a transaction open: an atomic block, autocommit off, or a raw BEGIN."""
    if connection.in_atomic_block:
        return True
    if connection.connection is None:
        return not connection.settings_dict.get("AUTOCOMMIT", True)
    if not connection.get_autocommit():
        return True
    return raw_transaction_open(connection) is True


def raw_transaction_open(connection: BaseDatabaseWrapper) -> bool | None:
    """What the driver says of an open transaction; None where it cannot tell (mysqlclient)."""
    raw = connection.connection
    if raw is None:
        return False
    if connection.vendor == "sqlite":
        return bool(raw.in_transaction)
    if connection.vendor == "postgresql":
        from psycopg.pq import TransactionStatus

        return bool(raw.info.transaction_status != TransactionStatus.IDLE)
    return None


def committed(connection: BaseDatabaseWrapper) -> bool:
    """Whether the statements just sent on an autocommit connection are committed: no transaction is left open.

    This is asked of the driver, not of Django's flag, so an `init_command` or server default that
    turned autocommit off on the session is caught too.
    """
    open_ = raw_transaction_open(connection)
    if open_ is not None:
        return not open_
    return bool(connection.connection.get_autocommit())  # mysqlclient reads the server's status flags


def can_carry_allocation(connection: BaseDatabaseWrapper) -> bool:
    """Whether the caller's connection can commit an allocation itself: autocommit, no transaction, this process's."""
    opened_in = getattr(connection, _OPENED_IN, None)
    if connection.connection is not None and opened_in != os.getpid():
        return False  # inherited through fork(): its session belongs to the parent
    return not in_transaction(connection)
