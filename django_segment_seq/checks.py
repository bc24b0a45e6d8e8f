"""Project checks: the SEGMENT_SEQ setting, the router and SQLite's single writer, so a typo fails at
`manage.py check`, not under load. The fields' own checks are in fields/checks/."""

from __future__ import annotations

import importlib.util
import math
import os
import time
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks
from django.db import DatabaseError, connections, router

from django_segment_seq.allocator.connections import split_address
from django_segment_seq.conf import DEFAULTS, SETTING_NAME, SETTINGS, Setting, app_settings, redis_settings
from django_segment_seq.db import sqlite
from django_segment_seq.db.client_table import CLIENT_TABLE, SERVICE_APP, client_rows
from django_segment_seq.db.concealed_formats import ConcealedFormat
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.standbys import asynchronous_replication, streaming_standbys, watched
from django_segment_seq.db.table import Sequence
from django_segment_seq.fields.concealed import concealed_formats
from django_segment_seq.flow.concealing import key_id, key_problem, usable_keys
from django_segment_seq.redistier.config import problems, redis_installed, tier_config


@checks.register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """SEGMENT_SEQ is a dict of known keys, each value as conf.SETTINGS allows, naming a database that exists."""
    configured = getattr(settings, SETTING_NAME, None)
    if configured is None:
        return []
    if not isinstance(configured, dict):
        return [
            checks.Error(
                f"{SETTING_NAME} must be a dict, not {type(configured).__name__}.",
                id="django_segment_seq.E001",
            )
        ]
    errors = [
        *_check_keys(configured),
        *_check_values(configured),
        *_check_database(configured),
        *_check_servers(configured),
        *_check_standbys(configured),
        *_check_conceal_fallbacks(configured),
    ]
    if configured.get("METRICS") is True:
        errors += _check_metrics()
    return errors


