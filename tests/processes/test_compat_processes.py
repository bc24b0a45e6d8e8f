"""django-sequences' API on this app's rows from several processes at once: they queue on the row, and the
numbers kept are gapless, each once, whatever rolled back in between."""

import pytest

from tests.conftest import assert_unique


@pytest.mark.parametrize("mode", ["compat", "compat-rollbacks"])
def test_processes_queue_on_one_row_and_the_kept_numbers_have_no_gap(run_workers, mode):
    results = run_workers([(mode, "invoice", 60)] * 4, timeout=300)
    numbers = assert_unique([number for got in results for number in got])
    assert sorted(numbers) == list(range(1, 241))  # gapless: rolled-back numbers were handed out again
