"""The ID service's fast path beside Django's view and the server's own limit, side by side on one server and one load
generator: requests and numbers a second, p50/p99 latency, blocks of 1 and 100.

    ./dev bench service-paths --db sqlite|mariadb|postgres [--server granian|uvicorn] [--cycles 5] [--seconds 2]
    python benchmarks/service_paths.py --db ... [--smoke] [--json PATH]

Several ASGI applications, each on a server of its own of the same kind (granian when it is installed, as in the
earlier figures; else, or with `--server uvicorn`, uvicorn with httptools and uvloop when they are installed: which
runs the fast path faster depends on the machine, docs/id-service.md; 2 worker processes each by default) and the
same cores:

- **bare**: benchmarks/bare_asgi.py, which reads the request and answers a constant JSON body (the server's limit);
- **fast path**: the service project behind django_segment_seq.service.asgi.fast_ids();
- **fast, rated**: the same for a client with a rate (`--rate 1000000/s`, never reached, counted on every request
  in the project's cache: the test project's file cache, shared by the workers);
- **rated, memory**: the same with the `default` cache in each process's memory (benchmarks/fast_memory_asgi.py),
  so the rate is counted on the event loop, per worker process;
- **fast, no log**: the same with the service's INFO log line off, to show what that line costs;
- **rated, no log**: the rated client of "fast, rated" with the log line off (a project whose logging writes no
  INFO line, as Django's default configuration does not);
- **Django view**: the same project through Django's request cycle (the async views of async_urls).

They are started together, warmed up for a second, then loaded in turn by wrk (Debian's `wrk`: one thread, 16
keep-alive connections) sending `POST ids/<name>/next` with a token: `--cycles` runs of `--seconds` each per
application and block size, the applications taking turns, so a busy moment of a shared machine costs every
application one run alike. The table gives each one's medians; the ratios are the medians of each cycle's. Every
block the service handed out is read back from its log line ("ID service: bench took 1 of ...: 5-5") and checked
for repeats. Writes benchmarks/results-service-paths-DB.json and prints a table.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.service import drop, scratch_env  # noqa: E402 - after the path that makes it importable
from tests.support.servers import free_port  # noqa: E402

APPLICATIONS = {
    "bare": "benchmarks.bare_asgi:application",
    "fast path": "tests.service_project.fast_asgi:application",
    "fast, rated": "tests.service_project.fast_asgi:application",
    "rated, memory": "benchmarks.fast_memory_asgi:application",
    "fast, no log": "benchmarks.fast_quiet_asgi:application",
    "rated, no log": "benchmarks.fast_quiet_asgi:application",
    "Django view": "tests.service_project.asgi:application",
}
BLOCKS = (1, 100)
WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
"""
# In a smoke run, what the answers that were not 200 were: their statuses and the first one's body (wrk counts them
# only). Left out of the measured runs: a Lua call per response slows wrk itself.
WRK_STATUSES = """
statuses = {}
local threads = {}
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body)
  if status ~= 200 then
    statuses[status] = (statuses[status] or 0) + 1
    if first_refused == nil then first_refused = body end
  end
end
function done(summary, latency, requests)
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do io.write(string.format("status %d: %d\\n", status, count)) end
    local body = thread:get("first_refused")
    if body ~= nil then io.write("first refused: " .. body .. "\\n") end
  end
end
"""
STATUS_LINE = re.compile(r"^status (\d+): (\d+)$", re.MULTILINE)
LOG_LINE = re.compile(r"took (\d+) of (\S+): (\d+)-(\d+)")


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def server_command(server: str, application: str, port: int, workers: int) -> list[str]:
    """The server's command line: uvicorn with httptools and uvloop where installed, or granian."""
    if server == "granian":
        return [sys.executable, "-m", "granian", "--interface", "asgi", "--host", "127.0.0.1", "--port", str(port),
                "--workers", str(workers), "--log-level", "warning", application]  # fmt: skip
    command = [sys.executable, "-m", "uvicorn", application, "--host", "127.0.0.1", "--port", str(port),
               "--workers", str(workers), "--log-level", "warning", "--no-access-log"]  # fmt: skip
    if installed("httptools"):
        command += ["--http", "httptools"]
    if installed("uvloop"):
        command += ["--loop", "uvloop"]
    return command


def start(command: list[str], env: dict[str, str], log: Path, port: int) -> subprocess.Popen[bytes]:
    """Start a server in a process group of its own; return once it answers on its port (any status)."""
    with log.open("ab") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/ids/health", timeout=2).close()
            return proc
        except urllib.error.HTTPError:
            return proc
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"the server did not answer in 60 s: {log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


def milliseconds(out: str, percentile: int) -> float | None:
    """A percentile of wrk's latency distribution ("812.00us", "1.23ms", "1.05s", "1.02m") in milliseconds."""
    found = re.search(rf"\n\s*{percentile}%\s+([\d.]+)(us|ms|s|m)\b", out)
    if found is None:  # no request finished in time
        return None
    return float(found[1]) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[found[2]]


