"""Which key each concealed format was made under: recorded at migrate, compared before a process conceals, and
looked up before a text is revealed.

A permutation under a new key maps new numbers onto texts the old key already showed, so a format that stays
the same under a changed key is refused with ConcealKeyChanged; a changed format starts a record of its own. A text
is revealed only under the key its format was recorded with: CONCEAL_KEY or one of CONCEAL_KEY_FALLBACKS.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import DatabaseError, connections, router

from django_segment_seq.allocator.connections import pool
from django_segment_seq.db.concealed_formats import ConcealedFormat, format_digest, select_formats, select_key_id
from django_segment_seq.exceptions import ConcealKeyChanged, SequenceUnavailable
from django_segment_seq.flow.concealing import current_key, key_id, usable_keys

# (alias, sequence name, format, key fingerprint) this process has compared with the record.
_verified: set[tuple[str, str, str, str]] = set()


def record(alias: str, concealed: Iterable[tuple[str, str]]) -> None:
    """Note each (sequence name, format) under the current key, unless noted before; refuse one whose key changed."""
    if not router.allow_migrate_model(alias, ConcealedFormat):
        return
    for name, format in concealed:
        current = key_id(current_key(name))
        row, _created = ConcealedFormat.objects.using(alias).get_or_create(
            sequence_name=name, format_digest=format_digest(format), defaults={"format": format, "key_id": current}
        )
        if row.key_id != current:
            raise ConcealKeyChanged(name, format)


def verify(alias: str, name: str, format: str) -> None:
    """ConcealKeyChanged when `format` of `name` was recorded under another key; once per process and key."""
    current = key_id(current_key(name))
    if (alias, name, format, current) in _verified:
        return
    try:
        recorded = _recorded_key_id(alias, name, format_digest(format))
    except DatabaseError as exc:  # the table held locked past LOCK_TIMEOUT, or the server gone
        raise SequenceUnavailable(name, alias, 1, exc) from exc
    if recorded is not None and recorded != current:
        raise ConcealKeyChanged(name, format)
    _verified.add((alias, name, format, current))


def key_for(alias: str, name: str, format: str) -> str:
    """The key the texts of `format` were concealed under: the recorded one, found among CONCEAL_KEY and
    CONCEAL_KEY_FALLBACKS (the current key for a format never recorded); ConcealKeyChanged when it is neither."""
    try:
        recorded = _recorded_key_id(alias, name, format_digest(format))
    except DatabaseError as exc:
        raise SequenceUnavailable(name, alias, 1, exc) from exc
    if recorded is None:
        return current_key(name)
    key = usable_keys().get(recorded)
    if key is None:
        raise ConcealKeyChanged(name, format, reading=True)
    return key


def former_formats(alias: str, name: str, format: str) -> list[str]:
    """The other formats recorded for the sequence `name`, oldest first: texts handed out before a format change."""
    try:
        return [found for found, _key in _recorded_formats(alias, name) if found != format]
    except DatabaseError as exc:
        raise SequenceUnavailable(name, alias, 1, exc) from exc


def _recorded_formats(alias: str, name: str) -> list[tuple[str, str]]:
    """(format, key fingerprint) of each record of `name`, read as _recorded_key_id reads."""
    if connections[alias].vendor == "sqlite":
        rows = ConcealedFormat.objects.using(alias).filter(sequence_name=name).order_by("recorded", "id")
        return list(rows.values_list("format", "key_id"))
    with pool.borrow(alias) as private, private.cursor() as cursor:
        cursor.execute(select_formats(private), [name])
        return [(str(found), str(key)) for found, key in cursor.fetchall()]


def _recorded_key_id(alias: str, name: str, digest: str) -> str | None:
    """The recorded fingerprint, read on a private connection, whose lock waits are bounded by LOCK_TIMEOUT and
    whose errors never reach the caller's transaction; SQLite, with one writer and no row locks, reads in place."""
    if connections[alias].vendor == "sqlite":
        rows = ConcealedFormat.objects.using(alias).filter(sequence_name=name, format_digest=digest)
        return rows.values_list("key_id", flat=True).first()
    with pool.borrow(alias) as private, private.cursor() as cursor:
        cursor.execute(select_key_id(private), [name, digest])
        found = cursor.fetchone()
    return None if found is None else str(found[0])


def forget() -> None:
    """Compare again on next use (after a test rewrites the record)."""
    _verified.clear()
