"""segment_seq advance: every row forward by a margin in one transaction, for a restore the app cannot see."""

import io

import pytest
from django.core.management import CommandError, call_command

from django_segment_seq import clear_cache, next_value
from django_segment_seq.conf import app_settings
from django_segment_seq.management.subcommands.advance import margin_for
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)


def advance(*args: str) -> str:
    out = io.StringIO()
    call_command("segment_seq", "advance", *args, stdout=out)
    return out.getvalue()


def test_the_default_margin_is_failover_skip_capped_as_the_fence_caps_it():
    assert margin_for(100, 1, 10**18, None, 1_000) == (1_100, False)
    assert margin_for(331, 1, 999_999, None, 10_000_000) == (331 + (999_999 - 331) // 2, True)
    assert margin_for(0, 1, 10**18, 5, 1_000) == (5, False)  # a new row: from min_value - 1
    assert margin_for(990, 1, 1_000, 50, 1_000) == (1_000, True)  # --by is kept whole: the row is used up


def test_every_row_moves_forward_and_the_next_number_follows():
    Sequence.objects.create(name="a", step=10)
    Sequence.objects.create(name="b", step=10)
    assert next_value("a") == 1
    out = advance("--dry-run")
    assert "a: would move from 10 to" in out and "nothing changed" in out
    assert Sequence.objects.get(name="a").value == 10
    version = Sequence.objects.get(name="a").version
    skip = app_settings()["FAILOVER_SKIP"]
    out = advance()
    assert f"a: moved from 10 to {10 + skip}" in out and f"b: moved from 0 to {skip}" in out
    assert Sequence.objects.get(name="a").version == version + 1
    clear_cache()
    assert next_value("a") == 10 + skip + 1


def test_by_and_names_move_only_those_rows():
    Sequence.objects.create(name="a", step=10)
    Sequence.objects.create(name="b", step=10)
    assert "1 sequence rows moved" in advance("--by", "500", "a")
    assert Sequence.objects.get(name="a").value == 500 and Sequence.objects.get(name="b").value == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--by", "0"], "--by must be at least 1"),
        (["--database", "nowhere"], "'nowhere' names no database"),
        (["missing"], "No sequence named 'missing'"),
    ],
)
def test_bad_input_is_a_command_error_and_changes_nothing(args, message):
    Sequence.objects.create(name="a", step=10)
    with pytest.raises(CommandError, match=message):
        advance(*args)
    assert Sequence.objects.get(name="a").value == 0