def wrk(url: str, token: str, count: int, seconds: float, connections: int, script: Path) -> dict[str, Any]:
    """One wrk run of `seconds`: requests a second, p50 and p99, and the answers that were not 200."""
    env = dict(os.environ, BENCH_TOKEN=token, BENCH_BODY=json.dumps({"count": count}))
    command = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", "-s", str(script), url]
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    requests = int(re.search(r"(\d+) requests in", out)[1])  # type: ignore[index]
    not_ok = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    refused = re.search(r"^first refused: (.*)$", out, re.MULTILINE)
    return {
        "statuses": {status: int(count) for status, count in STATUS_LINE.findall(out)},
        "first_refused": refused[1] if refused else None,
        "requests": requests,
        "requests_per_s": round(rate),
        "numbers_per_s": round(rate * count),
        "p50_ms": milliseconds(out, 50),
        "p99_ms": milliseconds(out, 99),
        "not_200": int(not_ok[1]) if not_ok else 0,
        "socket_errors": sum(int(n) for n in errors.groups()) if errors else 0,
    }


def repeats(log: Path) -> tuple[int, int]:
    """The blocks the service logged, and how many overlap another block of their sequence (a repeat)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for match in LOG_LINE.finditer(log.read_text(errors="replace")):
        spans.setdefault(match[2], []).append((int(match[3]), int(match[4])))
    overlaps = blocks = 0
    for found in spans.values():
        reached = -1
        for first, last in sorted(found):
            overlaps += first <= reached
            reached = max(reached, last)
        blocks += len(found)
    return blocks, overlaps


def token_of(label: str, env: dict[str, str]) -> str:
    """The token an application is loaded with: the rated client's for "fast, rated", else the client's without."""
    return (
        env["BENCH_RATED_TOKEN"] if label in ("fast, rated", "rated, memory", "rated, no log") else env["BENCH_TOKEN"]
    )


def first_request(url: str, token: str) -> None:
    """One request alone before the load, so the row exists before many callers ask for it at once (a client's
    cap of rows to create is not what is measured)."""
    request = urllib.request.Request(
        url, b'{"count": 1}', {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    )
    with contextlib.suppress(urllib.error.HTTPError):
        urllib.request.urlopen(request, timeout=30).close()


def start_all(args: argparse.Namespace, env: dict[str, str], folder: Path) -> dict[str, tuple[Any, str, Path]]:
    """Every application on a server of its own, started at once and warmed up (ranges, tokens, caches)."""
    started: dict[str, tuple[Any, str, Path]] = {}
    try:
        for label, application in APPLICATIONS.items():
            port, log = free_port(), folder / f"{label.replace(' ', '-').replace(',', '')}.log"
            proc = start(server_command(args.server, application, port, args.workers), env, log, port)
            url = f"http://127.0.0.1:{port}/ids/bench-{label.replace(' ', '-').replace(',', '')}/next"
            started[label] = (proc, url, log)
            first_request(url, token_of(label, env))
            wrk(url, token_of(label, env), 1, 1, args.connections, folder / "post.lua")
    except BaseException:
        for proc, _url, _log in started.values():
            stop(proc)
        raise
    return started


def samples(args: argparse.Namespace, env: dict[str, str], folder: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """wrk runs taking turns between the applications (the order turning each cycle), and the logs' repeats.

    The idle servers wait while one is loaded; so a busy moment of a shared machine costs one cycle of
    every application alike rather than all the runs of one.
    """
    started = start_all(args, env, folder)
    runs = []
    try:
        for count in BLOCKS:
            for cycle in range(args.cycles):
                labels = list(APPLICATIONS)
                for label in labels[cycle % len(labels) :] + labels[: cycle % len(labels)]:
                    run = wrk(started[label][1], token_of(label, env), count, args.seconds, args.connections,
                              folder / "post.lua")  # fmt: skip
                    runs.append({"application": label, "count": count, "cycle": cycle, **run})
                    print(json.dumps(runs[-1]), flush=True)
    finally:
        for proc, _url, _log in started.values():
            stop(proc)
    return runs, {label: repeats(log) for label, (_proc, _url, log) in started.items()}


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def summary(runs: list[dict[str, Any]], logged: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per application and count the median of its runs; per count the median of each cycle's ratios."""
    rows, found = [], []
    for count in BLOCKS:
        for label in APPLICATIONS:
            mine = [run for run in runs if run["application"] == label and run["count"] == count]
            rate = median([run["requests_per_s"] for run in mine])
            rows.append({
                "application": label,
                "count": count,
                "runs": len(mine),
                "requests_per_s": round(rate),
                "requests_per_s_range": [min(run["requests_per_s"] for run in mine),
                                         max(run["requests_per_s"] for run in mine)],
                "numbers_per_s": None if label == "bare" else round(rate * count),
                "p50_ms": round(median([run["p50_ms"] for run in mine if run["p50_ms"] is not None]), 2),
                "p99_ms": round(median([run["p99_ms"] for run in mine if run["p99_ms"] is not None]), 2),
                "not_200": sum(run["not_200"] for run in mine),
                "statuses": {status: sum(run["statuses"].get(status, 0) for run in mine)
                             for status in sorted({status for run in mine for status in run["statuses"]})},
                "first_refused": next((run["first_refused"] for run in mine if run["first_refused"]), None),
                "socket_errors": sum(run["socket_errors"] for run in mine),
                "blocks_logged": logged[label][0],
                "overlapping_blocks": logged[label][1],
            })  # fmt: skip
        by_cycle: dict[int, dict[str, int]] = {}
        for run in runs:
            if run["count"] == count:
                by_cycle.setdefault(run["cycle"], {})[run["application"]] = run["requests_per_s"]
        cycles = list(by_cycle.values())
        found.append({
            "count": count,
            "fast_over_bare": round(median([c["fast path"] / c["bare"] for c in cycles]), 2),
            "fast_no_log_over_bare": round(median([c["fast, no log"] / c["bare"] for c in cycles]), 2),
            "fast_over_django": round(median([c["fast path"] / c["Django view"] for c in cycles]), 1),
            "fast_rated_over_bare": round(median([c["fast, rated"] / c["bare"] for c in cycles]), 2),
            "fast_rated_over_django": round(median([c["fast, rated"] / c["Django view"] for c in cycles]), 1),
            "rated_memory_over_bare": round(median([c["rated, memory"] / c["bare"] for c in cycles]), 2),
            "rated_memory_over_django": round(median([c["rated, memory"] / c["Django view"] for c in cycles]), 1),
            "rated_no_log_over_bare": round(median([c["rated, no log"] / c["bare"] for c in cycles]), 2),
            "rated_no_log_over_django": round(median([c["rated, no log"] / c["Django view"] for c in cycles]), 1),
            "fast_over_bare_by_cycle": [round(c["fast path"] / c["bare"], 2) for c in cycles],
        })  # fmt: skip
    return rows, found


