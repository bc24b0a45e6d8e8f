"""Worker processes for the seeding tests: numbers made in code (next_text) by the rules of tests/seed_models.py,
each stored in its plain column as the app would, while the test seeds or sets the rows they count in.

Run as `python -m tests.support.seed_workers MODE COUNT OUT`, with the environment naming the test database:

- `ledger`: gapless ledger invoices of the entities in SEGMENT_SEQ_TEST_LIVE, fiscal years 2024 and 2025, in
  transactions of which every fifth rolls back; once the file SEGMENT_SEQ_TEST_SEEDED exists, also of the entities in
  SEGMENT_SEQ_TEST_SEEDED_ENTITIES (whose stored numbers the test seeds), COUNT more. Writes "entity year number"
  lines.
- `yearly`: YEARLY_DOC texts of 2026 from cached ranges; once SEGMENT_SEQ_TEST_SEEDED exists, COUNT more, of 2025
  too. Writes "year number" lines.
- `hold-then-take`: one YEARLY_DOC text of 2026 (the process then holds the rest of its range), the file
  SEGMENT_SEQ_TEST_READY, then once SEGMENT_SEQ_TEST_GO exists, COUNT - 1 more. Writes the numbers.

Each mode writes SEGMENT_SEQ_TEST_READY (when set) once it has numbers stored.
"""

import os
import sys
import time
from datetime import date
from pathlib import Path


class RolledBack(Exception):
    pass


def ready() -> None:
    path = os.environ.get("SEGMENT_SEQ_TEST_READY")
    if path and not Path(path).exists():
        Path(path).write_text("ready")


def seeded() -> bool:
    return Path(os.environ["SEGMENT_SEQ_TEST_SEEDED"]).exists()


class After:
    """Counts the numbers taken since the seed: done once `count` were, or after two minutes without a seed."""

    def __init__(self, count: int) -> None:
        self.count, self.since, self.deadline = count, 0, time.monotonic() + 120

    def done(self) -> bool:
        if time.monotonic() > self.deadline:
            raise SystemExit("never told the rows were seeded")
        return self.since >= self.count

    def took(self, after_seed: bool) -> None:
        self.since += after_seed


def ledger(count: int) -> list[str]:
    from types import SimpleNamespace

    from django.db import transaction

    from django_segment_seq import next_text
    from tests.seed_models import LEDGER_INVOICE, LedgerInvoice

    live = os.environ["SEGMENT_SEQ_TEST_LIVE"].split(",")
    later = os.environ["SEGMENT_SEQ_TEST_SEEDED_ENTITIES"].split(",")
    lines: list[str] = []
    attempt = 0
    after = After(count)
    while not after.done():
        attempt += 1
        now_seeded = seeded()
        entities = live + later if now_seeded else live
        entity = entities[attempt % len(entities)]
        year = 2024 + (attempt // len(entities)) % 2
        try:
            with transaction.atomic():
                number = next_text(
                    LEDGER_INVOICE, scope={"e": entity, "fy": year}, instance=SimpleNamespace(fiscal_year=year)
                )
                LedgerInvoice.objects.create(entity_model_id=entity, fiscal_year=year, number=number)
                if attempt % 5 == 0:
                    raise RolledBack
        except RolledBack:
            continue
        lines.append(f"{entity} {year} {int(number.rsplit('-', 1)[1])}")
        after.took(now_seeded)
        if len(lines) == 3:
            ready()
    return lines


def yearly(count: int) -> list[str]:
    from django_segment_seq import next_text
    from tests.seed_models import YEARLY_DOC, YearlyDoc

    lines: list[str] = []
    turn = 0
    after = After(count)
    while not after.done():
        turn += 1
        now_seeded = seeded()
        at = date(2025, 6, 1) if now_seeded and turn % 2 else date(2026, 6, 1)
        text = next_text(YEARLY_DOC, at=at)
        YearlyDoc.objects.create(number=text)
        lines.append(f"{at.year} {int(text.split('-')[1])}")
        after.took(now_seeded)
        if len(lines) == 3:
            ready()
    return lines


def hold_then_take(count: int) -> list[str]:
    from django_segment_seq import next_text
    from django_segment_seq.cache.prefetch import prefetcher
    from tests.seed_models import YEARLY_DOC

    def take() -> str:
        return str(int(next_text(YEARLY_DOC, at=date(2026, 6, 1)).split("-")[1]))

    got = [take()]
    if not prefetcher.drain(30):
        raise SystemExit("a background fetch did not end in 30 s")
    ready()
    go = Path(os.environ["SEGMENT_SEQ_TEST_GO"])
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("never told to go on")
        time.sleep(0.02)
    return got + [take() for _ in range(count - 1)]


MODES = {"ledger": ledger, "yearly": yearly, "hold-then-take": hold_then_take}


def main(mode: str, count: int, out: str) -> None:
    import django

    django.setup()
    import tests.seed_models  # noqa: F401 - the models of the rows stored

    lines = MODES[mode](count)
    Path(out).write_text("\n".join(lines))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
