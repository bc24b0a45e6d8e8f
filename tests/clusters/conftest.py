"""Cluster tests start servers of their own on loopback ports; each kind runs once, in its own backend's job.

PostgreSQL clusters run when the suite runs on PostgreSQL and Galera when it runs on MariaDB, so a whole
run starts each cluster once; SEGMENT_SEQ_ALL_CLUSTERS=1 runs them all in one run, to measure them side by
side. Under CI=true a cluster that cannot start fails its tests, never skips them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.clusters.patroni_fixtures import patroni_cluster  # noqa: F401 - a fixture, found by pytest here
from tests.support.galera import REJOIN_TIMEOUT, GaleraCluster, missing

# Each test module's backend: the job it runs in.
BACKEND_OF = {
    "test_pg_failover.py": "postgres",
    "test_patroni.py": "postgres",
    "test_galera.py": "mariadb",
    "test_pg_partitions.py": "postgres",
    "test_galera_partitions.py": "mariadb",
    "test_patroni_partitions.py": "postgres",
}
# The database the Galera tests take numbers in, made once on the cluster.
GALERA_DATABASE = "galera"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("SEGMENT_SEQ_ALL_CLUSTERS"):
        return
    for item in items:
        wanted = BACKEND_OF.get(item.path.name)
        if wanted is not None and wanted != settings.BACKEND:
            item.add_marker(pytest.mark.skip(reason=f"runs once, in the {wanted} job"))


@pytest.fixture(scope="session")
def galera_cluster(request: pytest.FixtureRequest) -> Iterator[GaleraCluster]:
    """Three Galera nodes, Synced, with the app's tables in GALERA_DATABASE; killed at the end, also on failure."""
    problem = missing()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI runs the Galera tests and cannot here: {problem}")
        pytest.skip(f"cannot start a Galera cluster: {problem}")
    workdir = Path(tempfile.mkdtemp(prefix="segseq-galera-"))
    os.chmod(workdir, 0o755)  # the servers run as mysql, which cannot enter pytest's own temporary folders
    cluster = GaleraCluster(workdir)
    request.addfinalizer(cluster.stop)
    cluster.start()
    cluster.create_database(GALERA_DATABASE)
    yield cluster
    cluster.stop()


@pytest.fixture
def galera(galera_cluster: GaleraCluster) -> GaleraCluster:
    """The cluster, whole again: a node an earlier test killed is started and waited for."""
    for node in galera_cluster.nodes:
        if not node.alive():
            node.start()
    galera_cluster.wait_synced(galera_cluster.nodes, 3, REJOIN_TIMEOUT)
    return galera_cluster


@pytest.fixture
def folder(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A folder the servers, run as postgres or mysql, may enter (pytest's own temporary folders are closed to
    them); removed after the test."""
    made = Path(tempfile.mkdtemp(prefix=f"segseq-{request.node.module.__name__.rsplit('.', 1)[-1]}-"))
    os.chmod(made, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)
