"""Which deployment's table a row's Redis keys belong to, so two deployments sharing one Redis (and one
KEY_PREFIX, a setting people copy) never take each other's super-segments.

The identity is random, minted once and stored in the database (db/deployment.py), read once per process
and alias: two deployments whose servers look alike (containers with the SQLite file at one path, two
MariaDB pods named mariadb-0, a staging PostgreSQL made from production's base backup) still differ, as
long as each made its own database. With it is stored a fingerprint of the server it was minted on
(PostgreSQL's system identifier, database and schema; MariaDB's Galera cluster or host name and port, and
database; SQLite's file): a database copied to another server finds a fingerprint not its own and mints a
new identity, so the copy uses keys of its own. A copy the fingerprint cannot tell (a server of the same
names) needs `segment_seq redis-identity --renew`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import threading

from django.db import IntegrityError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from django_segment_seq.allocator.connections import open_private_connection
from django_segment_seq.db.deployment import Deployment
from django_segment_seq.db.table import Sequence

logger = logging.getLogger("django_segment_seq")

IDENTITY_QUERIES = {
    "postgresql": ("SELECT system_identifier::text, current_database(), current_schema() FROM pg_control_system()"),
    "mysql": (
        "SELECT COALESCE(NULLIF((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = "
        "'WSREP_CLUSTER_STATE_UUID'), ''), CONCAT(@@hostname, ':', @@port)), DATABASE()"
    ),
}

_known: dict[str, str] = {}
_lock = threading.Lock()


def deployment(alias: str) -> str:
    """Sixteen hex digits naming the deployment behind `alias`: the same in every process of one deployment."""
    known = _known.get(alias)
    if known is None:
        with _lock:
            known = _known.get(alias)
            if known is None:
                known = _known[alias] = _stored(alias, renew=False)
    return known


def renew(alias: str) -> tuple[str, str]:
    """Mint a new identity for `alias` (after copying its database to make another deployment): (old, new)."""
    with _lock:
        old = _known.get(alias) or _stored(alias, renew=False)
        _known[alias] = _stored(alias, renew=True)
        return old, _known[alias]


def forget() -> None:
    """Read the identity from the database again at next use (tests flush the table; a renewal elsewhere)."""
    with _lock:
        _known.clear()


def _stored(alias: str, *, renew: bool) -> str:
    """The identity in the database, minted when there is none, when asked, or when it was minted on another server.

    A connection of its own, closed at once: asked once per process, it would otherwise stay open in the pool of a
    process that seldom writes the table (a fleet of them would fill max_connections).
    """
    connection = open_private_connection(alias)
    try:
        origin = _fingerprint(alias, connection)
        for _ in range(3):  # processes minting at once: one insert or update wins, the others read it
            found = _read(connection)
            if found is not None and found[1] == origin and not renew:
                return found[0]
            if _write(connection, found, origin) and found is not None:
                why = "asked" if renew else "it was minted on another server: this database is a copy"
                logger.warning(
                    "Database %r: the Redis tier's identity %s replaced (%s): every row on the tier refills (a gap).",
                    alias, found[0], why,
                )  # fmt: skip
            renew = False
        found = _read(connection)
        if found is None:  # pragma: no cover - the row deleted three times while it was written
            raise IntegrityError("the deployment row vanished while it was written")
        return found[0]
    finally:
        connection.close()


def _table(connection: BaseDatabaseWrapper) -> str:
    return connection.ops.quote_name(Deployment._meta.db_table)


def _read(connection: BaseDatabaseWrapper) -> tuple[str, str] | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT identity, origin FROM {_table(connection)} WHERE id = 1")
        row = cursor.fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


def _write(connection: BaseDatabaseWrapper, found: tuple[str, str] | None, origin: str) -> bool:
    """Insert the row, or replace the identity `found` holds; False when another process wrote first."""
    identity = secrets.token_hex(8)
    table = _table(connection)
    with connection.cursor() as cursor:
        if found is None:
            created = connection.ops.adapt_datetimefield_value(timezone.now())
            try:
                cursor.execute(
                    f"INSERT INTO {table} (id, identity, origin, created) VALUES (1, %s, %s, %s)",
                    [identity, origin, created],
                )
            except IntegrityError:
                return False
            return True
        cursor.execute(
            f"UPDATE {table} SET identity = %s, origin = %s WHERE id = 1 AND identity = %s",
            [identity, origin, found[0]],
        )
        return bool(cursor.rowcount)


def _fingerprint(alias: str, connection: BaseDatabaseWrapper) -> str:
    """A digest of the database server and Sequence table behind `alias`, as the server names them."""
    settings = connections[alias].settings_dict
    vendor = connection.vendor
    parts = [vendor, Sequence._meta.db_table]
    if vendor == "sqlite":
        name = str(settings["NAME"])
        parts.append(name if ":memory:" in name or "mode=memory" in name else os.path.realpath(name))
    elif vendor in IDENTITY_QUERIES:
        with connection.cursor() as cursor:
            cursor.execute(IDENTITY_QUERIES[vendor])
            parts += [str(part) for part in cursor.fetchone()]
    else:  # pragma: no cover - another backend: its settings are all there is
        parts += [str(settings.get("HOST")), str(settings.get("PORT")), str(settings.get("NAME"))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