def print_table(report: dict[str, Any]) -> None:
    print(f"\n{report['server']}, {report['connections']} connections, {report['cpus']} cores, {report['db']}, "
          f"medians of {report['cycles']} runs of {report['seconds']} s")  # fmt: skip
    columns = ("req/s", 8), ("numbers/s", 10), ("p50 ms", 7), ("p99 ms", 7)
    head = " ".join(f"{name:>{width}}" for name, width in columns)
    print(f"{'application':12} {'count':>5} {head} repeats")
    print(f"load average before and after: {report['load_average_before_after']}")
    for row in report["rows"]:
        numbers = "-" if row["numbers_per_s"] is None else f"{row['numbers_per_s']:,}"
        print(
            f"{row['application']:12} {row['count']:>5} {row['requests_per_s']:>8,} "
            f"{numbers:>10} {row['p50_ms']:>7.2f} {row['p99_ms']:>7.2f} "
            f"{row['overlapping_blocks'] if row['blocks_logged'] else '-'}"
        )
    for ratio in report["ratios"]:
        print(
            f"count {ratio['count']}: fast path = {ratio['fast_over_bare']} x bare "
            f"({ratio['fast_no_log_over_bare']} without the log line), {ratio['fast_over_django']} x Django's view; "
            f"with a rate {ratio['fast_rated_over_bare']} x bare, {ratio['fast_rated_over_django']} x Django's view "
            f"(in memory {ratio['rated_memory_over_bare']} x bare, {ratio['rated_memory_over_django']} x; "
            f"without the log line {ratio['rated_no_log_over_bare']} x bare, {ratio['rated_no_log_over_django']} x); "
            f"by cycle {ratio['fast_over_bare_by_cycle']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "mariadb", "postgres"], required=True)
    parser.add_argument(
        "--server", choices=["granian", "uvicorn"], default="granian" if installed("granian") else "uvicorn"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=2.0, help="of each wrk run")
    parser.add_argument("--cycles", type=int, default=5, help="runs of each application per block size")
    parser.add_argument("--smoke", action="store_true", help="one cycle of one-second runs")
    parser.add_argument("--json", help="default benchmarks/results-service-paths-DB.json")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        parser.error("wrk is needed (Debian: apt-get install wrk; ./dev installs it)")
    if args.smoke:
        args.seconds, args.cycles = 1.0, 1
    folder = Path(tempfile.mkdtemp(prefix="bench_service_paths"))
    (folder / "post.lua").write_text(WRK_SCRIPT + (WRK_STATUSES if args.smoke else ""))
    env = scratch_env(args.db)
    load_before = os.getloadavg()
    try:
        runs, logged = samples(args, env, folder)
    finally:
        drop(args.db, env)
        shutil.rmtree(folder, ignore_errors=True)
    rows, found = summary(runs, logged)
    report = {
        "db": args.db,
        "smoke": args.smoke,
        "cpus": os.cpu_count(),
        "server": " ".join(server_command(args.server, "APP", 0, args.workers)[2:]),
        "connections": args.connections,
        "seconds": args.seconds,
        "cycles": args.cycles,
        "load_average_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)],
        "rows": rows,
        "ratios": found,
        "runs": runs,
    }
    path = Path(args.json or ROOT / "benchmarks" / f"results-service-paths-{args.db}.json")
    path.write_text(json.dumps(report, indent=1) + "\n")
    print_table(report)


if __name__ == "__main__":
    main()
