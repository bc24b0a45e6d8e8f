"""Adaptive step: a fresh process must not judge its pace by one number taken right after its first fetch."""

import pytest
from django.db import connection
from django.test import override_settings

from django_segment_seq import next_value, sequence_stats, wait_for_prefetch
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)

# PREFETCH_AT this low puts the prefetch point at the very first number of a range of 10.
ADAPTIVE = {"PREFETCH": True, "ADAPTIVE_STEP": True, "PREFETCH_AT": 0.05, "MAX_BACKOFF": 0.01}


@override_settings(SEGMENT_SEQ=ADAPTIVE)
def test_prefetch_after_one_number_asks_for_the_rows_step():
    """One number a few microseconds after the first fetch says nothing about demand.

    The next range must be the row's step (the row then stands at 2 * step), not ~16 times it:
    growth only after a whole range went by too fast.
    """
    Sequence.objects.create(name="s", step=10)
    assert next_value("s") == 1
    assert wait_for_prefetch(10)
    value = Sequence.objects.get(name="s").value
    assert value <= 2 * 10, f"the prefetch took up to {value}: {value - 10} numbers after a range of 10"
    got = [1] + [next_value("s") for _ in range(10)]
    assert got == list(range(1, 12))
    if connection.vendor != "sqlite":
        # The 11th number comes from the prefetched range (the row's step, as its value showed), not
        # from a fetch of its own. It also starts the next prefetch, which may or may not have ended
        # by now, so only the foreground count is exact. (A shared SQLite file has no prefetch: the
        # 11th needs a fetch after a whole range went by fast, and may grow.)
        figures = sequence_stats()[("default", "s")]
        assert figures.foreground_fetches == 1 and figures.waits_for_background == 0
        assert figures.background_fetches >= 1
