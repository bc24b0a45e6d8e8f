"""The version matrix, the docs build, the package check and the linters, each in a virtualenv of its own.

`./dev test` runs the sessions in order and sums the cells' counts; `nox -l` lists them. The matrix is
defined once, in CELLS: the README's support table and tests/support/run_backends.py read it from here.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
nox.options.default_venv_backend = "uv|venv"  # uv when installed (it is, with nox[uv]): much faster installs
# uv writes no bytecode unless asked (pip does). Where PYTHONDONTWRITEBYTECODE is set, as on the CI
# machine, nothing writes it later either, and every worker process the tests start would compile
# Django from source again: about 0.7 s of CPU each, which made a whole run several minutes longer.
os.environ.setdefault("UV_COMPILE_BYTECODE", "1")
nox.options.reuse_venv = "yes"
# A missing interpreter skips its sessions, except under CI=true (nox's own default), where it fails them.


@dataclass(frozen=True)
class Cell:
    """One Django release on one Python, run on every backend: the whole suite, or the core files only."""

    django: str
    python: str
    suite: str  # "full", "core", "redis" (tests/redis only), or "postgres" (the PostgreSQL paths, POSTGRES_PATHS)
    coverage: bool = False
    redis: str = ""  # a redis-py release pinned over the newest one the test extra installs
    backends: tuple[str, ...] = ()  # the backends it runs on; () for all
    driver: str = ""  # "psycopg2": psycopg2 instead of psycopg 3 (Django takes psycopg 3 whenever it is importable)

    @property
    def id(self) -> str:
        pinned = f"-redis{self.redis}" if self.redis else ""
        driver = f"-{self.driver}" if self.driver else ""
        return f"django{self.django}-py{self.python}{pinned}{driver}"


# The floor of the redis extra in pyproject.toml.
REDIS_OLDEST = "5.0.8"

# Upstream's supported releases (djangoproject.com/download): 6.1 and 6.0 need Python 3.12+, 5.2 is the LTS.
CELLS = [
    Cell(django="6.1", python="3.13", suite="full"),
    # The release between the LTS and the newest, each of which runs on every backend: its core suite on SQLite
    # only, so CI stays within its time on a slow 2-core machine (a 6.0-only difference is in Django, not a backend).
    Cell(django="6.0", python="3.12", suite="core", backends=("sqlite",)),
    Cell(django="5.2", python="3.11", suite="core", coverage=True),
    # The oldest redis-py the redis extra allows (the others get the newest): its RedisCluster re-sends commands
    # on its own. The Redis tier's tests only, on one backend: what differs is the client, not the table.
    Cell(django="5.2", python="3.11", suite="redis", redis=REDIS_OLDEST, backends=("sqlite",)),
    # psycopg2 (the psycopg2 extra), which Django 5.2 and 6.x still support: the PostgreSQL paths of the core suite.
    Cell(django="5.2", python="3.11", suite="postgres", driver="psycopg2", backends=("postgres",)),
]

# The psycopg2 extra in pyproject.toml: what a project on psycopg2 installs.
PSYCOPG2 = "psycopg2-binary>=2.9.9"
# The psycopg 3 distributions the test extra brings, taken out again in a psycopg2 cell.
PSYCOPG3 = ("psycopg", "psycopg-binary", "psycopg-pool")
# What a "postgres" cell runs: the tests of every part that talks to PostgreSQL through the driver (the caller's
# transaction and its row locks, private connections, bounded waits, give-back, the async API, the checks), worker
# processes included: 1.7 to 3.5 minutes on the 2-core machine.
POSTGRES_PATHS = (
    "tests/allocator",
    "tests/cache",
    "tests/db",
    "tests/test_async.py",
    "tests/test_checks.py",
    "tests/test_real_settings.py",
    "tests/processes/test_caller_row_locks.py",
    "tests/processes/test_give_back.py",
    "tests/processes/test_bounded_waits.py",
    "tests/service/test_lock_bounds.py",
    "tests/fields/test_one_rule.py",  # the shape record on a private connection, a missing table's SQLSTATE
)

# Left out of the core suite: the folders of tests that start many processes, kill them or restart servers, or
# start clusters of servers, and elsewhere every test that starts worker processes through a fixture (the
# "processes" mark).
NOT_CORE = ("tests/processes", "tests/clusters")


DOCS_REQUIREMENTS = ["mkdocs>=1.6,<2", "mkdocs-material>=9.6,<10"]
# pytest and pytest-django for the plugin's types (both ship them), types-tqdm for the command's progress bar.
# django-stubs is pinned to the release the code is known clean with; `lint` also runs mypy with the newest one.
PINNED_STUBS = "django-stubs[compatible-mypy]==6.1.2"
# The package with the extras whose libraries it imports, so mypy sees them.
LINTED_PACKAGE = ".[prometheus,check-digits,conceal,redis]"
LINT_REQUIREMENTS = [
    "ruff>=0.15",
    "mypy>=1.18",
    PINNED_STUBS,
    "import-linter>=2.17,<3",  # the release the contracts (exhaustive layers, acyclic_siblings) are checked with
    "dj-database-url>=2.1",
    "pytest>=8",
    "pytest-django>=4.8",
    "types-tqdm>=4.66",
    "django-sequences>=3.0",  # the plugin loads the test settings, which install it
]

# The extras whose libraries the package imports, and what a user type-checking it has: mypy with
# django-stubs, the plugin's pytest and pytest-django, and the progress bar's stubs.
TYPED_EXTRAS = "postgres,prometheus,check-digits,conceal,redis"
TYPING_REQUIREMENTS = ["mypy>=1.18", PINNED_STUBS, "pytest>=8", "pytest-django>=4.8", "types-tqdm>=4.66"]
TYPING_SETTINGS = """SECRET_KEY = "type checking only"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django_segment_seq",
    "django_segment_seq.service",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
