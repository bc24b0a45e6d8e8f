"""`manage.py migrate` under a changed CONCEAL_KEY stops as a command error does: its message and exit status 1,
no traceback; call_command() callers still catch ConcealKeyChanged."""

import contextlib
import io
import re

import pytest
from django.core.management import call_command
from django.core.management.commands.migrate import Command as MigrateCommand
from django.test import override_settings

from django_segment_seq import clear_cache
from django_segment_seq.exceptions import ConcealKeyChanged
from tests.testapp.models import ShopOrder

pytestmark = pytest.mark.django_db(transaction=True)
OTHER_KEY = "ffeeddccbbaa99887766554433221100"


def test_migrate_under_a_changed_key_prints_the_refusal_not_a_traceback():
    call_command("migrate", "django_segment_seq", verbosity=0)
    ShopOrder.objects.create()
    out, err = io.StringIO(), io.StringIO()
    with override_settings(SEGMENT_SEQ={"CONCEAL_KEY": OTHER_KEY}):
        clear_cache()
        with pytest.raises(ConcealKeyChanged, match="shop-order"):
            call_command("migrate", "django_segment_seq", verbosity=0)
        with pytest.raises(SystemExit) as exited, contextlib.redirect_stderr(err):
            # Before: the ConcealKeyChanged traceback, out of manage.py. Now the system check (E053) stops it first.
            MigrateCommand(stdout=out, stderr=err).run_from_argv(["manage.py", "migrate", "django_segment_seq"])
        assert exited.value.code == 1
        assert "Traceback" not in err.getvalue()
        assert "(django_segment_seq.E053) Sequence 'shop-order'" in err.getvalue(), err.getvalue()
        skipped = io.StringIO()
        with pytest.raises(SystemExit) as exited, contextlib.redirect_stderr(skipped):
            argv = ["manage.py", "migrate", "django_segment_seq", "--skip-checks"]
            MigrateCommand(stdout=out, stderr=skipped).run_from_argv(argv)
    assert exited.value.code == 1
    assert "Traceback" not in skipped.getvalue()
    assert re.fullmatch(
        r"ConcealKeyChangedAtMigrate: Sequence 'shop-order': its texts .* put the old key back\.\n", skipped.getvalue()
    ), skipped.getvalue()
