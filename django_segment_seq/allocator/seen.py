"""What this process last wrote to each Sequence row: a row found behind it (an older version) was put back by a
restore, and its next range must skip past every number this process, or any other, took since the backup."""

from __future__ import annotations

import threading
from typing import NamedTuple


class Seen(NamedTuple):
    """The row's version after this process's latest range from it, the highest number it ever held there, and the
    identity of the table that range was taken in ("" where the server has none)."""

    version: int
    highest: int
    table: str = ""


_seen: dict[tuple[str, str], Seen] = {}
_guard = threading.Lock()


def last_seen(alias: str, name: str) -> Seen | None:
    return _seen.get((alias, name))


def note(alias: str, name: str, version: int, last: int, table: str = "") -> None:
    """A committed range ending at `last` left the row at `version` (after a restore, below the one noted before)."""
    with _guard:
        before = _seen.get((alias, name))
        _seen[(alias, name)] = Seen(version, last if before is None else max(before.highest, last), table)


def drop(alias: str, name: str) -> None:
    """Forget one row: it was deleted on purpose from the same table, and is about to be made anew."""
    with _guard:
        _seen.pop((alias, name), None)


def went_back(alias: str, name: str, version: int) -> Seen | None:
    """What this process saw of the row, if the row's `version` is now below it (a restore); else None."""
    seen = _seen.get((alias, name))
    return seen if seen is not None and version < seen.version else None


def forget() -> None:
    """Forget every row (with the cached ranges: the rows may have been deleted or reset on purpose)."""
    with _guard:
        _seen.clear()
