"""Seeding while processes take numbers of the same rules: ledger invoices (gapless, per entity and fiscal year) and
yearly documents (cached ranges), each stored in its plain column, while `segment_seq sync --rule` moves the rows of
the numbers stored before the app came. Every series is then checked for repeats, and the gapless one for gaps."""

import subprocess
import sys
import time
from collections import defaultdict
from io import StringIO

import pytest
from django.core.management import call_command

from tests.conftest import ROOT, assert_unique, worker_env
from tests.seed_models import LEDGER_PATTERN, LedgerEntity, LedgerInvoice, YearlyDoc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]

LEDGER_SEED = [
    "sync", "testapp.LedgerInvoice.number", "--rule", "tests.seed_models.LEDGER_INVOICE",
    "--pattern", LEDGER_PATTERN, "--scope-from", "e=entity_model",
]  # fmt: skip
YEARLY_SEED = ["sync", "testapp.YearlyDoc.number", "--rule", "tests.seed_models.YEARLY_DOC"]


def segment_seq(*args: str) -> str:
    out = StringIO()
    call_command("segment_seq", *args, stdout=out)
    return out.getvalue()


def test_seeding_while_processes_take_numbers_repeats_none_and_leaves_no_gap(tmp_path):
    legacy = [LedgerEntity.objects.create(name=name) for name in ("A", "B")]
    live = [LedgerEntity.objects.create(name=name) for name in ("C", "D")]
    stored = {(legacy[0], 2024): 40, (legacy[0], 2025): 15, (legacy[1], 2024): 25}
    LedgerInvoice.objects.bulk_create(
        LedgerInvoice(entity_model=entity, fiscal_year=year, number=f"I-{year}-{n:010d}")
        for (entity, year), count in stored.items()
        for n in range(1, count + 1)
    )
    YearlyDoc.objects.bulk_create(YearlyDoc(number=f"2025-{n:06d}") for n in range(1, 61))
    segment_seq("set", "yearly-doc", "--step", "5")
    seeded = tmp_path / "seeded"
    jobs = [("ledger", 60), ("ledger", 60), ("yearly", 80)]  # numbers each takes after the seed
    procs, outs, readies = [], [], []
    for index, (mode, count) in enumerate(jobs):
        out, ready = tmp_path / f"out{index}", tmp_path / f"ready{index}"
        env = worker_env(
            SEGMENT_SEQ_TEST_READY=str(ready),
            SEGMENT_SEQ_TEST_SEEDED=str(seeded),
            SEGMENT_SEQ_TEST_LIVE=",".join(str(entity.pk) for entity in live),
            SEGMENT_SEQ_TEST_SEEDED_ENTITIES=",".join(str(entity.pk) for entity in legacy),
        )
        command = [sys.executable, "-m", "tests.support.seed_workers", mode, str(count), str(out)]
        procs.append(subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True))
        outs.append(out)
        readies.append(ready)
    try:
        deadline = time.monotonic() + 120
        while not all(ready.exists() for ready in readies):
            failed = [proc for proc in procs if proc.poll() not in (None, 0)]
            assert not failed, failed[0].stderr.read()
            assert time.monotonic() < deadline, "the workers never stored numbers"
            time.sleep(0.05)
        for _ in range(2):  # while the workers store numbers of the live entities and of 2026
            ledger = segment_seq(*LEDGER_SEED)
            yearly = segment_seq(*YEARLY_SEED)
        assert "djl-invoice@e=" in ledger and "yearly-doc@2025" in yearly
        seeded.write_text("seeded")  # from now on the workers take numbers of the seeded rows too
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    series: dict[tuple[str, int], list[int]] = defaultdict(list)
    for entity, year, number in LedgerInvoice.objects.values_list("entity_model", "fiscal_year", "number"):
        series[(str(entity), year)].append(int(number.rsplit("-", 1)[1]))
    for key, numbers in series.items():
        assert sorted(assert_unique(numbers)) == list(range(1, len(numbers) + 1)), key  # gapless: no gap either
    handed = [line.split() for out in outs[:2] for line in out.read_text().splitlines()]
    assert len(handed) >= 120 and any(entity in {str(e.pk) for e in legacy} for entity, _, _ in handed)
    for entity in legacy:  # the seeded series went on above the numbers stored before
        assert len(series[(str(entity.pk), 2024)]) > stored.get((entity, 2024), 0)
    years: dict[str, list[int]] = defaultdict(list)
    for text in YearlyDoc.objects.values_list("number", flat=True):
        year, number = text.split("-")
        years[year].append(int(number))
    for numbers in years.values():
        assert_unique(numbers)
    assert len(years["2025"]) > 60
