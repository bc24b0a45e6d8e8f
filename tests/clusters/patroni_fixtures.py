"""The Patroni cluster fixture: started once per session, stopped at its end whatever the tests did."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support import patroni

DATABASE = "segseq_patroni"


@pytest.fixture(scope="session")
def patroni_cluster(request: pytest.FixtureRequest) -> Iterator[patroni.PatroniCluster]:
    """etcd and two Patroni members (synchronous_mode), with DATABASE migrated through the leader.

    Missing binaries skip the tests, but fail them under CI=true. Every process is SIGKILLed at the end,
    also when a test or the start itself fails.
    """
    missing = patroni.missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI runs the Patroni tests and cannot here: {missing}")
        pytest.skip(missing)
    workdir = Path(tempfile.mkdtemp(prefix="segseq-patroni-"))
    os.chmod(workdir, 0o755)  # the members run as postgres, which must enter it
    cluster = patroni.PatroniCluster(workdir)
    request.addfinalizer(lambda: shutil.rmtree(workdir, ignore_errors=True))
    request.addfinalizer(cluster.stop)  # finalizers run last-in first-out: stop, then remove the files
    cluster.start()
    cluster.execute(f"CREATE DATABASE {DATABASE}")
    migrate = subprocess.run(
        [sys.executable, "-m", "tests.support.failover_worker", "migrate", cluster.hosts, cluster.ports, DATABASE,
         "-", "-", "{}"],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert migrate.returncode == 0, f"migrations through the leader failed:\n{migrate.stderr[-3000:]}"
    yield cluster
