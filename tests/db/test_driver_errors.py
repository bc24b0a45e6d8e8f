"""The database's own error codes, read in one place (db/driver_errors.py) from real errors of each backend."""

import pytest
from django.conf import settings
from django.db import IntegrityError, connection, transaction

from django_segment_seq.db.driver_errors import driver_code, mysql_code
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)

# A duplicate key, as each backend numbers it: PostgreSQL's SQLSTATE, MySQL's error number, nothing on SQLite.
DUPLICATE = {"postgres": ("23505", None), "mariadb": (None, 1062), "sqlite": (None, None)}


def test_the_code_behind_a_django_error():
    Sequence.objects.create(name="s")
    with pytest.raises(IntegrityError) as info, transaction.atomic():
        Sequence.objects.create(name="s")
    assert driver_code(info.value) == DUPLICATE[settings.BACKEND]


@pytest.mark.skipif(settings.BACKEND != "mariadb", reason="the driver's own error of mysqlclient")
def test_the_code_of_the_drivers_own_error():
    import MySQLdb  # installed where MariaDB is tested

    connection.ensure_connection()
    with pytest.raises(MySQLdb.ProgrammingError) as info:
        connection.connection.query("SELEC 1")
    assert info.value.__cause__ is None and mysql_code(info.value) == 1064
