"""The partition tests' application processes, seen from the test: started inside a namespace, waited for, stopped
within a bound (a hang fails the test), and their numbers checked for repeats."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.netns import Node
from tests.support.partition_worker import ROWS
from tests.support.servers import ROOT

READY_TIMEOUT = 120
STOP_TIMEOUT = 90


def start_worker(
    node: Node, folder: Path, index: int, mode: str, target: tuple[str, str, str, str], segment_seq: dict[str, object],
    marks: tuple[str, ...] = (), rate: float = 0,
) -> subprocess.Popen[str]:  # fmt: skip
    """tests/support/partition_worker.py in `node`'s namespace; `target` is (engine, hosts, ports, database), its
    output goes to folder/worker<index>.json, and it starts on folder/go and stops on folder/stop."""
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        SEGMENT_SEQ_TEST_GO=str(folder / "go"),
        SEGMENT_SEQ_TEST_MARK=os.pathsep.join(str(folder / mark) for mark in marks),
        SEGMENT_SEQ_TEST_RATE=str(rate or ""),
    )
    command = [
        sys.executable, "-m", "tests.support.partition_worker", mode, *target,
        str(folder / f"worker{index}.json"), str(folder / "stop"), json.dumps(segment_seq),
    ]  # fmt: skip
    return subprocess.Popen(node.command(command), cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


def run_to_end(proc: subprocess.Popen[str], what: str, timeout: float = 180) -> None:
    """Wait for a one-off worker (a migration); a failure or a hang fails the test."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"{what} hung")
    assert proc.returncode == 0, f"{what} failed: {err[-3000:]}"


def wait_ready(workers: list[subprocess.Popen[str]], folder: Path, stem: str = "worker") -> None:
    """Until every worker has touched its ready file, folder/<stem><index>.json.ready: set up and waiting for its
    go, or taking numbers."""
    deadline = time.monotonic() + READY_TIMEOUT
    for index, proc in enumerate(workers):
        while not (folder / f"{stem}{index}.json.ready").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                error = proc.stderr.read()[-3000:] if proc.stderr and proc.poll() is not None else ""
                pytest.fail(f"worker {index} did not get ready in {READY_TIMEOUT} s: {error}")
            time.sleep(0.02)


def finish(workers: list[subprocess.Popen[str]], folder: Path) -> list[dict]:
    """Tell the workers to stop and wait for each within STOP_TIMEOUT; what each wrote."""
    (folder / "stop").touch()
    for proc in workers:
        try:
            _, err = proc.communicate(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("a worker hung after the partition")
        assert proc.returncode == 0, err[-3000:]
    return [json.loads((folder / f"worker{index}.json").read_text()) for index in range(len(workers))]


def repeats_in(numbers: list[int]) -> int:
    """How many numbers came more than once (a number handed out three times counts two)."""
    return sum(times - 1 for times in collections.Counter(numbers).values() if times > 1)


def numbers_of(runs: list[dict]) -> dict[str, list[int]]:
    """Every number the workers got, per row, all workers together: what is checked for repeats."""
    return {row: [n for run in runs for n in run["numbers"][row]] for row in ROWS}


def errors_of(runs: list[dict]) -> dict[str, int]:
    counted: collections.Counter[str] = collections.Counter()
    for run in runs:
        counted.update(run["errors"])
    return dict(counted)
