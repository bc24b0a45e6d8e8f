"""The `demo` command: several processes create numbered orders and receipts at once; each number is checked unique."""

from __future__ import annotations

import multiprocessing
import queue
import time
from argparse import ArgumentParser
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, connections
from django.db.models import Count, Model

from django_segment_seq.models import Sequence
from shop.models import Order, Receipt
from shop.workers import Batch, run_worker

SHOWN = 4  # numbers shown per worker and kind
WAIT = 300  # seconds the parent waits for the workers before giving up


def positive(text: str) -> int:
    """argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def preview(numbers: list[int]) -> str:
    """The first few numbers, then how many more there are."""
    shown = ", ".join(map(str, numbers[:SHOWN]))
    return f"{shown}, … (+{len(numbers) - SHOWN})" if len(numbers) > SHOWN else shown


def duplicated(model: type[Model], field: str) -> dict[int, int]:
    """Every value of `field` held by more than one row of the whole table, with its row count."""
    rows = model._default_manager.values(field).annotate(rows=Count("*")).filter(rows__gt=1).order_by(field)
    return {row[field]: row["rows"] for row in rows}


class Command(BaseCommand):
    help = "Create orders and receipts from several processes at once, then check that every number is unique."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--processes", type=positive, default=4, help="worker processes (default 4)")
        parser.add_argument("--orders", type=positive, default=25, help="orders per process (default 25)")

    def handle(self, *args: Any, processes: int, orders: int, verbosity: int, **options: Any) -> None:
        self.verbosity = verbosity
        for alias in connections:
            call_command("migrate", database=alias, verbosity=0, interactive=False)
        connections.close_all()  # the workers open their own; the parent reconnects for the report
        started = time.monotonic()
        batches = self.run_workers(processes, orders)
        elapsed = time.monotonic() - started

        db = connection.settings_dict
        self.stdout.write(
            f"{processes} processes × {orders} orders, each with a receipt, on {connection.vendor} "  # noqa: RUF001 - a times sign
            f"({db['NAME']}), in {elapsed:.1f} s:"
        )
        for batch in batches:
            label = f"worker {batch.worker} (pid {batch.pid})"
            self.stdout.write(f"  {label}  orders   {preview(batch.order_nos)}")
            self.stdout.write(
                f"  {'':{len(label)}}  receipts {preview(batch.receipt_ids)}"
                f"   [ranges fetched: {batch.ranges_fetched}, retries: {batch.retries}]"
            )
        self.report_totals(batches)
        self.stdout.write("Sequences:")
        for name, value, step in Sequence.objects.values_list("name", "value", "step"):
            self.stdout.write(f"  {name:<10} value {value:<8} step {step}")
        connection.close()

    def run_workers(self, processes: int, orders: int) -> list[Batch]:
        """Spawn the workers, let them start writing together, and collect one Batch from each."""
        context = multiprocessing.get_context("spawn")
        start = context.Barrier(processes)
        results = context.Queue()
        workers = [
            context.Process(target=run_worker, args=(i + 1, orders, start, results), name=f"demo-worker-{i + 1}")
            for i in range(processes)
        ]
        for worker in workers:
            worker.start()
        batches: list[Batch] = []
        deadline = time.monotonic() + WAIT
        try:
            while len(batches) < processes:
                try:
                    batches.append(results.get(timeout=1))
                except queue.Empty:
                    exited = not any(worker.is_alive() for worker in workers)
                    if (exited and results.empty()) or time.monotonic() > deadline:
                        break
        finally:
            for worker in workers:
                if len(batches) < processes:
                    worker.terminate()
                worker.join()
        if len(batches) < processes:
            codes = ", ".join(f"{worker.name}: {worker.exitcode}" for worker in workers)
            raise CommandError(f"Only {len(batches)} of {processes} workers reported back (exit codes: {codes}).")
        failed = [batch for batch in batches if batch.error]
        if failed:
            for batch in failed:
                error = batch.error if self.verbosity > 1 else batch.error.strip().splitlines()[-1]
                self.stderr.write(f"worker {batch.worker} (pid {batch.pid}) failed: {error}")
            raise CommandError(f"{len(failed)} of {processes} workers failed (run with -v 2 for tracebacks).")
        return sorted(batches, key=lambda batch: batch.worker)

    def report_totals(self, batches: list[Batch]) -> None:
        """Print this run's and the table's totals; raise CommandError if any number occurs twice."""
        run_orders = [n for batch in batches for n in batch.order_nos]
        run_receipts = [n for batch in batches for n in batch.receipt_ids]
        total_orders, total_receipts = Order.objects.count(), Receipt.objects.count()
        self.stdout.write(
            f"This run: {len(run_orders)} orders and {len(run_receipts)} receipts; "
            f"all runs: {total_orders} orders and {total_receipts} receipts."
        )
        problems = []
        for label, numbers, table in [
            ("order number", run_orders, duplicated(Order, "order_no")),
            ("receipt id", run_receipts, duplicated(Receipt, "id")),
        ]:
            in_run = sorted({n for n in numbers if numbers.count(n) > 1})
            if in_run:
                problems.append(f"{label}s handed out twice in this run: {in_run}")
            if table:
                problems.append(f"{label}s on several rows: " + ", ".join(f"{n} ×{c}" for n, c in table.items()))  # noqa: RUF001 - a times sign
        if problems:
            raise CommandError("Duplicates found!\n" + "\n".join(problems))
        self.stdout.write(
            self.style.SUCCESS(f"OK: all {total_orders} order numbers and all {total_receipts} receipt ids are unique.")
        )