"""


def django_requirement(release: str) -> str:
    major, minor = (int(part) for part in release.split("."))
    return f"Django>={major}.{minor},<{major}.{minor + 1}"


@nox.session
@nox.parametrize(
    ("python", "cell"),
    [nox.param(cell.python, cell, id=cell.id) for cell in CELLS],
)
def tests(session: nox.Session, cell: Cell) -> None:
    """The suite on SQLite, MariaDB and PostgreSQL with one Django release (pytest arguments after --).

    `./dev test` runs each backend as a job of its own (SEGMENT_SEQ_BACKENDS), with coverage data
    going to SEGMENT_SEQ_COVERAGE_DATA on a cell marked for it; then it runs this session once more
    with SEGMENT_SEQ_COVERAGE_REPORT set, which combines that data and checks the floor.
    """
    session.install("-e", ".[test,benchmark]", django_requirement(cell.django))  # benchmark: its smoke test
    if cell.redis:
        session.install(f"redis=={cell.redis}")
    if cell.driver == "psycopg2":
        uninstall(session, *PSYCOPG3)
        session.install(PSYCOPG2)
    # The project's own modules too (an editable install is not compiled): worker processes import them.
    session.run_install("python", "-m", "compileall", "-q", "django_segment_seq", "tests", "benchmarks")
    if os.environ.get("SEGMENT_SEQ_COVERAGE_REPORT"):
        report_coverage(session)
        return
    args = list(session.posargs)
    if cell.suite == "core":
        args = [*(f"--ignore={folder}" for folder in NOT_CORE), "-m", "not processes", *args]
    elif cell.suite == "redis":
        args = ["tests/redis", *args]
    elif cell.suite == "postgres":
        args = [*POSTGRES_PATHS, *args]
    env = {"SEGMENT_SEQ_CELL": cell.id}
    data = os.environ.get("SEGMENT_SEQ_COVERAGE_DATA")
    if cell.coverage and data:
        env["COVERAGE_FILE"] = str(Path(data) / ".coverage")
        session.run("python", "tests/support/run_backends.py", "--coverage", *args, env=env)
    else:
        session.run("python", "tests/support/run_backends.py", *args, env=env)


def uninstall(session: nox.Session, *distributions: str) -> None:
    """Take distributions out of the session's virtualenv, with uv when it made it, else with pip."""
    if session.venv_backend == "uv":
        python = str(Path(session.bin) / "python")
        session.run_install("uv", "pip", "uninstall", "--python", python, *distributions, external=True)
    else:
        session.run_install("python", "-m", "pip", "uninstall", "-y", "-q", *distributions)


