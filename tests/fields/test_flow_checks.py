"""System checks of flow-number options: formats, reset periods, widths and gapless, each with its id."""

import pytest
from django.core import checks
from django.core.management import call_command
from django.db import models
from django.test.utils import isolate_apps

from django_segment_seq import SequenceField
from tests.testapp.models import shift_period


def check_ids(**options):
    """The django_segment_seq check ids of a model with one SequenceField("seq", **options)."""

    @isolate_apps("tests.testapp")
    def build():
        class Model(models.Model):
            kind = models.CharField(max_length=6)
            issued_on = models.DateField(null=True)
            stamped_at = models.DateTimeField(null=True)
            number = SequenceField("seq", **options)

            class Meta:
                app_label = "testapp"

        return Model._meta.get_field("number").check()

    messages = build()
    assert all(isinstance(m, checks.Error) and m.hint for m in messages if m.id.startswith("django_segment_seq"))
    return sorted(m.id for m in messages if m.id.startswith("django_segment_seq"))


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"format": "OD{date:%Y%m%d}{value:06d}", "reset": "daily"},
        {"format": "{instance.kind}{date:%Y%m%d}{value:04d}", "reset": "daily"},
        {"format": "INV-{date:%Y}-{value:05d}", "reset": "yearly", "gapless": True},
        {"format": "{date:%Y%m%d}{value:04d}", "reset": "monthly", "max_length": 12},
        {"format": lambda value, instance, now: f"X{value}", "reset": "daily"},
        {"gapless": True},
        {"format": "INV-{date:%Y%m}-{value:05d}", "reset": "monthly", "reset_on": "issued_on"},
        {"format": "D{date:%Y%m%d}{value:04d}", "reset": "daily", "reset_on": "stamped_at", "gapless": True},
        {"format": "W{period}-{value:05d}", "reset": "weekly"},
        {"format": "W{date:%G-W%V}-{value:05d}", "reset": "weekly"},
        {"format": "W{date:%Y%m%d}-{value:05d}", "reset": "weekly"},
        {"format": "Q{period}-{value:05d}", "reset": "quarterly"},
        {"format": "Q{date:%Y%m}-{value:05d}", "reset": "quarterly"},
        {"format": "INV-{period}-{value:05d}", "reset": "yearly", "fiscal_year_start": 4},
        {"format": "INV-{date:%Y%m}-{value:05d}", "reset": "yearly", "fiscal_year_start": 10},
        {"format": "INV-{date:%Y}-{value:05d}", "reset": "yearly", "fiscal_year_start": 1},
        {"format": "S{period}-{value:04d}", "reset": shift_period},
        {"format": "S{period:>12}-{value:04d}", "reset": shift_period},
        {"format": "{period}{value:04d}", "reset": "daily", "max_length": 14},
    ],
)
def test_valid_options_pass(options):
    assert check_ids(**options) == []


