"""The stress harness in its small size, on the test database: random ways of taking numbers, step edited meanwhile."""

import pytest
from django.conf import settings
from django.db import connection

from tests.stress.run import SMALL, stress

pytestmark = pytest.mark.django_db(transaction=True)


def test_small_stress_run_repeats_nothing(tmp_path):
    report = stress(
        settings.BACKEND, str(connection.settings_dict["NAME"]), SMALL["workers"], SMALL["numbers"], tmp_path, seed=3
    )
    print("\n".join(report.lines()))
    assert report.numbers >= SMALL["workers"] * SMALL["numbers"]
    assert not report.duplicates and not report.stored_duplicates
    assert report.allocations > 0
