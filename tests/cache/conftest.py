"""Background fetches on every backend: on SQLite they need the Sequence table in a file of its own."""

import pytest
from django.conf import settings
from django.test import override_settings

ON_SQLITE = settings.BACKEND == "sqlite"
# On SQLite there is no background fetch on a file the project's tables share (see
# test_no_background_fetch_on_a_shared_sqlite_file), so tests of prefetch keep the Sequence table in a file
# of its own there, as the README advises for prefetch on SQLite.
ALIAS = "sequences" if ON_SQLITE else "default"


@pytest.fixture
def sequence_file():
    """On SQLite, the separate Sequence file (SequenceRouter); elsewhere nothing to do."""
    if not ON_SQLITE:
        yield
        return
    with override_settings(DATABASE_ROUTERS=["django_segment_seq.routers.SequenceRouter"]):
        yield
