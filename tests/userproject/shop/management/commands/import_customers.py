"""Insert customers the way a legacy import would, without numbers: the rows migration 0003 numbers."""

from typing import Any

from django.core.management.base import BaseCommand
from django.db import connection, transaction


class Command(BaseCommand):
    help = "Insert COUNT customers with only a name, by plain SQL (works before and after migration 0002)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("count", type=int)

    def handle(self, *args: Any, count: int, **options: Any) -> None:
        table = connection.ops.quote_name("shop_customer")
        column = connection.ops.quote_name("name")
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {table} ({column}) VALUES (%s)", [(f"customer {i}",) for i in range(count)]
            )
        self.stdout.write(f"inserted {count} customers")
