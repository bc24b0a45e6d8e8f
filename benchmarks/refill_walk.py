"""How many of the package's files one steady-state refill walks: a profile hook on real next_value() calls at step 1
on SQLite (every call refills), counting the files entered and the moves between them.

    python benchmarks/refill_walk.py [--calls N] [--show]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = str(ROOT / "django_segment_seq") + os.sep


def walk(calls: int = 20) -> tuple[list[str], int]:
    """The package files one refill enters, in order of first entry, and the calls from one file into another
    (averaged over `calls` refills; the first call, from outside the package, counts as one)."""
    import django
    from django.core.management import call_command

    from django_segment_seq import next_value
    from django_segment_seq.models import Sequence

    del django
    call_command("migrate", verbosity=0)
    Sequence.objects.create(name="walk", step=1)
    for _ in range(5):
        next_value("walk")  # warm: the row, the connections, the settings read once
    entered: list[str] = []
    moves = 0

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        """Counts a call that enters a package file other than the one it was made from."""
        nonlocal moves
        if event != "call":
            return
        where = frame.f_code.co_filename
        if not where.startswith(PACKAGE):
            return
        name = where[len(PACKAGE) :]
        caller = frame.f_back.f_code.co_filename if frame.f_back is not None else ""
        if caller != where:
            moves += 1
        if name not in entered:
            entered.append(name)

    sys.setprofile(hook)
    try:
        for _ in range(calls):
            next_value("walk")
    finally:
        sys.setprofile(None)
    return entered, round(moves / calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--show", action="store_true", help="list the files in the order entered")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="segment-seq-walk-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    os.environ["SEGMENT_SEQ_TEST_DB"] = "sqlite"
    os.environ["SEGMENT_SEQ_TEST_DB_NAME"] = str(Path(folder) / "walk.sqlite3")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    files, moves = walk(args.calls)
    print(f"one refill: {len(files)} files, {moves} moves between them")
    if args.show:
        print(" -> ".join(file.removesuffix(".py") for file in files))


if __name__ == "__main__":
    main()
