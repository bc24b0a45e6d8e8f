"""System checks of the prefetch and adaptive-step settings."""

import pytest
from django.test import override_settings

from django_segment_seq.checks import check_settings


def ids(settings_value):
    with override_settings(SEGMENT_SEQ=settings_value):
        return [e.id for e in check_settings()]


def test_valid_performance_settings_pass():
    valid = {"PREFETCH": False, "PREFETCH_AT": 0.5, "ADAPTIVE_STEP": True, "MAX_STEP": 10_000, "STEP_TARGET_SECONDS": 5}
    assert ids(valid) == []


@pytest.mark.parametrize(
    "value",
    [
        {"PREFETCH": "yes"},
        {"PREFETCH_AT": 1.5},
        {"PREFETCH_AT": -0.1},
        {"ADAPTIVE_STEP": 1},
        {"MAX_STEP": 0},
        {"MAX_STEP": 2.5},
        {"STEP_TARGET_SECONDS": 0},
    ],
)
def test_bad_performance_settings_are_reported(value):
    assert ids(value) == ["django_segment_seq.E003"]
