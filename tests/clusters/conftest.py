"""Cluster tests start servers of their own on loopback ports; each kind runs once, in its own backend's job.

PostgreSQL clusters run when the suite runs on PostgreSQL and Galera when it runs on MariaDB, so a whole
run starts each cluster once. Under CI=true a cluster that cannot start fails its tests, never skips them.
"""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.clusters.patroni_fixtures import patroni_cluster  # noqa: F401 - a fixture, found by pytest here

# Each test module's backend: the job it runs in.
BACKEND_OF = {"test_pg_failover.py": "postgres", "test_patroni.py": "postgres"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        wanted = BACKEND_OF.get(item.path.name)
        if wanted is not None and wanted != settings.BACKEND:
            item.add_marker(pytest.mark.skip(reason=f"runs once, in the {wanted} job"))