def report_coverage(session: nox.Session) -> None:
    """Combine the coverage data of a cell's backends (worker processes included) and fail below the floor."""
    env = {"COVERAGE_FILE": str(ROOT / ".coverage-data" / ".coverage")}
    session.run("coverage", "combine", "--quiet", env=env)
    floor = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["coverage"]["report"]["fail_under"]
    total = session.run(
        "coverage", "report", "--format=total", "--precision=1", env=env, silent=True, success_codes=[0, 2]
    )
    session.log(f"branch coverage of django_segment_seq: {str(total).strip()}% (floor {floor}%)")
    if float(str(total)) < floor:
        session.error(
            "coverage below fail_under (pyproject.toml); see COVERAGE_FILE=.coverage-data/.coverage coverage report"
        )


@nox.session(python="3.13")
def docs(session: nox.Session) -> None:
    """The documentation site, built with warnings as errors."""
    session.install(*DOCS_REQUIREMENTS)
    site = tempfile.mkdtemp(prefix="segment-seq-site-")
    # NO_MKDOCS_2_WARNING: Material 9.7+ prints a notice of its end of life (May 2027) on every build.
    session.run("mkdocs", "build", "--strict", "--quiet", "--site-dir", site, env={"NO_MKDOCS_2_WARNING": "1"})
    shutil.rmtree(site)