def _check_keys(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """Every key is one conf.SETTINGS declares: a misspelt one would silently leave the default in force."""
    return [
        checks.Error(
            f"{SETTING_NAME} has an unknown key {key!r}.",
            hint=f"Known keys: {', '.join(sorted(DEFAULTS))}.",
            id="django_segment_seq.E002",
        )
        for key in sorted(set(configured) - set(DEFAULTS))
    ]


def _check_values(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """Each value has its setting's type and lies within its bounds."""
    return [
        checks.Error(
            f"{SETTING_NAME}[{setting.name!r}] is {configured[setting.name]!r}.",
            hint=f"Expected {expected(setting)}",
            id="django_segment_seq.E003",
        )
        for setting in SETTINGS
        if setting.name in configured and not valid(setting, configured[setting.name])
    ]


def _check_database(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """DATABASE names an alias of DATABASES that the routers also send the Sequence model to."""
    alias = configured.get("DATABASE")
    if not isinstance(alias, str):
        return []
    if alias not in settings.DATABASES:
        return [
            checks.Error(
                f"{SETTING_NAME}['DATABASE'] names {alias!r}, which is not in DATABASES.",
                id="django_segment_seq.E004",
            )
        ]
    return _check_router_agrees(alias)


def _check_servers(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """SERVERS maps aliases of MariaDB or MySQL databases to lists of "host:port": a typo would leave a node out."""
    servers = configured.get("SERVERS")
    if not isinstance(servers, dict):
        return []  # None, or a wrong type that E003 reports
    errors: list[checks.CheckMessage] = []
    for alias, addresses in servers.items():
        problems = _servers_problems(alias, addresses)
        errors += [
            checks.Error(
                f"{SETTING_NAME}['SERVERS']{problem}.",
                hint='Map an alias of DATABASES to a non-empty list of "host:port" strings, e.g. '
                '{"default": ["db1:3306", "db2:3306", "db3:3306"]}.',
                id="django_segment_seq.E050",
            )
            for problem in problems
        ]
        if not problems and "mysql" not in str(settings.DATABASES[alias].get("ENGINE", "")):
            errors.append(
                checks.Error(
                    f"{SETTING_NAME}['SERVERS'] names {alias!r}, which is not a MariaDB or MySQL database.",
                    hint="PostgreSQL takes several hosts in HOST and PORT (libpq tries them in turn), with "
                    "OPTIONS target_session_attrs='read-write'; SQLite has no servers.",
                    id="django_segment_seq.E051",
                )
            )
    return errors


def _check_standbys(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """STANDBYS maps aliases of PostgreSQL databases to a count of standbys: a typo would leave a primary unguarded."""
    standbys = configured.get("STANDBYS")
    if not isinstance(standbys, dict):
        return []  # None, or a wrong type that E003 reports
    return [
        checks.Error(
            f"{SETTING_NAME}['STANDBYS'][{alias!r}] is {count!r}: STANDBYS maps aliases of PostgreSQL databases "
            "to the number (0 or more) of standbys that must confirm the primary's writes.",
            hint='For example {"default": 1}; {"default": 0} for a primary run alone on purpose.',
            id="django_segment_seq.E055",
        )
        for alias, count in standbys.items()
        if alias not in settings.DATABASES
        or "postgresql" not in str(settings.DATABASES[alias].get("ENGINE", ""))
        or not isinstance(count, int)
        or isinstance(count, bool)
        or count < 0
    ]


@checks.register(checks.Tags.database)
def check_unwatched_standbys(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """A PostgreSQL primary with standbys that the app does not watch: cut off from them, it would hand out numbers
    a promoted standby hands out again (manage.py check --database)."""
    alias = sequence_database()
    if not databases or alias not in databases or connections[alias].vendor != "postgresql":
        return []
    connection = connections[alias]
    try:
        found = streaming_standbys(connection)
    except DatabaseError:
        return []  # a standby, or a server that does not say: nothing to warn of
    if found == 0 or watched(connection):
        return []
    return [
        checks.Warning(
            f"Database {alias!r} is a PostgreSQL primary with {found} standby(s), and the app does not require them "
            "to confirm its writes: cut off from them while application servers still reach it, it would hand out "
            "numbers that the promoted standby hands out again.",
            hint=f'Set {SETTING_NAME}["STANDBYS"] = {{{alias!r}: 1}} (HOST listing several hosts does it by itself); '
            "see docs/clusters.md, Partitions.",
            id="django_segment_seq.W004",
        )
    ]


@checks.register(checks.Tags.database)
def check_client_table_left(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The ID service's clients, left in the table migration 0012 keeps when the service app is not installed."""
    alias = sequence_database()
    if apps.is_installed(SERVICE_APP) or not databases or alias not in databases:
        return []
    try:
        rows = client_rows(connections[alias])
    except DatabaseError:
        return []  # the database is away: other checks and the first query say so
    if not rows:
        return []
    return [
        checks.Warning(
            f"Table {CLIENT_TABLE} in database {alias!r} holds {rows} ID service client(s), but the ID service app "
            "is not installed: nothing reads the rows, and migrations keep them (never dropped).",
            hint=f'Add "{SERVICE_APP}" to INSTALLED_APPS after "django_segment_seq" and migrate, or drop the table '
            "yourself if the clients are no longer wanted; see docs/id-service.md.",
            id="django_segment_seq.W006",
        )
    ]


@checks.register(checks.Tags.database)
def check_gapless_replication(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """Gapless numbers commit with the caller's rows on the primary alone: with asynchronous standbys, an old
    primary cut off from them for up to STANDBY_LAG commits numbers a promoted standby hands out again."""
    alias = sequence_database()
    if not databases or alias not in databases or connections[alias].vendor != "postgresql":
        return []
    fields = gapless_fields()
    if not fields:
        return []
    try:
        reason = asynchronous_replication(connections[alias])
    except DatabaseError:
        return []  # a server that does not say: nothing to warn of
    if reason is None:
        return []
    window = (
        f"for up to {SETTING_NAME}['STANDBY_LAG'] seconds"
        if watched(connections[alias])
        else "for as long as the partition lasts, its standbys being unwatched (W004)"
    )
    return [
        checks.Warning(
            f"Database {alias!r} is a PostgreSQL primary where gapless numbers are taken ({', '.join(fields)}), "
            f"and {reason}: cut off from its standby while callers still reach it, it commits gapless "
            f"numbers ({window}) that the promoted standby never received and hands out again.",
            hint="Make a standby synchronous: synchronous_standby_names naming it, with synchronous_commit on or "
            "remote_apply (Patroni: synchronous_mode: true); see docs/clusters.md, Partitions.",
            id="django_segment_seq.W005",
        )
    ]


def gapless_fields() -> list[str]:
    """The fields, as "app.Model.field", that take gapless numbers."""
    return [
        f"{model._meta.label}.{field.name}"
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if getattr(field, "gapless", False) is True and isinstance(getattr(field, "sequence_name", None), str)
    ]


def _check_conceal_fallbacks(configured: dict[str, Any]) -> list[checks.CheckMessage]:
    """Each former key is a key: one mistyped would leave the texts it made unreadable, found only when revealed."""
    fallbacks = configured.get("CONCEAL_KEY_FALLBACKS")
    if not isinstance(fallbacks, (list, tuple)):
        return []  # not set, or a wrong type that E003 reports
    errors: list[checks.CheckMessage] = []
    for index, key in enumerate(fallbacks):
        problem = key_problem(key, f"{SETTING_NAME}['CONCEAL_KEY_FALLBACKS'][{index}]")
        if problem is not None:
            errors.append(
                checks.Error(
                    f"{problem}.",
                    hint="List each former CONCEAL_KEY as it was: 32, 48 or 64 hex digits, read from the environment.",
                    id="django_segment_seq.E052",
                )
            )
    return errors


@checks.register(checks.Tags.database)
def check_concealment_keys(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The keys recorded at migrate for the concealed formats still make (E053) and read (W003) their texts: a
    changed CONCEAL_KEY is said at `check --database`, not found at the first number or a wrong reveal()."""
    alias = sequence_database()
    made = set(concealed_formats())
    if not databases or alias not in databases or not made or key_problem(app_settings().get("CONCEAL_KEY")):
        return []  # E047/E048 report a key that is missing or malformed
    try:
        recorded = list(ConcealedFormat.objects.using(alias).values_list("sequence_name", "format", "key_id"))
    except DatabaseError:
        return []  # not migrated yet: migrate records the formats
    current, usable = key_id(str(app_settings()["CONCEAL_KEY"])), usable_keys()
    names = {name for name, _format in made}
    found: list[checks.CheckMessage] = []
    for name, format, recorded_id in recorded:
        if (name, format) in made and recorded_id != current:
            found.append(
                checks.Error(
                    f"Sequence {name!r}: its texts {format!r} were concealed under another key than "
                    f"{SETTING_NAME}['CONCEAL_KEY'], so no new number is made (ConcealKeyChanged).",
                    hint="Change the format too (a new prefix, say) and list the former key in "
                    "CONCEAL_KEY_FALLBACKS, or put the former key back.",
                    id="django_segment_seq.E053",
                )
            )
        elif (name, format) not in made and name in names and recorded_id not in usable:
            found.append(
                checks.Warning(
                    f"Sequence {name!r}: the texts of its former format {format!r} were concealed under a key "
                    "that is neither CONCEAL_KEY nor in CONCEAL_KEY_FALLBACKS: reveal(), sync and the gap "
                    "report cannot read them.",
                    hint=f"Add the former key to {SETTING_NAME}['CONCEAL_KEY_FALLBACKS'].",
                    id="django_segment_seq.W003",
                )
            )
    return found


def _servers_problems(alias: Any, addresses: Any) -> list[str]:
    """What is wrong with one SERVERS entry, each naming the alias or address at fault (after SERVERS in E050)."""
    if alias not in settings.DATABASES:
        return [f" names {alias!r}, which is not an alias of DATABASES"]
    if not isinstance(addresses, (list, tuple)):
        return [f'[{alias!r}] is {addresses!r}, not a list of "host:port" strings']
    if not addresses:
        return [f"[{alias!r}] is an empty list, which names no server"]
    return [
        f"[{alias!r}][{position}] is {address!r}, {problem}"
        for position, address in enumerate(addresses)
        if (problem := _address_problem(address))
    ]


def _address_problem(address: Any) -> str | None:
    """Why `address` is not a "host:port" text (the port may be left out), or None when it is one."""
    if not isinstance(address, str):
        return 'not a "host:port" string'
    host, port = split_address(address)
    if not host:
        return "which names no host"
    if port and not port.isdigit():
        return f"whose port {port!r} is not a number"
    return None


def _check_router_agrees(alias: str) -> list[checks.CheckMessage]:
    """Numbers come from `alias`; the admin and migrations must see the same table, or edits miss it."""
    routed = router.db_for_write(Sequence)
    if routed == alias:
        return []
    return [
        checks.Error(
            f"{SETTING_NAME}['DATABASE'] is {alias!r}, but the database routers send the Sequence model to "
            f"{routed!r}: the admin and migrations would use another table than the one numbers come from.",
            hint="Add 'django_segment_seq.routers.SequenceRouter' to DATABASE_ROUTERS.",
            id="django_segment_seq.E005",
        )
    ]


def _check_metrics() -> list[checks.CheckMessage]:
    """METRICS needs prometheus_client, and its multiprocess mode an existing directory to write to."""
    if importlib.util.find_spec("prometheus_client") is None:
        return [
            checks.Error(
                f"{SETTING_NAME}['METRICS'] is on, but prometheus_client is not installed: no metrics are exported.",
                hint="pip install django-segment-seq[prometheus]",
                id="django_segment_seq.E006",
            )
        ]
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory is not None and not os.path.isdir(directory):
        return [
            checks.Error(
                f"PROMETHEUS_MULTIPROC_DIR is {directory!r}, which is not a directory: every metric update would fail.",
                hint="Create it (empty) before the server starts its workers, or unset it for a single process.",
                id="django_segment_seq.E007",
            )
        ]
    return []


@checks.register()
def check_sqlite_single_writer(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A shared SQLite file whose transactions take the write lock at BEGIN leaves no room for an independent commit."""
    alias = sequence_database()
    if alias not in settings.DATABASES or not sqlite.shares_file(alias) or not sqlite.immediate_transactions(alias):
        return []
    return [
        checks.Warning(
            f"Database {alias!r} is SQLite with transaction_mode "
            f"{sqlite.transaction_mode(alias)!r} and also holds the Sequence table: every "
            "transaction holds the file's write lock from its first statement, so numbers taken inside a transaction "
            "are taken there too and come back if it rolls back.",
            hint="Keep the Sequence table in a SQLite file of its own: SEGMENT_SEQ['DATABASE'] naming a second "
            "database and 'django_segment_seq.routers.SequenceRouter' in DATABASE_ROUTERS.",
            id="django_segment_seq.W001",
        )
    ]


def valid(setting: Setting, value: Any) -> bool:
    """Whether `value` has one of the setting's types and, for a number, is finite and within its bounds."""
    if isinstance(value, bool) and bool not in setting.kinds:
        return False
    if not isinstance(value, setting.kinds):
        return False
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    if setting.past_instant and value > time.time() * 1000:
        return False
    return math.isfinite(value) and value >= setting.low and (setting.high is None or value <= setting.high)


def expected(setting: Setting) -> str:
    """What a setting takes, as the hint of E003 says it."""
    kinds = " or ".join(kind.__name__ for kind in setting.kinds)
    if setting.past_instant:
        return f"{kinds}, an instant in Unix milliseconds that is not in the future."
    if setting.is_flag or not ({int, float} & set(setting.kinds)):
        return f"{kinds}."
    if setting.high is not None:
        return f"{kinds}, from {setting.low:g} to {setting.high:g}."
    return f"{kinds}, not negative." if setting.low == 0 else f"{kinds}, at least {setting.low:g}."


@checks.register()
def check_redis_tier(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """SEGMENT_SEQ["REDIS"]: known keys and values, one server named, redis-py installed, no gapless row on it."""
    merged = redis_settings()
    if merged is None:
        return []
    found = problems(merged)
    if found:
        return [
            checks.Error(
                f"{SETTING_NAME}['REDIS']: {problem}.", hint="See docs/redis.md.", id="django_segment_seq.E060"
            )
            for problem in found
        ]
    if not redis_installed():
        return [
            checks.Error(
                f"{SETTING_NAME}['REDIS'] is set, but redis-py is not installed: every row takes its blocks from "
                "the table.",
                hint="pip install django-segment-seq[redis]",
                id="django_segment_seq.E061",
            )
        ]
    return _gapless_on_the_tier()


def _gapless_on_the_tier() -> list[checks.CheckMessage]:
    """A gapless field's rows cannot take blocks from Redis: a block's unused rest would be a gap."""
    config = tier_config()
    if config is None:
        return []
    errors: list[checks.CheckMessage] = []
    for model in apps.get_models():
        for field in model._meta.get_fields():
            name = getattr(field, "sequence_name", None)
            if not getattr(field, "gapless", False) or not isinstance(name, str):
                continue
            if any(config.covers(row) for row in (name, f"{name}@2026-11-26", f"{name}@x=1")):
                errors.append(
                    checks.Error(
                        f"{model._meta.label}.{field.name} is gapless, and its sequence {name!r} is named by "
                        f"{SETTING_NAME}['REDIS']['SEQUENCES']: the Redis tier hands out blocks, which leave gaps.",
                        hint="Leave gapless sequences out of SEQUENCES.",
                        obj=field,
                        id="django_segment_seq.E062",
                    )
                )
    return errors


@checks.register(checks.Tags.database)
def check_redis_rows(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Rows on the tier that cycle: a wrap-around would bring Redis numbers back (manage.py check --database)."""
    config = tier_config()
    alias = sequence_database()
    if config is None or not databases or alias not in databases:
        return []
    rows = Sequence._base_manager.using(alias).filter(cycle=True).values_list("name", flat=True)
    return [
        checks.Error(
            f"Sequence row {name!r} cycles and is named by {SETTING_NAME}['REDIS']['SEQUENCES']: it takes its "
            "blocks from the table instead.",
            hint="Leave cycling rows out of SEQUENCES, or turn cycle off.",
            id="django_segment_seq.E063",
        )
        for name in rows
        if config.covers(name)
    ]
