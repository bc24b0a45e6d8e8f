"""manage.py segment_seq takes Django's own options after a subcommand, as Django's commands do, and --database."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from django_segment_seq.management.commands import segment_seq
from django_segment_seq.management.commands.segment_seq import Command
from django_segment_seq.management.subcommands.base import Subcommand
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)
ON_SQLITE = connection.vendor == "sqlite"


def parse(*args: str) -> dict:
    return vars(Command().create_parser("manage.py", "segment_seq").parse_args(list(args)))


def test_django_options_after_a_subcommand_are_parsed():
    # Before: "Error: unrecognized arguments: --verbosity 0 --no-color --settings=tests.settings ...".
    options = parse(
        "gaps", "testapp.X.number", "--verbosity", "0", "--no-color", "--settings=tests.settings",
        "--pythonpath", "/nowhere", "--traceback", "--force-color", "--skip-checks",
    )  # fmt: skip
    assert (options["verbosity"], options["settings"], options["pythonpath"]) == (0, "tests.settings", "/nowhere")
    assert options["no_color"] and options["force_color"] and options["traceback"] and options["skip_checks"]


def test_options_before_the_subcommand_are_kept_and_defaults_stay_django_s():
    assert parse("--verbosity", "3", "--no-color", "list")["verbosity"] == 3
    assert parse("--verbosity", "3", "--no-color", "list")["no_color"] is True
    options = parse("list", "--json")
    assert (options["verbosity"], options["no_color"], options["traceback"], options["as_json"]) == (
        1,
        False,
        False,
        True,
    )
    assert parse("-v", "2", "show", "x", "-v", "0")["verbosity"] == 0  # the last one given wins, as in argparse


def test_a_subcommand_runs_with_django_options_after_it():
    out = StringIO()
    # Before: CommandError "Error: unrecognized arguments: --verbosity 0 --no-color".
    call_command("segment_seq", "list", "--verbosity", "0", "--no-color", "--skip-checks", stdout=out)
    assert "No sequences yet" in out.getvalue()


def test_traceback_after_a_subcommand_raises_the_command_error():
    with pytest.raises(SystemExit) as exited:
        Command(stdout=StringIO(), stderr=StringIO()).run_from_argv(["manage.py", "segment_seq", "show", "nope"])
    assert exited.value.code == 1
    # Before: SystemExit(2), "unrecognized arguments: --traceback".
    with pytest.raises(CommandError, match="No sequence named 'nope'"):
        Command(stdout=StringIO(), stderr=StringIO()).run_from_argv(
            ["manage.py", "segment_seq", "show", "nope", "--traceback"]
        )


def test_database_names_an_alias_and_an_unknown_one_is_a_command_error():
    out = StringIO()
    call_command("segment_seq", "list", "--database", "default", "--json", stdout=out)
    assert '"database": "default"' in out.getvalue()
    with pytest.raises(CommandError, match="--database 'nowhere' names no database"):
        call_command("segment_seq", "show", "x", "--database", "nowhere")


@pytest.mark.skipif(not ON_SQLITE, reason="the test settings have a second database on SQLite only")
@pytest.mark.django_db(transaction=True, databases=["default", "sequences"])
def test_database_picks_the_sequence_table_to_show():
    Sequence.objects.using("sequences").create(name="elsewhere", step=7)
    with pytest.raises(CommandError, match="No sequence named 'elsewhere' in database 'default'"):
        call_command("segment_seq", "show", "elsewhere")
    out = StringIO()
    call_command("segment_seq", "show", "elsewhere", "--database", "sequences", stdout=out)
    assert "Sequence elsewhere (database sequences)" in out.getvalue()


class Hello(Subcommand):
    """A subcommand as another module would add one: this class and its dotted path in SUBCOMMANDS."""

    name = "hello"
    help = "Say hello."

    @classmethod
    def add_arguments(cls, parser):
        parser.add_argument("who")

    def handle(self, *, who, database=None, **options):
        self.stdout.write(f"hello {who} on {self.database(database)}, verbosity {options['verbosity']}")


def test_a_subcommand_is_a_class_and_one_line_in_subcommands(monkeypatch):
    monkeypatch.setattr(segment_seq, "SUBCOMMANDS", (*segment_seq.SUBCOMMANDS, f"{__name__}.Hello"))
    segment_seq.subcommands.cache_clear()
    try:
        out = StringIO()
        call_command("segment_seq", "hello", "world", "--database", "default", "-v", "2", stdout=out)
        assert out.getvalue() == "hello world on default, verbosity 2\n"
    finally:
        monkeypatch.undo()
        segment_seq.subcommands.cache_clear()
