"""Which rows a client may take from: plain rows only (never a field's period, scope or gapless row), rows that
exist or a field declares unless the client may create rows (up to its cap), compared as the database compares."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from django_segment_seq.cache.range_cache import ranges
from django_segment_seq.db.table import Sequence
from django_segment_seq.exceptions import SequenceNotFound
from django_segment_seq.fields.labels import sequence_fields
from django_segment_seq.flow.rules import rules_made_in_code
from django_segment_seq.service.collation import column_collation, looks_derived, same_names
from django_segment_seq.service.newrows import made_within_cap

PLAIN, DERIVED = "plain", "derived"


@dataclass(frozen=True)
class RowRefusal:
    """Why a name is refused: `status` 403 (not a plain row, or no more rows may be created) or 404 (no such row)."""

    status: int
    error: str
    detail: str


def folds_case(alias: str) -> bool:
    """Whether the name column compares case-insensitively (MariaDB's and MySQL's default `_ci` collations)."""
    collation = column_collation(alias)
    return collation is not None and not collation[1].endswith("_bin")


def declared_rows(alias: str) -> dict[str, str]:
    """The sequence names the installed fields take from: PLAIN, or DERIVED for a field whose own row is gapless,
    or the base of period or scope rows (its numbers are the field's, never a client's)."""
    if alias not in declared:
        declared[alias] = fields_rows(alias)
    return declared[alias]


declared: dict[str, dict[str, str]] = {}


def declared_kind(alias: str, name: str) -> str | None:
    """PLAIN or DERIVED when a field declares the row the database finds for `name` (DERIVED if any such field's
    row is derived), None when no field does."""
    rows = declared_rows(alias)
    kinds = {rows[found] for found in same_names(alias, name, rows)}
    return DERIVED if DERIVED in kinds else (PLAIN if kinds else None)


def fields_rows(alias: str) -> dict[str, str]:
    """PLAIN or DERIVED for each name a rule declares: the fields' rules and the rules made in code, so the service
    sees a name as the checks and the numbers do."""
    found: dict[str, str] = {}
    rules = [field.rule for _model, field in sequence_fields()] + [rule for rule, _module in rules_made_in_code()]
    for rule in rules:
        kind = DERIVED if rule.gapless or rule.scope_names or rule.reset is not None else PLAIN
        key = rule.sequence_name
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
    found = Sequence.objects.using(alias).filter(name=name).values_list("name", "base_name").first()
    if found is not None and found[1] is not None:
        return not_plain(name)
    stored = name if found is None else found[0]
    if looks_derived(alias, stored):
        return not_plain(name)
    if not asker.may_take(stored):
        return outside(name)
    declared = declared_kind(alias, stored)
    if declared == DERIVED:
        return not_plain(name)
    if found is None and declared is None:
        refusal = creation_refusal(alias, name, asker.client_id, asker.max_new_rows)
        if refusal is not None:
            return refusal
    served_names.keep(alias, name, stored, most_names)
    return None


def creation_refusal(alias: str, name: str, client_id: int | None, cap: int) -> RowRefusal | None:
    """None once the row exists, made and counted against the client's cap (or found made meanwhile); else why not."""
    if client_id is not None and cap > 0:
        try:
            if made_within_cap(alias, name, client_id):
                return None
        except SequenceNotFound:  # CREATE_ON_FIRST_USE off: rows are made by the project only
            return not_found(name)
        return RowRefusal(403, "row_limit", f"This client has created its {cap} rows; {name!r} does not exist.")
    return not_found(name)


def not_found(name: str) -> RowRefusal:
    return RowRefusal(404, "not_found", f"No sequence {name!r}; this caller may take existing sequences only.")
