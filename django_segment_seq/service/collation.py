"""Names as the database compares them: on MariaDB and MySQL the name column's collation decides which row a name
finds (`utf8mb4_general_ci` takes "ß" for "s", `utf8mb4_unicode_ci` a full-width at sign for "@"), so the service asks
the database, never an imitation of it in Python, whether a name is a field's or a derived row's."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.db import connections

from django_segment_seq.db.rownames import DERIVED_MARK
from django_segment_seq.db.table import Sequence

# A charset or collation name as information_schema gives it, checked before it is written into a statement.
IDENTIFIER = re.compile(r"\w+")


def column_collation(alias: str) -> tuple[str, str] | None:
    """The name column's (charset, collation) on MariaDB and MySQL; None where names compare byte for byte."""
    if alias not in collations:
        collations[alias] = read_collation(alias)
    return collations[alias]


collations: dict[str, tuple[str, str] | None] = {}


def forget() -> None:
    """Read the collations again (a test, or a migration, changed the column)."""
    collations.clear()


def read_collation(alias: str) -> tuple[str, str] | None:
    connection = connections[alias]
    if connection.vendor != "mysql":
        return None  # PostgreSQL, SQLite and Oracle compare names byte for byte by default
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT character_set_name, collation_name FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name = %s AND column_name = 'name'",
            [Sequence._meta.db_table],
        )
        found = cursor.fetchone()
    if found is None or not all(IDENTIFIER.fullmatch(str(part)) for part in found):
        return ("utf8mb4", "utf8mb4_general_ci")  # no table yet: the server's default, the loosest likely
    return (str(found[0]), str(found[1]))


def as_column(alias: str) -> str:
    """SQL for a parameter compared as the name column compares (MariaDB's, MySQL's collations)."""
    collation = column_collation(alias)
    assert collation is not None
    return f"CONVERT(%s USING {collation[0]}) COLLATE {collation[1]}"


def same_names(alias: str, name: str, candidates: Iterable[str]) -> list[str]:
    """The candidates the database takes for `name` (the row it would find for one is the other's)."""
    candidates = list(candidates)
    if column_collation(alias) is None or not candidates:
        return [candidate for candidate in candidates if candidate == name]
    listed = " UNION ALL ".join(["SELECT %s AS candidate"] * len(candidates))
    compared = as_column(alias)
    query = f"SELECT candidate FROM ({listed}) AS listed WHERE {compared.replace('%s', 'candidate')} = {compared}"
    with connections[alias].cursor() as cursor:
        cursor.execute(query, [*candidates, name])
        return [str(row[0]) for row in cursor.fetchall()]


def looks_derived(alias: str, name: str) -> bool:
    """Whether the database takes `name` for a name with the derived rows' mark ("@"): such a row is a field's."""
    if DERIVED_MARK in name:
        return True
    if column_collation(alias) is None:
        return False
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT {as_column(alias)} LIKE %s", [name, f"%{DERIVED_MARK}%"])
        found = cursor.fetchone()
    return bool(found and found[0])
