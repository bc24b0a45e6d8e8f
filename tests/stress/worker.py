"""A resilient worker process: takes numbers in random ways and appends each one to its own file at once.

Run as `python -m tests.stress.worker OUT --count N [options]` with the environment naming the
database (see tests/settings.py). Numbers are written the moment they are handed out, one per line,
so a process killed with SIGKILL leaves every number it got on disk except at most an unfinished
last line. Numbers from rolled-back transactions go to OUT.rolledback, figures to OUT.json at the end.
Errors a deployment would retry (a dropped connection, an unavailable database) are retried here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time
from typing import IO

OPS = ("value", "values", "save")


class Rollback(Exception):
    """Raised inside a transaction to roll it back on purpose."""


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--count", type=int, required=True, help="numbers to collect")
    parser.add_argument("--name", default="order", help="sequence for next_value(s); saves always use 'order'")
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of value,values,save")
    parser.add_argument("--max-batch", type=int, default=40, help="largest next_values count")
    parser.add_argument("--rollback-rate", type=float, default=0.0, help="share of transactions rolled back")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--give-up-after", type=float, default=120.0, help="seconds of failures in a row")
    return parser.parse_args(argv)


class Worker:
    """Collects numbers until it has `count`, retrying database failures the way an application would."""

    def __init__(self, args: argparse.Namespace, out: IO[str], rolled_back: IO[str]) -> None:
        from tests.testapp.models import Order

        self.args = args
        self.out = out
        self.rolled_back = rolled_back
        self.rng = random.Random(args.seed)
        self.ops = args.ops.split(",")
        self.order = Order
        self.got = 0
        self.errors: dict[str, int] = {}

    def take(self) -> list[int]:
        from django_segment_seq import next_value, next_values

        op = self.rng.choice(self.ops)
        if op == "value":
            return [next_value(self.args.name)]
        if op == "values":
            return list(next_values(self.args.name, self.rng.randint(1, self.args.max_batch)))
        if op == "save":
            return [self.order.objects.create().order_no]
        raise SystemExit(f"unknown op {op!r}")

    def step(self) -> None:
        if self.args.rollback_rate > 0:
            self.in_transaction()
        else:
            self.write(self.out, self.take())

    def in_transaction(self) -> None:
        from django.db import transaction

        taken: list[int] = []
        try:
            with transaction.atomic():
                for _ in range(self.rng.randint(1, 5)):
                    taken += self.take()
                if self.rng.random() < self.args.rollback_rate:
                    raise Rollback
        except Rollback:
            self.write(self.rolled_back, taken, counted=False)
            return
        self.write(self.out, taken)

    def write(self, fh: IO[str], numbers: list[int], counted: bool = True) -> None:
        fh.write("".join(f"{n}\n" for n in numbers))
        fh.flush()
        if counted:
            self.got += len(numbers)

    def run(self) -> None:
        failing_since: float | None = None
        while self.got < self.args.count:
            try:
                self.step()
                failing_since = None
            except Exception as exc:
                if not self.retryable(exc):
                    raise
                self.errors[type(exc).__name__] = self.errors.get(type(exc).__name__, 0) + 1
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since > self.args.give_up_after:
                    raise
                self.recover()

    @staticmethod
    def retryable(exc: Exception) -> bool:
        from django.db import InterfaceError, OperationalError

        from django_segment_seq import SequenceUnavailable

        return isinstance(exc, (OperationalError, InterfaceError, SequenceUnavailable))

    def recover(self) -> None:
        """What an application does after losing its connection: drop it, wait a little, try again."""
        from django.db import connections

        with contextlib.suppress(Exception):  # closing a dead connection may fail; a new one is opened next
            connections.close_all()
        time.sleep(self.rng.uniform(0.01, 0.1))

    def figures(self) -> dict[str, object]:
        from django_segment_seq import sequence_stats

        totals = {"ranges_fetched": 0, "retries": 0, "failures": 0, "fetched_in_caller_transaction": 0}
        for stats in sequence_stats().values():
            for key in totals:
                totals[key] += getattr(stats, key)
        return {"numbers": self.got, "errors": self.errors, **totals}


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    args = parse(argv)
    with open(args.out, "a", encoding="ascii") as out, open(args.out + ".rolledback", "a", encoding="ascii") as rb:
        worker = Worker(args, out, rb)
        worker.run()
    with open(args.out + ".json", "w", encoding="ascii") as fh:
        json.dump(worker.figures(), fh)


def read_numbers(path: str) -> list[int]:
    """Every complete line of a worker's file; an unfinished last line (a process killed mid-write) is dropped."""
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read()
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    return [int(line) for line in lines[:-1] if line]


if __name__ == "__main__":
    main(sys.argv[1:])
