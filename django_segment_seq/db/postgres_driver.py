"""What psycopg 3 and psycopg2 do differently, answered in one place: a raw PostgreSQL connection's transaction
status, its server process and socket, and a statement sent to wait for a lock while the caller asks the server
about the wait. Django runs on either driver (psycopg 3 when importable, else psycopg2 >= 2.9.9); so does the app.
"""

from __future__ import annotations

import select
import threading
import time
from typing import Any, Protocol

# libpq's PGTransactionStatusType, the values both drivers report (psycopg 3's TransactionStatus is an IntEnum of them).
IDLE, ACTIVE, IN_TRANSACTION, IN_ERROR, UNKNOWN = range(5)


def is_psycopg2(raw: Any) -> bool:
    """Whether `raw` is a psycopg2 connection (psycopg 3's has a `pgconn`, the libpq connection it wraps)."""
    return not hasattr(raw, "pgconn")


def transaction_status(raw: Any) -> int:
    """libpq's transaction status of `raw`: IDLE, ACTIVE, IN_TRANSACTION, IN_ERROR, or UNKNOWN (closed or broken)."""
    if raw.closed:
        return UNKNOWN
    return int(raw.info.transaction_status)


def backend_pid(raw: Any) -> int:
    """The server process behind `raw` (its pg_backend_pid())."""
    return int(raw.info.backend_pid)


def socket_of(raw: Any) -> int:
    """The file descriptor of the socket `raw` talks to the server on."""
    return int(raw.pgconn.socket) if not is_psycopg2(raw) else int(raw.fileno())


class LockProbe(Protocol):
    """A statement sent on a connection of its own that may wait for a lock; the sender meanwhile asks about it."""

    def answered(self, seconds: float) -> bool:
        """Whether the statement has answered within `seconds`."""

    def collect(self) -> None:
        """Take the statement's answer (its rows, or an error such as its cancellation), leaving the session idle."""


def send_probe(raw: Any, statement: str, param: str) -> LockProbe:
    """Send `statement` (one parameter, written $1) on `raw` without waiting for its answer."""
    return ThreadProbe(raw, statement, param) if is_psycopg2(raw) else PgconnProbe(raw.pgconn, statement, param)


class PgconnProbe:
    """psycopg 3: the statement sent through libpq's asynchronous calls on the connection's own pgconn."""

    def __init__(self, pgconn: Any, statement: str, param: str) -> None:
        self.pgconn = pgconn
        pgconn.send_query_params(statement.encode(), [param.encode()])
        pgconn.flush()

    def answered(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            self.pgconn.consume_input()
            if not self.pgconn.is_busy():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([self.pgconn.socket], [], [], left)

    def collect(self) -> None:
        while self.pgconn.get_result() is not None:
            pass  # its rows, or the cancellation's error: either way the session is idle after it


class ThreadProbe:
    """psycopg2, whose connections made for Django cannot send without waiting: a thread runs the statement and
    waits for it (the driver lets go of the GIL meanwhile); the server's lock_timeout of the session bounds it."""

    def __init__(self, raw: Any, statement: str, param: str) -> None:
        self.raw = raw
        self.done = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(statement.replace("$1", "%s"), param), name="segment-seq-lock-probe", daemon=True
        )
        self.thread.start()

    def _run(self, statement: str, param: str) -> None:
        try:
            with self.raw.cursor() as cursor:
                cursor.execute(statement, [param])
        except Exception:  # noqa: BLE001 - its cancellation, or a broken session: the status says
            pass
        finally:
            self.done.set()

    def answered(self, seconds: float) -> bool:
        return self.done.wait(seconds)

    def collect(self) -> None:
        self.thread.join()
