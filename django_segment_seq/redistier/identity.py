"""Which deployment's table a row's Redis keys belong to, so two deployments sharing one Redis (and one
KEY_PREFIX, a setting people copy) never take each other's super-segments.

The identity is read from the database server, once per process and alias: PostgreSQL's system
identifier (random at initdb, shared by its standbys) with the database and schema; MariaDB's Galera
cluster, else host name and port, with the database; SQLite's file. Two processes that disagree (say
on two Galera nodes before they joined) only use separate keys: each super-segment still comes from
the table by compare-and-set, so that costs sharing, never uniqueness.
"""

from __future__ import annotations

import hashlib
import os
import threading

from django.db import connections

from django_segment_seq.allocator.connections import open_private_connection
from django_segment_seq.db.table import Sequence

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
    """Twelve hex digits naming the table behind `alias`: the same in every process of one deployment."""
    known = _known.get(alias)
    if known is None:
        with _lock:
            known = _known.get(alias)
            if known is None:
                known = _known[alias] = _digest(alias)
    return known


def _digest(alias: str) -> str:
    settings = connections[alias].settings_dict
    vendor = connections[alias].vendor
    parts = [vendor, Sequence._meta.db_table]
    if vendor == "sqlite":
        name = str(settings["NAME"])
        parts.append(name if ":memory:" in name or "mode=memory" in name else os.path.realpath(name))
    elif vendor in IDENTITY_QUERIES:
        # A connection of its own, closed at once: asked once per process, it would otherwise stay open in the
        # pool of a process that seldom writes the table (a fleet of them would fill max_connections).
        connection = open_private_connection(alias)
        try:
            with connection.cursor() as cursor:
                cursor.execute(IDENTITY_QUERIES[vendor])
                parts += [str(part) for part in cursor.fetchone()]
        finally:
            connection.close()
    else:  # pragma: no cover - another backend: its settings are all there is
        parts += [str(settings.get("HOST")), str(settings.get("PORT")), str(settings.get("NAME"))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]
