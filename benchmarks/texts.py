"""What check digits and concealment cost per text: render() with each option, beside the plain format, in one run.

Run with `./dev bench texts`. No database: the figures are the Python work a save adds to its INSERT.
"""

from __future__ import annotations

import argparse
import timeit
from datetime import datetime

import django
from django.conf import settings

VARIANTS: list[tuple[str, dict[str, str]]] = [
    ("plain", {}),
    ("check_digits=luhn", {"check_digits": "luhn"}),
    ("check_digits=mod97-10", {"check_digits": "mod97-10"}),
    ("conceal", {"conceal_as": "shop-order"}),
    ("conceal + check_digits=damm", {"conceal_as": "shop-order", "check_digits": "damm"}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=20_000, help="texts rendered per variant")
    args = parser.parse_args()
    settings.configure(
        INSTALLED_APPS=["django_segment_seq"],
        SEGMENT_SEQ={"CONCEAL_KEY": "00112233445566778899aabbccddeeff"},  # a benchmark's key, never a project's
        USE_TZ=True,
    )
    django.setup()
    from django_segment_seq.flow.formats import FlowFormat  # after django.setup(): it reads the settings

    moment = datetime(2026, 11, 25, 12)
    plain = None
    print(f"{'format SO{value:08d} with':32} {'µs per text':>12} {'x plain':>8}")
    for label, options in VARIANTS:
        fmt = FlowFormat("SO{value:08d}", **options)
        numbers = iter(range(1, args.count + 1))
        seconds = timeit.timeit(
            lambda fmt=fmt, numbers=numbers: fmt.render(next(numbers), None, moment), number=args.count
        )
        micros = seconds / args.count * 1e6
        plain = plain or micros
        print(f"{label:32} {micros:12.1f} {micros / plain:8.1f}")


if __name__ == "__main__":
    main()
