"""The test runner: closes the allocator's own connections before Django drops the test database.

Without this, PostgreSQL refuses to drop a database that a private connection still has open.
"""

from typing import Any

from django.test.runner import DiscoverRunner

from django_segment_seq import close_connections


class TestRunner(DiscoverRunner):
    def teardown_databases(self, old_config: Any, **kwargs: Any) -> None:
        close_connections()
        super().teardown_databases(old_config, **kwargs)
