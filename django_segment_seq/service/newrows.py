"""Rows a client creates by naming them, counted against its cap once they exist and once each, as the database
identifies rows: a spelling of an existing row, or a row another request made meanwhile, costs nothing."""

from __future__ import annotations

from django.db import connections, router, transaction
from django.db.models import F

from django_segment_seq.allocator.rows import create_row, read_row
from django_segment_seq.conf import app_settings
from django_segment_seq.db.statements import statements_for
from django_segment_seq.service.models import Client


def made_within_cap(alias: str, name: str, client_id: int) -> bool:
    """Whether row `name` exists now: made here and counted, or found made (by a sibling request, or as another
    spelling of it) without counting; False when it is missing and the client's cap is used.

    The count is raised and the row made in one transaction, the client's row locked by the raise: a sibling
    request for the same new name waits for it, then finds the cap used and the row there, and is served.
    """
    settings = app_settings()
    connection = connections[alias]
    client_alias = router.db_for_write(Client)
    with transaction.atomic(using=client_alias), transaction.atomic(using=alias):
        counted = Client.objects.using(client_alias).filter(pk=client_id, rows_created__lt=F("max_new_rows"))
        if counted.update(rows_created=F("rows_created") + 1):
            sql = statements_for(connection, settings["LOCK_TIMEOUT"])
            with connection.cursor() as cursor:
                if read_row(cursor, sql.select_row, name) is None:
                    create_row(connection, cursor, sql.insert_if_missing, alias, name, settings)
                    return True
            for rolled_back in {client_alias, alias}:  # there already: the count is given back
                transaction.set_rollback(True, using=rolled_back)
            return True
    with connections[alias].cursor() as cursor:
        return read_row(cursor, statements_for(connection, settings["LOCK_TIMEOUT"]).select_row, name) is not None
