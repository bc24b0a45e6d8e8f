"""STANDBYS without a cluster: which rows need a confirming standby, and a primary that has none refuses ranges and
gapless numbers with SequenceUnavailable, within LOCK_TIMEOUT. The partitions themselves are driven in
tests/clusters/test_pg_partitions.py."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from django.db import connection, transaction

from django_segment_seq import next_value
from django_segment_seq.compat.sequences import get_next_value
from django_segment_seq.db.standbys import required_standbys, watched
from django_segment_seq.exceptions import SequenceUnavailable

KEPT = dict(settings.SEGMENT_SEQ)
on_postgres = pytest.mark.skipif(settings.BACKEND != "postgres", reason="standbys are PostgreSQL's")


@on_postgres
@pytest.mark.parametrize(
    ("configured", "stored", "required"),
    [
        (None, "pg:1:1/5+standby", 1),  # a standby confirmed this row's last range here: one must again
        (None, "pg:1:1/5", 0),  # none did: a primary that never had a standby goes on alone
        (None, "pg:1:0/5+standby", 0),  # confirmed on the timeline before a promotion: the new primary goes on
        (None, "", 0),
        ({"default": 0}, "pg:1:1/5+standby", 0),  # a primary run alone on purpose
        ({"default": 2}, "pg:1:1/5", 2),
    ],
)
def test_which_rows_need_a_confirming_standby(settings, configured, stored, required):
    settings.SEGMENT_SEQ = {**KEPT, "STANDBYS": configured}
    assert required_standbys(connection, stored, "pg:1:1/5") == required


def test_only_a_postgresql_alias_with_several_hosts_or_named_is_watched(settings):
    settings.SEGMENT_SEQ = {**KEPT, "STANDBYS": None}
    assert not watched(connection)  # the suite's server: one host
    settings.SEGMENT_SEQ = {**KEPT, "STANDBYS": {"default": 1}}
    assert watched(connection) == (settings.BACKEND == "postgres")


@on_postgres
@pytest.mark.django_db(transaction=True)
def test_a_primary_without_the_standbys_required_hands_out_nothing(settings):
    settings.SEGMENT_SEQ = {**KEPT, "STANDBYS": {"default": 1}, "LOCK_TIMEOUT": 0.3, "PREFETCH": False}
    started = time.monotonic()
    with pytest.raises(SequenceUnavailable, match="standbys required confirm"):
        next_value("standbys-required")
    assert time.monotonic() - started < 5  # waited about LOCK_TIMEOUT for a slow standby, no more
    with pytest.raises(SequenceUnavailable, match="STANDBY_LAG"), transaction.atomic():
        get_next_value("standbys-required-gapless")
    settings.SEGMENT_SEQ = {**KEPT, "STANDBYS": {"default": 0}, "PREFETCH": False}
    assert next_value("standbys-required") >= 1
