"""`segment_seq import-sequences` carries django-sequences' rows over, as they are after django-sequences itself
handed out numbers: created or moved forward, never lowered, all or nothing, its table left as it was."""

import io
import re

import pytest
import sequences as django_sequences
from django.core.management import CommandError, call_command
from django.db import connection

from django_segment_seq.compat.sequences import get_next_value
from django_segment_seq.db.table import Sequence

pytestmark = pytest.mark.django_db(transaction=True)


def command(*args: str) -> str:
    out = io.StringIO()
    call_command("segment_seq", "import-sequences", *args, stdout=out)
    return out.getvalue()


def their_rows() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, last FROM sequences_sequence")
        return dict(cursor.fetchall())


def test_rows_are_created_moved_forward_and_never_lowered():
    for _ in range(3):
        django_sequences.get_next_value("invoice")
    django_sequences.get_next_values(10, "order")
    django_sequences.get_next_value("ahead")
    Sequence.objects.create(name="order", value=4)  # behind django-sequences: moved forward
    Sequence.objects.create(name="ahead", value=50)  # ahead already: kept
    before = their_rows()

    preview = command("--dry-run")
    assert "Dry run: 2 of 3 rows would change" in preview
    assert not Sequence.objects.filter(name="invoice").exists()

    report = command()
    assert "2 of 3 rows created or moved forward" in report
    values = dict(Sequence.objects.values_list("name", "value"))
    assert (values["invoice"], values["order"], values["ahead"]) == (3, 10, 50)
    assert their_rows() == before
    assert get_next_value("invoice") == 4  # the compatible API carries on where django-sequences stopped


def test_a_name_refused_here_stops_everything_before_anything_is_written():
    django_sequences.get_next_value("fine")
    django_sequences.get_next_value("   ")  # django-sequences takes a blank name; a Sequence row cannot
    with pytest.raises(CommandError, match=r"cannot be carried over.*'   '.*[^.]\. Nothing was changed\.$"):
        command()
    assert not Sequence.objects.filter(name="fine").exists()


def test_nothing_to_carry():
    assert "holds no rows" in command()


def test_an_imported_sequence_wraps_where_django_sequences_would():
    assert [django_sequences.get_next_value("wrap", reset_value=4) for _ in range(2)] == [1, 2]
    report = command()
    assert re.search(r"^wrap +2 +create +unknown$", report, re.MULTILINE), report
    assert "Wrap unknown for 1 of 1 rows" in report
    theirs = [django_sequences.get_next_value("wrap", reset_value=4) for _ in range(5)]
    # Before: 3, 4, 5, 6, 7 - the imported row had no maximum, and the call's reset_value was not looked at.
    ours = [get_next_value("wrap", reset_value=4) for _ in range(5)]
    assert ours == theirs == [3, 1, 2, 3, 1]


def test_an_imported_row_past_the_call_s_reset_value_wraps_at_once():
    django_sequences.get_next_values(10, "late")
    command()
    calls = [("late", 0, 5)] * 6
    assert [get_next_value(*call) for call in calls] == [django_sequences.get_next_value(*call) for call in calls]
    assert get_next_value("late", 0, 5) == 1  # before: 11, 12, ... from the first call on


def test_a_row_that_wraps_here_already_keeps_its_wrap():
    django_sequences.get_next_value("kept", reset_value=10)
    Sequence.objects.create(name="kept", max_value=9, cycle=True)
    report = command()
    assert re.search(r"^kept +1 +0 +move +kept$", report, re.MULTILINE), report
    assert "Wrap unknown" not in report


def test_a_maximum_below_django_sequences_last_value_is_a_command_error():
    django_sequences.get_next_values(100, "small")
    Sequence.objects.create(name="small", value=2, max_value=50)
    # Before: a ValidationError traceback ("The value must not exceed the maximum.").
    with pytest.raises(CommandError, match=r"'small': its maximum here, 50, is below django-sequences' last value 100"):
        command("--dry-run")
    with pytest.raises(CommandError, match=r"segment_seq set small --max N\)\. Nothing was changed\.$"):
        command()
    assert Sequence.objects.get(name="small").value == 2
