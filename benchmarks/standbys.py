"""What the standby check (STANDBYS) costs: ranges a second from a PostgreSQL primary whose standby must confirm its
writes, against the same primary unwatched (STANDBYS 0).

    python benchmarks/standbys.py [--seconds 3] [--rounds 3] [--json PATH]      (as root: network namespaces)

A primary and its streaming standby run in network namespaces of their own (tests/support/netns.py), one process
in a third takes numbers of a row with a step of 1, no prefetch and no adaptive step, so every number is a range:
the worst case for a check made once per range. Then, with the defaults (prefetch, adaptive ranges), how many
numbers a second one process gets either way. The rounds alternate, so the machine's load weighs on both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import netns  # noqa: E402 - after the path, as the other benchmarks import their helpers
from tests.support.partition_pg import PORT, NamespacedPostgres  # noqa: E402

DATABASE = "standbys"
WORKER = """
import json, sys, time
from tests.support.failover_worker import configure_django
hosts, ports, seconds, segment_seq = sys.argv[1], sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4])
configure_django({"ENGINE": "django.db.backends.postgresql", "HOST": hosts, "PORT": ports, "USER": "postgres",
                  "NAME": sys.argv[5], "OPTIONS": {"target_session_attrs": "read-write"}}, segment_seq)
from django_segment_seq import next_value
from django_segment_seq.models import Sequence
Sequence.objects.get_or_create(name="bench", defaults={"step": 1})
next_value("bench")
count, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    next_value("bench"); count += 1
print(json.dumps({"per_second": count / seconds}))
"""


def measure(node: netns.Node, hosts: str, seconds: float, segment_seq: dict[str, object]) -> float:
    done = subprocess.run(
        node.command([sys.executable, "-c", WORKER, hosts, ",".join([str(PORT)] * len(hosts.split(","))),
                      str(seconds), json.dumps(segment_seq), DATABASE]),
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120 + seconds,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return float(json.loads(done.stdout.splitlines()[-1])["per_second"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    problem = netns.missing()
    if problem:
        raise SystemExit(f"cannot make network namespaces: {problem}")
    netns.clean_stale()
    network = netns.Network()
    folder = Path(tempfile.mkdtemp(prefix="segseq-bench-standbys-"))
    os.chmod(folder, 0o755)
    try:
        primary = NamespacedPostgres(network.node("primary"), folder / "primary")
        primary.initdb()
        primary.start()
        standby = NamespacedPostgres(network.node("standby"), folder / "standby")
        standby.base_backup(primary)
        standby.start()
        primary.wait_streaming()
        primary.execute(f"CREATE DATABASE {DATABASE}")
        app = network.node("app")
        subprocess.run(
            app.command([sys.executable, "-m", "tests.support.partition_worker", "migrate", "postgresql",
                         primary.node.address, str(PORT), DATABASE, "-", "-", "{}"]),
            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        hosts = f"{primary.node.address},{standby.node.address}"
        results = run_rounds(app, hosts, args.seconds, args.rounds)
    finally:
        network.stop()
    report(results, args.json)


def run_rounds(app: netns.Node, hosts: str, seconds: float, rounds: int) -> dict[str, list[float]]:
    every_number_a_range = {"PREFETCH": False, "ADAPTIVE_STEP": False}
    cases = {
        "ranges/s, checked": (every_number_a_range, {}),
        "ranges/s, STANDBYS 0": (every_number_a_range, {"STANDBYS": {"default": 0}}),
        "numbers/s with the defaults, checked": ({}, {}),
        "numbers/s with the defaults, STANDBYS 0": ({}, {"STANDBYS": {"default": 0}}),
    }
    results: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (base, extra) in cases.items():
            results[name].append(measure(app, hosts, seconds, {**base, **extra}))
            time.sleep(0.2)
    return results


def report(results: dict[str, list[float]], path: str | None) -> None:
    medians = {name: statistics.median(values) for name, values in results.items()}
    for name, median in medians.items():
        print(f"{name:45} {median:12,.0f}   ({', '.join(f'{v:,.0f}' for v in results[name])})")
    checked, unchecked = medians["ranges/s, checked"], medians["ranges/s, STANDBYS 0"]
    print(f"the check's cost per range: {(1 / checked - 1 / unchecked) * 1e3:.3f} ms")
    if path:
        Path(path).write_text(json.dumps({"medians": medians, "runs": results}, indent=2))


if __name__ == "__main__":
    main()
