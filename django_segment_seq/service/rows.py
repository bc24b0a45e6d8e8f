"""Which rows a client may take from: plain rows only (never a field's period, scope or gapless row), rows that
exist or a field declares unless the client may create rows (up to its cap), compared as the database compares."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connections
from django.db.models import F

from django_segment_seq.cache.range_cache import ranges
from django_segment_seq.db.rownames import DERIVED_MARK
from django_segment_seq.db.table import Sequence
from django_segment_seq.fields.labels import sequence_fields
from django_segment_seq.service.models import Client
from django_segment_seq.service.tokens import folded

PLAIN, DERIVED = "plain", "derived"


@dataclass(frozen=True)
class RowRefusal:
    """Why a name is refused: `status` 403 (not a plain row, or no more rows may be created) or 404 (no such row)."""

    status: int
    error: str
    detail: str


def folds_case(alias: str) -> bool:
    """Whether the name column compares case-insensitively (MariaDB's and MySQL's default `_ci` collations)."""
    if alias not in folding:
        folding[alias] = column_folds_case(alias)
    return folding[alias]


folding: dict[str, bool] = {}


def column_folds_case(alias: str) -> bool:
    connection = connections[alias]
    if connection.vendor != "mysql":
        return False  # PostgreSQL, SQLite and Oracle compare names byte for byte by default
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT collation_name FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name = %s AND column_name = 'name'",
            [Sequence._meta.db_table],
        )
        found = cursor.fetchone()
    return found is None or not str(found[0]).endswith("_bin")


def comparable(name: str, alias: str) -> str:
    """`name` as the database compares it: without case and accents under a _ci collation."""
    return folded(name) if folds_case(alias) else name


def declared_rows(alias: str) -> dict[str, str]:
    """The sequence names the installed fields take from, comparable: PLAIN, or DERIVED for a field whose own row
    is gapless, or the base of period or scope rows (its numbers are the field's, never a client's)."""
    if alias not in declared:
        declared[alias] = fields_rows(alias)
    return declared[alias]


declared: dict[str, dict[str, str]] = {}


def fields_rows(alias: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for _model, field in sequence_fields():
        kind = DERIVED if field.gapless or field.scope is not None or field.reset is not None else PLAIN
        key = comparable(field.sequence_name, alias)
        found[key] = DERIVED if found.get(key) == DERIVED else kind
    return found


class ServedNames:
    """The names this process has found servable lately, with the name of the row the database found for each,
    least recently used first; the range cache of a name dropped from here is dropped too, so a process's memory
    per name stays bounded whatever names clients send."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.names: OrderedDict[tuple[str, str], str] = OrderedDict()

    def stored(self, alias: str, name: str) -> str | None:
        with self.lock:
            stored = self.names.get((alias, name))
            if stored is not None:
                self.names.move_to_end((alias, name))
            return stored

    def keep(self, alias: str, name: str, stored: str, most: int) -> None:
        with self.lock:
            self.names[(alias, name)] = stored
            dropped = [self.names.popitem(last=False)[0] for _ in range(max(0, len(self.names) - most))]
        for dropped_alias, dropped_name in dropped:
            ranges.discard(dropped_alias, dropped_name)

    def forget(self) -> None:
        with self.lock:
            self.names.clear()


served_names = ServedNames()


def outside(name: str) -> RowRefusal:
    return RowRefusal(403, "forbidden", f"This client may not take {name!r}.")


def not_plain(name: str) -> RowRefusal:
    return RowRefusal(
        403,
        "not_plain",
        f"{name!r} is a row a field derives or numbers gaplessly; the service hands out plain sequences only.",
    )


@dataclass(frozen=True)
class Asker:
    """Who asks for a row: whether its patterns admit a stored name, its id and how many rows it may create."""

    may_take: Callable[[str], bool]
    client_id: int | None
    max_new_rows: int


def row_refusal(alias: str, name: str, asker: Asker, most_names: int) -> RowRefusal | None:
    """None when the asker may take from the row the database finds for `name`; else why not.

    The patterns are checked again on the row's stored name (the database may find "order" for "ORDER"), so
    they admit exactly the rows whose names they match. Creating a row counts against the client's cap.
    """
    stored = served_names.stored(alias, name)
    if stored is not None:
        return None if asker.may_take(stored) else outside(name)
    if DERIVED_MARK in name:
        return not_plain(name)
    found = Sequence.objects.using(alias).filter(name=name).values_list("name", "base_name").first()
    if found is not None and found[1] is not None:
        return not_plain(name)
    stored = name if found is None else found[0]
    if not asker.may_take(stored):
        return outside(name)
    declared = declared_rows(alias).get(comparable(stored, alias))
    if declared == DERIVED:
        return not_plain(name)
    if found is None and declared is None:
        refusal = creation_refusal(name, asker.client_id, asker.max_new_rows)
        if refusal is not None:
            return refusal
    served_names.keep(alias, name, stored, most_names)
    return None


def creation_refusal(name: str, client_id: int | None, cap: int) -> RowRefusal | None:
    """None once the client has counted one more row of its cap (atomically, so workers cannot overrun it)."""
    if client_id is not None and cap > 0:
        counted = Client.objects.filter(pk=client_id, rows_created__lt=F("max_new_rows")).update(
            rows_created=F("rows_created") + 1
        )
        if counted:
            return None
        return RowRefusal(403, "row_limit", f"This client has created its {cap} rows; {name!r} does not exist.")
    return RowRefusal(404, "not_found", f"No sequence {name!r}; this caller may take existing sequences only.")
