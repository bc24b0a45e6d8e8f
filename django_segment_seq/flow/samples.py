"""The days the system checks render a dated format on, fourteen months of them: rendered once per format, reset
and time zone, since every `manage.py` command runs the checks and each field's check renders every day."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from django_segment_seq.db.rownames import KEY_MAX_LENGTH
from django_segment_seq.flow.resets import PeriodKey, Reset

# Per sampled day, the rendered {date} and {period} parts in the format's order, and the day's period key.
Samples = tuple[tuple[tuple[str, ...], str], ...]


def sample_instants() -> list[datetime]:
    """Noon of every day over fourteen months spanning a year end, in the project's time zone."""
    zone = timezone.get_default_timezone() if settings.USE_TZ else UTC
    start = datetime(2023, 12, 1, 12, 0, 0, 123456)
    instants = []
    for day in range(428):
        naive = start + timedelta(days=day)
        instants.append(timezone.make_aware(naive, zone) if settings.USE_TZ else naive)
    return instants


def dated_samples(date_specs: list[str], period_specs: list[str], reset: Reset | None) -> Samples:
    """Every sampled day's rendered dated parts and period key: a named reset's key, a callable's longest key
    (its texts are not known before it runs), or nothing."""
    named = reset.reset if reset is not None and reset.is_named else None
    filler = "0" * KEY_MAX_LENGTH if reset is not None and reset.is_callable else ""
    zone = str(timezone.get_default_timezone()) if settings.USE_TZ else ""
    start = reset.sample_start if reset is not None else None
    return _rendered(tuple(date_specs), tuple(period_specs), named, start, filler, settings.USE_TZ, zone)


@functools.lru_cache(maxsize=256)
def _rendered(
    date_specs: tuple[str, ...],
    period_specs: tuple[str, ...],
    named: str | None,
    start: int | None,
    filler: str,
    use_tz: bool,
    zone: str,
) -> Samples:
    """The samples of one format, reset and time zone; `use_tz` and `zone` are the settings they were made under."""
    rule = Reset(named, start) if named is not None else None
    samples = []
    for moment in sample_instants():
        key = rule.sample_key(moment) if rule is not None else filler
        shown = PeriodKey(key)
        texts = tuple(format(moment, spec) for spec in date_specs) + tuple(format(shown, spec) for spec in period_specs)
        samples.append((texts, key))
    return tuple(samples)
