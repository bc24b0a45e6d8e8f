"""SEGMENT_SEQ["SERVERS"]: the MariaDB or MySQL nodes the allocator tries in turn, each named as "host:port", so a
typo that would leave a node out is found at `manage.py check`."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from django_segment_seq.allocator.connections import split_address
from django_segment_seq.conf import SETTING_NAME


def servers_errors(configured: dict[str, Any]) -> list[checks.CheckMessage]:
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
