"""The system checks of SEGMENT_SEQ["REDIS"] (E060-E063)."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks

from django_segment_seq.models import Sequence

KEPT = {"CONCEAL_KEY": "00112233445566778899aabbccddeeff"}


def ids(settings, redis: object, **kwargs: object) -> list[str]:
    settings.SEGMENT_SEQ = {**KEPT, "REDIS": redis}
    return [message.id for message in run_checks(**kwargs) if message.id.startswith("django_segment_seq.E06")]


@pytest.mark.parametrize(
    "redis",
    [
        {"SEQUENCES": ["a"]},  # no server named
        {"LOCATION": "redis://x", "CACHE": "default", "SEQUENCES": ["a"]},  # two
        {"SENTINELS": [["h", 26379]], "SEQUENCES": ["a"]},  # no SERVICE
        {"LOCATION": "redis://x", "SEQUENCE": ["a"]},  # unknown key
        {"LOCATION": "redis://x", "SUPER_STEP": 0},
        {"LOCATION": "redis://x", "MAX_BLOCK": 500, "SUPER_STEP": 100},
        {"LOCATION": "redis://x", "OPTIONS": {"retry_on_timeout": True}},
        {"LOCATION": "redis://x", "KEY_PREFIX": "{x}"},
        {"CACHE": "missing"},
    ],
)
def test_bad_settings_are_refused(settings, redis):
    assert "django_segment_seq.E060" in ids(settings, redis)


def test_good_settings_pass(settings):
    assert ids(settings, {"LOCATION": "redis://127.0.0.1:1/0", "SEQUENCES": ["order", "order@*"]}) == []
    assert ids(settings, {"SENTINELS": [("127.0.0.1", 26379)], "SERVICE": "m", "SEQUENCES": ["a"]}) == []


def test_a_gapless_field_on_the_tier_is_refused(settings):
    # tests.testapp has gapless fields; "*" names every row
    assert "django_segment_seq.E062" in ids(settings, {"LOCATION": "redis://127.0.0.1:1/0", "SEQUENCES": ["*"]})


@pytest.mark.django_db
def test_a_cycling_row_on_the_tier_is_refused(settings):
    Sequence.objects.create(name="wraps", cycle=True, max_value=10)
    redis = {"LOCATION": "redis://127.0.0.1:1/0", "SEQUENCES": ["wraps"]}
    assert "django_segment_seq.E063" in ids(settings, redis, databases=["default"])