@nox.session(python="3.13")
def package(session: nox.Session) -> None:
    """Build the wheel and sdist, check them, run the example project from the wheel in a clean virtualenv, and
    type-check the package installed there as a user would."""
    session.install("build>=1.2", "twine>=6.1")
    out = Path(tempfile.mkdtemp(prefix="segment-seq-dist-"))
    session.run("python", "-m", "build", "--outdir", str(out), silent=True)
    built = sorted(glob.glob(str(out / "*.whl")) + glob.glob(str(out / "*.tar.gz")))
    session.run("twine", "check", "--strict", *built)
    clean = out / "venv"
    python = str(clean / "bin" / "python")
    wheel = next(path for path in built if path.endswith(".whl"))
    uv = shutil.which("uv", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")

    def install(*requirements: str) -> None:
        if uv:
            session.run(uv, "pip", "install", "--quiet", "--python", python, *requirements, external=True)
        else:
            session.run(python, "-m", "pip", "install", "-q", *requirements, external=True, silent=True)

    if uv:
        session.run(uv, "venv", "--quiet", "--python", str(Path(session.bin) / "python"), str(clean), external=True)
    else:
        session.run("python", "-m", "venv", str(clean), silent=True)
    install(wheel, "dj-database-url>=2.1")
    # A copy outside the checkout, so nothing can import the working copy's django_segment_seq.
    example = out / "example_project"
    shutil.copytree(ROOT / "example_project", example, ignore=shutil.ignore_patterns("db.sqlite3*", "__pycache__"))
    manage = [python, str(example / "manage.py")]
    env = {"DATABASE_URL": f"sqlite:///{out / 'shop.sqlite3'}", "DJANGO_SETTINGS_MODULE": "shop_site.settings"}
    where = session.run(
        *manage,
        "shell",
        "-c",
        "import django_segment_seq; print(django_segment_seq.__file__)",
        external=True,
        env=env,
        silent=True,
    )
    if f"{clean}/lib/" not in str(where):
        session.error(f"the example imported django_segment_seq from {str(where).strip()}, not from the wheel")
    session.run(*manage, "migrate", "--verbosity", "0", external=True, env=env)
    demo = session.run(*manage, "demo", external=True, env=env, silent=True)  # printed whole only if it fails
    verdict = [line for line in str(demo).splitlines() if line.startswith("OK:")]
    session.log("demo from the wheel: " + (verdict[0] if verdict else str(demo).strip().splitlines()[-1]))
    install(f"{wheel}[{TYPED_EXTRAS}]", *TYPING_REQUIREMENTS)
    check_types_as_installed(session, python, out / "typing")
    shutil.rmtree(out)


def check_types_as_installed(session: nox.Session, python: str, where: Path) -> None:
    """mypy --strict on the installed package as a user's project runs it: outside the checkout, with the
    django-stubs plugin and none of this repository's settings or overrides, and a module that imports
    every public name from the package's top level."""
    where.mkdir()
    names = session.run(
        python, "-c", "import django_segment_seq; print(*django_segment_seq.__all__)", external=True, silent=True
    )
    (where / "uses_package.py").write_text(
        f"from django_segment_seq import {', '.join(str(names).split())}\n\n__all__ = {str(names).split()!r}\n"
    )
    (where / "typing_settings.py").write_text(TYPING_SETTINGS)
    (where / "mypy.ini").write_text(
        "[mypy]\nstrict = True\nplugins = mypy_django_plugin.main\n\n"
        "[mypy.plugins.django-stubs]\ndjango_settings_module = typing_settings\n"
    )
    with session.chdir(where):
        session.run(python, "-m", "mypy", "-p", "django_segment_seq", "-m", "uses_package", external=True)


@nox.session(python="3.13")
def lint(session: nox.Session) -> None:
    """ruff (lint and format), the import contracts, and mypy --strict with the pinned and the newest django-stubs.

    Runs them all and fails if any finds something. The newest stubs live in a virtualenv of their own,
    so a new release that finds something fails lint without touching the pinned run.
    """
    session.install("-e", LINTED_PACKAGE, *LINT_REQUIREMENTS, django_requirement(CELLS[0].django))
    newest = Path(session.virtualenv.location).with_name("lint-newest-stubs")
    newest_python = newest / "bin" / "python"
    if not newest_python.exists():
        session.run("python", "-m", "venv", str(newest), silent=True)
    requirements = [r for r in LINT_REQUIREMENTS if r != PINNED_STUBS] + ["django-stubs[compatible-mypy]"]
    session.run(
        str(newest_python), "-m", "pip", "install", "-q", "--upgrade", "-e", LINTED_PACKAGE, *requirements,
        django_requirement(CELLS[0].django), external=True, silent=True,
    )  # fmt: skip
    stubs = subprocess.run(
        [str(newest_python), "-m", "pip", "show", "django-stubs"], capture_output=True, text=True, check=True
    ).stdout
    version = next((line.split()[-1] for line in stubs.splitlines() if line.startswith("Version:")), "?")
    commands = {
        "ruff check": [str(Path(session.bin) / "ruff"), "check", "."],
        "ruff format": [str(Path(session.bin) / "ruff"), "format", "--check", "."],
        "import contracts": [str(Path(session.bin) / "lint-imports")],
        "mypy (pinned stubs)": [str(Path(session.bin) / "mypy"), "--strict", "django_segment_seq"],
        f"mypy (newest stubs, {version})": [str(newest_python), "-m", "mypy", "--strict", "django_segment_seq"],
    }
    failed = []
    for name, command in commands.items():
        session.log(f"{name}: {' '.join(Path(command[0]).name if i == 0 else part for i, part in enumerate(command))}")
        if subprocess.call(command, cwd=ROOT) != 0:
            failed.append(name)
    if failed:
        session.error("findings from " + ", ".join(failed))
