"""A worker process for the concurrency tests: takes numbers one way and writes every one it got to a file.

Run as `python -m tests.workers MODE NAME COUNT OUT`, with the environment naming the test database.
"""

import os
import sys


def main(mode: str, name: str, count: int, out: str) -> None:
    import django

    django.setup()
    from django_segment_seq import next_value, next_values
    from tests.testapp.models import BulkItem, Order

    got: list[int] = []
    if mode == "value":
        got = [next_value(name) for _ in range(count)]
    elif mode == "values":
        while len(got) < count:
            got.extend(next_values(name, min(37, count - len(got))))
    elif mode == "save":  # name is ignored: Order.order_no uses the "order" sequence
        got = [Order.objects.create().order_no for _ in range(count)]
    elif mode == "mixed":
        while len(got) < count:
            got.append(next_value(name))
            got.extend(next_values(name, 5))
    elif mode == "bulk":  # name is ignored: BulkItem uses "bulk-id" and "bulk-serial"
        while len(got) < count:
            items = BulkItem.objects.bulk_create([BulkItem() for _ in range(min(250, count - len(got)))])
            got.extend(item.pk for item in items)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    with open(out, "w") as fh:
        fh.write("\n".join(map(str, got)))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
