"""Sequence rows as `manage.py segment_seq` prints them: table cells, JSON, and the order rows are listed in."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from django_segment_seq.cache.stats import SequenceStats
from django_segment_seq.db.rownames import scope_of
from django_segment_seq.db.table import Sequence
from django_segment_seq.observe.usage import NO_LIMIT, has_limit, numbers_left


def newest_first(rows: Any) -> list[Sequence]:
    """Derived rows scope by scope (company=9 before company=10), each scope's periods newest first."""
    ordered = sorted(rows, key=lambda row: (row.period or "", row.name), reverse=True)
    return sorted(ordered, key=lambda row: natural(scope(row) or ""))


def scope(row: Sequence) -> str | None:
    return scope_of(row.name, row.base_name, row.period)


def natural(text: str) -> tuple[Any, ...]:
    """A sort key that orders the numbers in a text by value."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def left(row: Sequence) -> int | str:
    """Numbers still to be handed out before the maximum, or "no limit"."""
    figure = numbers_left(row)
    return str(NO_LIMIT) if figure is None else figure


def limit(row: Sequence) -> int | str:
    return row.max_value if has_limit(row) else str(NO_LIMIT)


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def row_cells(row: Sequence, indent: str = "") -> tuple[str, ...]:
    values = (row.value, row.step, row.min_value, limit(row), yes_no(row.cycle), left(row))
    return (indent + row.name, *(str(value) for value in values))


def row_dict(row: Sequence) -> dict[str, Any]:
    return {
        "name": row.name,
        "base_name": row.base_name,
        "scope": scope(row),
        "period": row.period,
        "value": row.value,
        "step": row.step,
        "min_value": row.min_value,
        "max_value": row.max_value,
        "cycle": row.cycle,
        "left": numbers_left(row),
        "created": row.created.isoformat(),
        "modified": row.modified.isoformat(),
        "history": row.history,
    }


def stats_dict(stats: SequenceStats) -> dict[str, int]:
    figures = dataclasses.asdict(stats) if dataclasses.is_dataclass(stats) else dict(vars(stats))
    figures["blocking_fetches"] = stats.blocking_fetches
    return figures
