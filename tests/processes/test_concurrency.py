"""Many threads and processes at once: every number handed out is collected and checked for repeats."""

import os
import threading

import pytest
from django.db import connections

from django_segment_seq import next_value, next_values
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.testapp.models import Order

pytestmark = pytest.mark.django_db(transaction=True)


def test_threads_get_distinct_numbers():
    Sequence.objects.create(name="t", step=50)
    got: list[list[int]] = [[] for _ in range(8)]
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        barrier.wait()
        for _ in range(2000):
            got[i].append(next_value("t"))
        got[i].extend(next_values("t", 120))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_unique([n for part in got for n in part], 8 * 2120)
    for part in got:
        assert part[:2000] == sorted(part[:2000])


def test_threads_saving_models_get_distinct_numbers():
    def work(out: list[int]) -> None:
        try:
            out.extend(Order.objects.create().order_no for _ in range(200))
        finally:
            connections.close_all()

    outs: list[list[int]] = [[] for _ in range(4)]
    threads = [threading.Thread(target=work, args=(out,)) for out in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_unique([n for out in outs for n in out], 800)
    assert_unique(Order.objects.values_list("order_no", flat=True), 800)


@pytest.mark.parametrize("mode", ["value", "values", "mixed"])
def test_processes_get_distinct_numbers(run_workers, mode):
    """At least 4 processes x 5,000 numbers on one sequence, with a small step so ranges are contended."""
    Sequence.objects.create(name="p", step=100)
    results = run_workers([(mode, "p", 5000)] * 4)
    numbers = assert_unique(n for part in results for n in part)
    assert len(numbers) >= 20_000
    assert Sequence.objects.get(name="p").value >= max(numbers)


def test_processes_creating_the_row_at_once(run_workers):
    """No row yet: every process tries to create it on first use; exactly one row results."""
    results = run_workers([("value", "born-racing", 500)] * 4)
    assert_unique((n for part in results for n in part), 2000)
    assert Sequence.objects.filter(name="born-racing").count() == 1


def test_processes_saving_models(run_workers):
    Sequence.objects.create(name="order", step=20)  # 20 range fetches per process, racing
    results = run_workers([("save", "order", 400)] * 4)
    assert_unique((n for part in results for n in part), 1600)
    assert_unique(Order.objects.values_list("order_no", flat=True), 1600)


def test_fork_after_caching_never_repeats_parent_numbers():
    Sequence.objects.create(name="f", step=1000)
    parent = [next_value("f") for _ in range(10)]  # the parent now caches 11..1000
    children = []
    for _ in range(3):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            os.close(read_end)
            try:
                numbers = [next_value("f") for _ in range(50)]
                os.write(write_end, ",".join(map(str, numbers)).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as fh:
            children.append([int(n) for n in fh.read().split(",") if n])
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    parent += [next_value("f") for _ in range(10)]
    assert parent == list(range(1, 21))
    for numbers in children:
        assert len(numbers) == 50 and min(numbers) > 1000
    assert_unique(parent + [n for c in children for n in c], 20 + 150)
