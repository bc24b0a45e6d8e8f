"""Bounded, not brittle: a fetch slowed by contention or a starved CPU is waited for, a row held elsewhere is not.

A caller is refused (SequenceUnavailable) only when what it waits for will not end soon and the app knows it:
another transaction holds the row past LOCK_TIMEOUT. Many processes starting together on one core make every
fetch slow (lost compare-and-sets, little CPU) while nothing holds the row: none of them may be refused.
"""

import json

import pytest

from tests.conftest import assert_unique

pytestmark = pytest.mark.django_db(transaction=True)

# The app's own defaults for the bounds that matter here (the suite's settings shorten the back-off).
DEFAULT_BOUNDS = {"LOCK_TIMEOUT": 2.0, "MAX_BACKOFF": 0.5, "CONNECTION_MAX_IDLE": 2.0}


@pytest.mark.parametrize("processes", [40])
def test_many_processes_on_one_core_take_one_fresh_row_without_an_error(run_workers, processes):
    """Every worker pinned to one core, each taking 1,500 numbers of one fresh row with prefetch on: 0 errors.

    A worker that met SequenceUnavailable or SequenceContention exits non-zero and fails the test.
    """
    jobs = [("value", "starved", 600)] * processes
    got = run_workers(
        jobs,
        timeout=240,
        SEGMENT_SEQ_TEST_PREFETCH="1",
        SEGMENT_SEQ_TEST_CPU="0",
        SEGMENT_SEQ_TEST_SETTINGS=json.dumps({**DEFAULT_BOUNDS, "DEFAULT_STEP": 5, "ADAPTIVE_STEP": False}),
    )
    assert_unique([n for numbers in got for n in numbers], processes * 600)
