"""Allocation under project settings the suite does not use by default: DATABASES[...]["AUTOCOMMIT"] = False."""

import pytest

from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.scenarios import run_scenario

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.processes
def test_autocommit_off_processes_one_after_the_other_get_distinct_numbers():
    """With AUTOCOMMIT off a range must still be committed before its numbers are used.

    Each worker takes 3 numbers and exits without committing anything of its own: what it printed
    is what it handed out, so the second worker must not get the first one's numbers again.
    """
    Sequence.objects.create(name="x", step=10)
    first = run_scenario("take", "x", 3, SEGMENT_SEQ_TEST_AUTOCOMMIT="0")["numbers"]
    second = run_scenario("take", "x", 3, SEGMENT_SEQ_TEST_AUTOCOMMIT="0")["numbers"]
    assert_unique(first + second, 6)
    assert Sequence.objects.get(name="x").value >= max(first + second)
