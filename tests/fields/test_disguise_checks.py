"""System checks of check digits (E043-E046) and concealment (E046-E049), each problem with its own id."""

import pytest
from django.db import models
from django.test import override_settings
from django.test.utils import isolate_apps

from django_segment_seq import SequenceField
from tests.fields.test_flow_checks import check_ids


@pytest.mark.parametrize(
    "options",
    [
        {"format": "INV{value:06d}", "check_digits": "luhn"},
        {"format": "INV-{date:%Y}-{value:06d}", "reset": "yearly", "check_digits": "verhoeff"},
        {"format": "RF{value:08X}", "check_digits": "mod97-10"},
        {"format": "OD{date:%Y%m%d}{value:08d}", "reset": "daily", "conceal": True},
        {"format": "SO{value:06d}", "conceal": True, "check_digits": "damm"},
        {"format": "INV{value:06d}", "check_digits": "mod97-10", "max_length": 11},
    ],
)
def test_valid_options_pass(options):
    assert check_ids(**options) == []


@pytest.mark.parametrize(
    ("options", "ids"),
    [
        ({"format": "INV{value:06d}", "check_digits": "crc32"}, ["django_segment_seq.E043"]),
        ({"format": "INV{value:06x}", "check_digits": "luhn"}, ["django_segment_seq.E045"]),
        ({"check_digits": "luhn"}, ["django_segment_seq.E046"]),
        ({"format": lambda value, instance, now: f"X{value}", "check_digits": "luhn"}, ["django_segment_seq.E046"]),
        ({"conceal": True}, ["django_segment_seq.E046"]),
        ({"format": "OD{value:05d}", "conceal": True}, ["django_segment_seq.E049"]),
        ({"format": "OD{value}", "conceal": True}, ["django_segment_seq.E049"]),
        # INV + 6 digits + 2 check digits: 11 characters do not fit in 10.
        ({"format": "INV{value:06d}", "check_digits": "mod97-10", "max_length": 10}, ["django_segment_seq.E016"]),
    ],
)
def test_each_problem_has_its_id(options, ids):
    assert check_ids(**options) == ids


@pytest.mark.parametrize(
    ("key", "check_id"),
    [(None, "django_segment_seq.E047"), ("00112233", "django_segment_seq.E048"), ("xyz", "django_segment_seq.E048")],
)
def test_a_missing_or_short_key_is_refused(key, check_id):
    with override_settings(SEGMENT_SEQ={"CONCEAL_KEY": key}):
        assert check_ids(format="OD{value:08d}", conceal=True) == [check_id]
        assert check_ids(format="OD{value:08d}") == []  # no field conceals: no key needed


def test_a_missing_library_is_named(monkeypatch):
    real = __import__("importlib.util").util.find_spec
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name in ("ff3", "stdnum") else real(name))
    assert check_ids(format="OD{value:08d}", conceal=True) == ["django_segment_seq.E044"]
    assert check_ids(format="OD{value:08d}", check_digits="luhn") == ["django_segment_seq.E044"]


def test_the_options_are_written_to_migrations():
    @isolate_apps("tests.testapp")
    def build():
        class Model(models.Model):
            number = SequenceField("seq", format="SO{value:08d}", conceal=True, check_digits="damm")

            class Meta:
                app_label = "testapp"

        return Model._meta.get_field("number").deconstruct()[3]

    kwargs = build()
    assert kwargs["conceal"] is True and kwargs["check_digits"] == "damm"
    assert "validators" not in kwargs  # the check-digit validator comes from the option, not from migrations


def check_messages(**options):
    """The django_segment_seq messages of a model with one SequenceField("seq", **options)."""

    @isolate_apps("tests.testapp")
    def build():
        class Model(models.Model):
            number = SequenceField("seq", **options)

            class Meta:
                app_label = "testapp"

        return Model._meta.get_field("number").check()

    return [message for message in build() if message.id.startswith("django_segment_seq")]


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("00112233445566778899aabbccddeeff\n", "whitespace around it"),
        (" 00112233445566778899aabbccddeeff", "whitespace around it"),
        ("00112233 445566778899aabbccddeeff", "whitespace in it"),
    ],
)
def test_a_key_with_whitespace_says_so(key, said):
    with override_settings(SEGMENT_SEQ={"CONCEAL_KEY": key}):
        [message] = check_messages(format="OD{value:08d}", conceal=True)
    assert message.id == "django_segment_seq.E048"
    assert said in message.msg
    assert "hex digits;" not in message.msg  # not "has 33 hex digits", which counts the whitespace as one


@pytest.mark.parametrize("conceal", ["yes", 1, None, "False"])
def test_conceal_must_be_a_bool(conceal):
    [message] = check_messages(format="OD{value:08d}", conceal=conceal)
    assert message.id == "django_segment_seq.E054"
    assert f"conceal={conceal!r}" in message.msg
    assert check_ids(conceal=conceal) == ["django_segment_seq.E054"]  # on an integer field too, before E046
