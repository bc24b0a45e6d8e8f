"""A worker for the restore tests: takes numbers of one sequence until a stop file appears (or it has `count`),
and saves rows numbered from it (a unique field: a repeat is an IntegrityError there too),
riding out the errors a table being dropped and re-created under it gives, and writes every number to a file.

Run as `python -m tests.support.restore_worker OUT NAME COUNT STOP`, with the environment naming the test database.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main(out: str, name: str, count: int, stop: str) -> None:
    import django

    django.setup()
    from django.db import DatabaseError, connections

    from django_segment_seq import SequenceUnavailable, next_value, next_values
    from tests.testapp.models import Ticket

    def take(turn: int) -> list[int]:
        """By turns: one number, five, and a saved Ticket (a unique SequenceField of sequence "ticket")."""
        if turn % 3 == 0:
            return list(next_values(name, 5))
        if turn % 3 == 1 or name != "ticket":
            return [next_value(name)]
        return [Ticket.objects.create().code]

    errors: dict[str, int] = {}
    got = turn = 0
    deadline = time.monotonic() + 60
    with open(out, "w", encoding="ascii") as fh:
        while got < count and not os.path.exists(stop) and time.monotonic() < deadline:
            try:
                turn += 1
                numbers = take(turn)
            except (DatabaseError, SequenceUnavailable) as exc:
                # The table is gone for a moment (dropped, re-created, locked by the restore): as an application
                # would, drop the connection and try again.
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                connections.close_all()
                time.sleep(0.02)
                continue
            fh.write("".join(f"{n}\n" for n in numbers))
            fh.flush()
            got += len(numbers)
            time.sleep(0.002)  # an application's pace: the test sees the restore land between numbers
    with open(out + ".json", "w", encoding="ascii") as fh:
        json.dump({"numbers": got, "errors": errors}, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
