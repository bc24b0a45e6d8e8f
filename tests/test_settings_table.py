"""docs/settings.md shows every setting as conf.SETTINGS declares it, and the checks refuse what it does not allow."""

import math
import re
import time
from pathlib import Path

import pytest
from django.core.checks import run_checks

from django_segment_seq.conf import SETTINGS

DOCS = Path(__file__).resolve().parent.parent / "docs" / "settings.md"


def shown(value: object) -> str:
    """A default as the docs write it: long numbers with underscores."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 100_000:
        return f"{value:_}"
    return repr(value)


def settings_block() -> str:
    """The SEGMENT_SEQ dict of docs/settings.md, built from the table."""
    entries = [(f'    "{setting.name}": {shown(setting.default)},', setting.doc) for setting in SETTINGS]
    width = max(len(code) for code, _doc in entries)
    lines = [f"{code.ljust(width)}  # {doc}" for code, doc in entries]
    return "SEGMENT_SEQ = {\n" + "\n".join(lines) + "\n}"


def test_the_docs_show_every_setting_with_its_default_and_doc():
    found = re.search(r"```python\n(SEGMENT_SEQ = \{\n.*?\n\})\n```", DOCS.read_text(), re.S)
    assert found is not None, "docs/settings.md has no SEGMENT_SEQ block"
    assert found.group(1) == settings_block(), "regenerate the block: print(tests.test_settings_table.settings_block())"


# The test models conceal numbers, so every SEGMENT_SEQ tried here keeps the suite's key.
KEPT = {"CONCEAL_KEY": "00112233445566778899aabbccddeeff"}
NUMBERS = [setting for setting in SETTINGS if {int, float} & set(setting.kinds) and not setting.is_flag]


@pytest.mark.parametrize("setting", NUMBERS, ids=lambda setting: setting.name)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_numbers_that_are_not_finite_are_refused(settings, setting, value):
    settings.SEGMENT_SEQ = {**KEPT, setting.name: value}
    assert [message.id for message in run_checks()] == ["django_segment_seq.E003"]


@pytest.mark.parametrize("setting", NUMBERS, ids=lambda setting: setting.name)
def test_the_bounds_are_checked_at_both_ends(settings, setting):
    settings.SEGMENT_SEQ = {**KEPT, setting.name: setting.low - 1}
    assert [message.id for message in run_checks()] == ["django_segment_seq.E003"]
    if setting.past_instant:
        return
    if setting.high is not None:
        settings.SEGMENT_SEQ = {**KEPT, setting.name: setting.high + 1}
        assert [message.id for message in run_checks()] == ["django_segment_seq.E003"]
    settings.SEGMENT_SEQ = {**KEPT, setting.name: setting.default if setting.default is not None else setting.low}
    assert run_checks() == []


def test_a_snowflake_epoch_in_the_future_is_refused(settings):
    """Ids would count from an instant not reached yet: every id would read as the clock moving backwards."""
    settings.SEGMENT_SEQ = {**KEPT, "SNOWFLAKE_EPOCH_MS": int(time.time() * 1000) + 86_400_000}
    messages = run_checks()
    assert [message.id for message in messages] == ["django_segment_seq.E003"]
    assert "not in the future" in messages[0].hint
