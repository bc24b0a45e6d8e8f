"""The Sequence model outside the allocator: refresh_from_db() and bulk_create()."""

import pytest

from django_segment_seq import clear_cache, next_values
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)


def test_full_clean_after_refresh_from_db_accepts_the_refreshed_value():
    """refresh_from_db() must make the refreshed value the loaded one: nobody changed it on this instance.

    Processes keep moving the row meanwhile, so the stored value may be ahead of the refreshed one
    by the time full_clean() runs; that is not a backwards edit.
    """
    Sequence.objects.create(name="r", step=10)
    row = Sequence.objects.get(name="r")
    clear_cache()
    next_values("r", 25)  # the row moves forward on the allocator's connection
    row.refresh_from_db()
    assert row.value >= 25
    row.full_clean()
    clear_cache()
    next_values("r", 5)  # and on again, after the refresh
    row.full_clean()
    row.save()
    assert Sequence.objects.get(name="r").value == row.value


def test_bulk_create_fills_value_from_min_value():
    Sequence.objects.bulk_create([Sequence(name="x"), Sequence(name="y", min_value=100, step=5)])
    assert dict(Sequence.objects.values_list("name", "value")) == {"x": 0, "y": 99}
