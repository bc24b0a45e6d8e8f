"""Run the test suite once per database backend: SQLite, MariaDB and PostgreSQL.

Under CI=true a backend that cannot be reached fails the run; elsewhere it is skipped, and said so.
Arguments are passed to pytest. SEGMENT_SEQ_BACKENDS=sqlite,postgres picks backends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ["sqlite", "mariadb", "postgres"]

# How to start a stopped local server, as root, on the Debian machines this project runs on.
START_COMMANDS = {
    "mariadb": "start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd",
    "postgres": "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
}


def reachable(backend: str) -> str | None:
    """None when the backend answers, else why not."""
    try:
        if backend == "mariadb":
            import MySQLdb

            MySQLdb.connect(host="127.0.0.1", port=3306, user="root", password="", connect_timeout=3).close()
        elif backend == "postgres":
            import psycopg

            psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", connect_timeout=3).close()
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable", reported verbatim
        return f"{type(exc).__name__}: {exc}".strip()
    return None


def ensure_running(backend: str) -> str | None:
    problem = reachable(backend)
    if problem is None or backend not in START_COMMANDS or os.geteuid() != 0:
        return problem
    binary = START_COMMANDS[backend].split()[0]
    if shutil.which(binary) is None:
        return problem
    print(f"==> {backend} is not answering ({problem}); starting it", flush=True)
    subprocess.run(START_COMMANDS[backend], shell=True, check=False)
    for _ in range(30):
        time.sleep(1)
        problem = reachable(backend)
        if problem is None:
            return None
    return problem


def main(pytest_args: list[str]) -> int:
    in_ci = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
    chosen = [b for b in os.environ.get("SEGMENT_SEQ_BACKENDS", ",".join(BACKENDS)).split(",") if b]
    results: dict[str, str] = {}
    failed = False
    for backend in chosen:
        problem = ensure_running(backend)
        if problem is not None:
            if in_ci:
                results[backend] = f"FAILED: not reachable ({problem})"
                failed = True
            else:
                results[backend] = f"SKIPPED: not reachable ({problem})"
            print(f"==> {backend}: {results[backend]}", flush=True)
            continue
        print(f"==> tests on {backend}", flush=True)
        env = dict(os.environ, SEGMENT_SEQ_TEST_DB=backend)
        code = subprocess.call([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env)
        results[backend] = "passed" if code == 0 else f"FAILED (pytest exit {code})"
        failed |= code != 0
    print("\n==> backends:")
    for backend in chosen:
        print(f"    {backend:9} {results[backend]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
