"""The database's own error codes behind an error, read in one place: PostgreSQL's SQLSTATE (psycopg 3, psycopg2) and
MySQL's error number (mysqlclient), so what a failure means is decided by codes, never by message texts."""

from __future__ import annotations


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of the PostgreSQL driver's error a Django database error wraps (psycopg 3 names it `sqlstate`,
    psycopg2 `pgcode`); None on the other backends."""
    cause = exc.__cause__
    found = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return found if isinstance(found, str) else None


def mysql_code(exc: BaseException) -> int | None:
    """MySQL's error number: of the mysqlclient error a Django database error wraps, or of such an error itself."""
    args = getattr(exc.__cause__, "args", None) or exc.args
    return args[0] if args and isinstance(args[0], int) else None


def driver_code(exc: BaseException) -> tuple[str | None, int | None]:
    """The SQLSTATE (psycopg) and the error number (mysqlclient) behind a Django database error."""
    return sqlstate(exc), mysql_code(exc)


# "undefined_table" (PostgreSQL) and ER_NO_SUCH_TABLE (MySQL, MariaDB).
UNDEFINED_TABLE_SQLSTATE = "42P01"
NO_SUCH_TABLE_MYSQL = 1146


def table_missing(exc: BaseException) -> bool:
    """Whether the database says a table the statement names does not exist: the app was not migrated there. SQLite
    gives no code for it (only SQLITE_ERROR), so there alone its message is read."""
    if sqlstate(exc) == UNDEFINED_TABLE_SQLSTATE or mysql_code(exc) == NO_SUCH_TABLE_MYSQL:
        return True
    cause = exc.__cause__
    return type(cause).__module__ == "sqlite3" and str(cause).startswith("no such table")


def one_line(exc: BaseException) -> str:
    """The error's message on one line (drivers' messages carry newlines and hints), for a warning that needs no
    traceback: the database's own failure, not a fault of the code."""
    return " ".join(str(exc).split()) or type(exc).__name__
