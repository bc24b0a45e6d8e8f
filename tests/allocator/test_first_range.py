"""A process's first range costs what any range costs, plus the server's history asked once per session (the
failover fence needs it): on MariaDB the Sequence table's InnoDB id comes in that same statement, not one more."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from django_segment_seq import next_value
from django_segment_seq.api import clear_cache
from django_segment_seq.models import Sequence


@pytest.mark.django_db(transaction=True)
def test_a_sessions_first_range_takes_one_statement_more_than_the_next(backend):
    Sequence.objects.create(name="first", step=10)
    caller = connections["default"]
    caller.close()  # a new session, as in a new process
    clear_cache()
    with CaptureQueriesContext(caller) as first:
        assert next_value("first") == 1
    clear_cache()
    with CaptureQueriesContext(caller) as later:
        assert next_value("first") == 11
    once_per_session = 0 if backend == "sqlite" else 1  # the server's history (SQLite has none)
    assert len(first) == len(later) + once_per_session, [query["sql"][:80] for query in first]
