"""Scopes under real concurrency: processes number two companies at once, creating their rows as they race."""

import pytest

from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.workers import SCOPE_FACTOR
from tests.testapp.models import Company, CompanyOrder, CompanyReceipt, KeyedInvoice

WORKERS = 4


def per_scope(results: list[list[int]]) -> dict[int, list[int]]:
    """The numbers every worker wrote, split by the company they were taken for."""
    split: dict[int, list[int]] = {}
    for got in results:
        for encoded in got:
            split.setdefault(encoded // SCOPE_FACTOR, []).append(encoded % SCOPE_FACTOR)
    return split


@pytest.mark.parametrize("prefetch", ["", "1"], ids=["plain", "prefetch-adaptive"])
def test_processes_number_two_scopes_without_repeats(run_workers, prefetch):
    companies = [Company.objects.create(code=code) for code in ("A", "B")]
    Sequence.objects.create(name="company-order", min_value=100, step=7)  # small ranges: many allocations per scope
    ids = ",".join(str(company.pk) for company in companies)
    results = run_workers([("scope-save", ids, 300)] * WORKERS, timeout=240, SEGMENT_SEQ_TEST_PREFETCH=prefetch)
    split = per_scope(results)
    assert sorted(split) == [company.pk for company in companies]
    for company in companies:
        numbers = assert_unique(split[company.pk], WORKERS * 300 // 2)
        assert min(numbers) == 100  # each scope counts from min_value on its own
        stored = CompanyOrder.objects.filter(company=company).values_list("number", flat=True)
        assert sorted(stored) == sorted(numbers)
    rows = Sequence.objects.filter(base_name="company-order").values_list("name", flat=True)
    assert sorted(rows) == sorted(f"company-order@company={company.pk}" for company in companies)


def test_gapless_processes_number_each_scope_without_gaps(run_workers):
    companies = [Company.objects.create(code=code) for code in ("A", "B")]
    Sequence.objects.create(name="company-receipt", min_value=100)
    ids = ",".join(str(company.pk) for company in companies)
    results = run_workers([("scope-gapless", ids, 60)] * WORKERS, timeout=240)
    split = per_scope(results)
    for company in companies:
        numbers = assert_unique(split[company.pk])
        assert sorted(numbers) == list(range(100, 100 + len(numbers)))
        stored = CompanyReceipt.objects.filter(company=company).values_list("number", flat=True)
        assert sorted(stored) == sorted(numbers)
    assert sum(len(numbers) for numbers in split.values()) == WORKERS * 60


def test_processes_number_a_composite_key_per_company_without_repeats(run_workers):
    """The number inside CompositePrimaryKey("company", "number"): create(), save() and bulk_create from 4 processes."""
    companies = [Company.objects.create(code=code) for code in ("A", "B")]
    Sequence.objects.create(name="keyed-invoice", min_value=1, step=5)  # small ranges: many allocations per company
    ids = ",".join(str(company.pk) for company in companies)
    results = run_workers([("keyed-save", ids, 150)] * WORKERS, timeout=240)
    split = per_scope(results)
    assert sorted(split) == [company.pk for company in companies]
    for company in companies:
        numbers = assert_unique(split[company.pk])
        assert min(numbers) == 1
        stored = KeyedInvoice.objects.filter(company=company).values_list("number", flat=True)
        assert sorted(stored) == sorted(numbers)  # every key a worker was given is a row, and no row twice
    assert KeyedInvoice.objects.count() == sum(len(got) for got in results)
