"""The table's side of the tier's fence: the row moved past what it had lent Redis when it is found below it."""

from __future__ import annotations

from django_segment_seq.allocator.connections import open_private_connection
from django_segment_seq.db.columns import column_of
from django_segment_seq.db.table import Sequence


def catch_up(alias: str, name: str, top: int) -> bool:
    """Move row `name` up to `top` if it stands below it; True if it did (the table went back: a restore).

    A connection of its own in autocommit: the move must hold even if the caller's transaction rolls back.
    The version moves too, so a process that read the row before takes its next range above `top`.
    """
    connection = open_private_connection(alias)
    try:
        quote = connection.ops.quote_name
        value, version, row_name, max_value = (
            quote(column_of(Sequence, field)) for field in ("value", "version", "name", "max_value")
        )
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {quote(Sequence._meta.db_table)} SET {value} = %s, {version} = {version} + 1 "
                f"WHERE {row_name} = %s AND {value} < %s AND {max_value} >= %s",
                [top, name, top, top],
            )
            return bool(cursor.rowcount)
    finally:
        connection.close()