@pytest.mark.parametrize(
    "options, expected",
    [
        ({"format": "OD{date:%Y%m%d"}, ["django_segment_seq.E011"]),
        ({"format": "{nope}{value}"}, ["django_segment_seq.E011"]),
        ({"format": 12}, ["django_segment_seq.E011"]),
        ({"format": "OD{date:%Y%m%d}"}, ["django_segment_seq.E012"]),
        ({"format": "{date:%Y%m%d}{value}", "reset": "hourly"}, ["django_segment_seq.E013"]),
        ({"format": "{period}{value}", "reset": lambda moment: "x"}, ["django_segment_seq.E028"]),
        ({"format": "{period}{value}"}, ["django_segment_seq.E027"]),
        ({"format": "{period!r}{value}", "reset": "daily"}, ["django_segment_seq.E011"]),
        ({"format": "{period:d}{value}", "reset": "daily"}, ["django_segment_seq.E011"]),
        ({"format": "{date:%Y%m}{value:04d}", "reset": "weekly"}, ["django_segment_seq.E015"]),
        ({"format": "{date:%Y-%V}{value:04d}", "reset": "weekly"}, ["django_segment_seq.E015"]),
        ({"format": "{date:%Y}{value:04d}", "reset": "quarterly"}, ["django_segment_seq.E015"]),
        ({"format": "{date:%Y}{value:04d}", "reset": "yearly", "fiscal_year_start": 4}, ["django_segment_seq.E015"]),
        ({"format": "{period:.4}{value:04d}", "reset": "yearly", "fiscal_year_start": 4}, ["django_segment_seq.E015"]),
        ({"format": "{date:%Y%m%d}{value:04d}", "reset": shift_period}, ["django_segment_seq.E015"]),
        ({"format": "{period:.8}{value:04d}", "reset": shift_period}, ["django_segment_seq.E015"]),
        ({"format": "{value:04d}", "reset": "weekly"}, ["django_segment_seq.E015"]),
        ({"format": "{period}{value:04d}", "reset": "weekly", "max_length": 11}, ["django_segment_seq.E016"]),
        ({"format": "{period}{value:04d}", "reset": shift_period, "max_length": 13}, ["django_segment_seq.E016"]),
        ({"format": "{date:%Y%m}{value}", "reset": "monthly", "reset_on": "missing"}, ["django_segment_seq.E020"]),
        ({"format": "{date:%Y%m}{value}", "reset": "monthly", "reset_on": "kind"}, ["django_segment_seq.E020"]),
        ({"format": "{date:%Y%m}{value}", "reset": "monthly", "reset_on": 3}, ["django_segment_seq.E020"]),
        ({"format": "{date:%Y%m}{value}", "reset_on": "issued_on"}, ["django_segment_seq.E021"]),
        ({"reset_on": "issued_on"}, ["django_segment_seq.E021"]),
        ({"format": "{period}{value}", "reset": "yearly", "fiscal_year_start": 13}, ["django_segment_seq.E022"]),
        ({"format": "{period}{value}", "reset": "yearly", "fiscal_year_start": 0}, ["django_segment_seq.E022"]),
        ({"format": "{period}{value}", "reset": "yearly", "fiscal_year_start": "4"}, ["django_segment_seq.E022"]),
        ({"format": "{period}{value}", "reset": "yearly", "fiscal_year_start": True}, ["django_segment_seq.E022"]),
        ({"format": "{period}{value}", "reset": "quarterly", "fiscal_year_start": 4}, ["django_segment_seq.E022"]),
        ({"format": "{date:%Y}{value}", "fiscal_year_start": 4}, ["django_segment_seq.E022"]),
        ({"reset": "daily"}, ["django_segment_seq.E014"]),
        ({"format": "{date:%Y%m}{value:04d}", "reset": "daily"}, ["django_segment_seq.E015"]),
        ({"format": "T{value:04d}", "reset": "daily"}, ["django_segment_seq.E015"]),
        ({"format": "{date:%Y%m%d}{value:06d}", "max_length": 13}, ["django_segment_seq.E016"]),
        ({"format": "{instance.kind}{value:04d}", "max_length": 9}, ["django_segment_seq.E016"]),
        ({"format": "{value}", "max_length": 18}, ["django_segment_seq.E016"]),
        ({"gapless": "yes"}, ["django_segment_seq.E017"]),
        ({"format": "{instance.missing}{value}"}, ["django_segment_seq.E019"]),
    ],
)
def test_bad_options_are_reported(options, expected):
    assert check_ids(**options) == expected


@isolate_apps("tests.testapp")
def test_reverse_relation_in_a_format_has_an_unknown_width():
    """{instance.<reverse one-to-one>} names a relation, not a column: its width is unknown, not an error."""

    class Order(models.Model):
        number = SequenceField("seq", format="{instance.invoice}{value:04d}", max_length=40)

        class Meta:
            app_label = "testapp"

    class Invoice(models.Model):
        order = models.OneToOneField(Order, on_delete=models.CASCADE)

        class Meta:
            app_label = "testapp"

    assert type(Order._meta.get_field("invoice")).__name__ == "OneToOneRel"
    assert [m.id for m in Order._meta.get_field("number").check()] == []


@isolate_apps("tests.testapp")
def test_long_name_with_reset_is_reported():
    class Model(models.Model):
        number = SequenceField("n" * 90, format="{date:%Y%m%d}{value}", reset="daily")

        class Meta:
            app_label = "testapp"

    assert [m.id for m in Model._meta.get_field("number").check()] == ["django_segment_seq.E018"]


@isolate_apps("tests.testapp")
def test_gapless_and_cached_fields_on_one_sequence_are_reported():
    class Cached(models.Model):
        number = SequenceField("shared")

        class Meta:
            app_label = "testapp"

    class Locked(models.Model):
        number = SequenceField("shared", gapless=True)

        class Meta:
            app_label = "testapp"

    for model in (Cached, Locked):
        messages = model._meta.get_field("number").check()
        assert [m.id for m in messages] == ["django_segment_seq.E031"] and "shared" in messages[0].msg


def test_manage_py_check_passes_on_the_test_models():
    call_command("check", fail_level="WARNING", verbosity=0)


@isolate_apps("tests.testapp")
def test_gapless_with_the_sequence_table_in_another_database_is_reported(settings):
    settings.SEGMENT_SEQ = {"DATABASE": "other"}

    class Model(models.Model):
        number = SequenceField("elsewhere", gapless=True)

        class Meta:
            app_label = "testapp"

    messages = Model._meta.get_field("number").check()
    assert [m.id for m in messages] == ["django_segment_seq.E029"] and "'other'" in messages[0].msg
