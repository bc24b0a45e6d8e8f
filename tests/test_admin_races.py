"""The Sequence admin against processes that move the row while an admin is saving it."""

import contextlib
import json
import subprocess
import sys

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from django_segment_seq import SequenceMisconfigured, clear_cache, next_value, next_values
from django_segment_seq.admin import SequenceAdmin
from django_segment_seq.models import Sequence
from tests.conftest import ROOT, assert_unique, worker_env

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin_client(client):
    user = User.objects.create_superuser("admin", "admin@example.com", "pw")
    client.force_login(user)
    return client


@pytest.mark.skipif(
    settings.BACKEND == "sqlite",
    reason="SQLite: the admin's transaction keeps its shared lock, so no other process commits before it ends",
)
@pytest.mark.processes
def test_max_value_is_not_lowered_below_a_value_reached_while_the_admin_saves(admin_client, monkeypatch, tmp_path):
    """max_value 300 is valid against the value 20 the form was validated with; another process reaches 520 meanwhile.

    Another process's allocation lands between the form's validation and the save (started from
    save_model, the only place to put it deterministically). The row must never end with
    value > max_value, which makes every later allocation raise SequenceMisconfigured: either the
    admin refuses the edit, or the allocation waits for the admin's edit and respects the new maximum.
    """
    Sequence.objects.create(name="s", step=10)
    next_values("s", 20)
    row = Sequence.objects.get(name="s")
    url = f"/admin/django_segment_seq/sequence/{row.pk}/change/"
    assert admin_client.get(url).status_code == 200
    original = SequenceAdmin.save_model
    movers = []

    def save_model_while_another_process_allocates(self, request, obj, form, change):
        mover = subprocess.Popen(
            [sys.executable, "-m", "tests.support.scenarios", "take-many", "s", "500"],
            cwd=ROOT,
            env=worker_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        movers.append(mover)
        with contextlib.suppress(subprocess.TimeoutExpired):
            mover.wait(timeout=5)  # if the admin locked the row, the allocation waits for the admin instead
        original(self, request, obj, form, change)

    monkeypatch.setattr(SequenceAdmin, "save_model", save_model_while_another_process_allocates)
    data = {"value": 20, "initial-value": 20, "step": 10, "min_value": 1, "max_value": 300, "_save": "Save"}
    response = admin_client.post(url, data)
    out, _ = movers[0].communicate(timeout=60)
    moved = json.loads(out.strip().splitlines()[-1])
    after = Sequence.objects.get(pk=row.pk)
    assert after.value <= after.max_value, (
        f"row saved with value {after.value} above max_value {after.max_value} (admin answered {response.status_code})"
    )
    if response.status_code == 200:  # refused: shows an error and changes nothing but the other process's move
        assert after.max_value == row.max_value
    clear_cache()
    try:
        later = [next_value("s") for _ in range(5)]
    except SequenceMisconfigured as exc:  # pragma: no cover - the failure this test exists for
        pytest.fail(f"allocation after the admin save: {exc}")
    assert_unique(list(range(1, 21)) + moved["numbers"] + later)
