"""`segment_seq client add|list|revoke|rotate`: the ID service's clients; a token is printed once, a digest kept."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from django_segment_seq.management.subcommands.base import Subcommand, global_options
from django_segment_seq.service.models import Client
from django_segment_seq.service.tokens import digest, new_token, shown_part

DURATION = re.compile(r"^(\d+)([smhd])$")
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> timedelta:
    """A grace period written 0, 90s, 30m, 24h or 7d."""
    if text == "0":
        return timedelta(0)
    match = DURATION.match(text)
    if match is None:
        raise CommandError(f"--grace {text!r}: write a duration such as 0, 30m, 24h or 7d.")
    return timedelta(seconds=int(match[1]) * SECONDS[match[2]])


def add_arguments(client: CommandParser) -> None:
    """The actions of `segment_seq client`, each taking Django's global options after it as well."""
    actions = client.add_subparsers(dest="action", required=True, metavar="{add,list,revoke,rotate}")

    def action(name: str, help: str) -> CommandParser:
        parser: CommandParser = actions.add_parser(name, help=help, parents=[global_options()])
        return parser

    add = action("add", "A new client; prints its token once.")
    add.add_argument("client_name", metavar="NAME")
    add.add_argument("--sequences", required=True, help='Patterns, comma-separated: "order*,shop.Order.number".')
    add.add_argument("--max-count", type=int, default=1000, help="The largest count of one request.")
    add.add_argument("--rate", default="", help="Requests per window, e.g. 50/s or 1000/m; none by default.")
    add.add_argument(
        "--create-rows",
        type=int,
        default=0,
        help="How many new sequences the client may create by naming them; 0 (default): existing ones only.",
    )
    listing = action("list", "Every client with its patterns, limits and use.")
    listing.add_argument("--json", dest="as_json", action="store_true", help="Print JSON for scripts.")
    revoke = action("revoke", "Refuse the client's tokens from now on.")
    revoke.add_argument("client_name", metavar="NAME")
    rotate = action("rotate", "A new token, printed once; the old one works for --grace.")
    rotate.add_argument("client_name", metavar="NAME")
    rotate.add_argument("--grace", default="24h", help="How long the old token keeps working: 0, 30m, 24h, 7d.")


def handle(command: BaseCommand, *, action: str, **options: Any) -> None:
    if not apps.is_installed("django_segment_seq.service"):
        raise CommandError(
            'The ID service is an app of its own: add "django_segment_seq.service" to INSTALLED_APPS after '
            '"django_segment_seq" and run migrate (see docs/id-service.md).'
        )
    if action == "add":
        limits = {"max_count": options["max_count"], "rate": options["rate"], "max_new_rows": options["create_rows"]}
        add(command, options["client_name"], options["sequences"], **limits)
    elif action == "list":
        listing(command, as_json=options.get("as_json", False))
    elif action == "revoke":
        client = named(options["client_name"])
        client.revoked_at = timezone.now()
        client.save(update_fields=["revoked_at"])
        command.stdout.write(f"Revoked {options['client_name']}: its tokens are refused from now on.")
    else:
        rotate(command, options["client_name"], duration(options["grace"]))


def named(name: str) -> Client:
    try:
        return Client.objects.get(name=name)
    except Client.DoesNotExist:
        raise CommandError(f"No client named {name!r}; see `segment_seq client list`.") from None


def add(command: BaseCommand, name: str, sequences: str, **limits: Any) -> None:
    """A new client with `limits` (max_count, rate, max_new_rows); its token printed once."""
    token = new_token()
    client = Client(name=name, sequences=sequences, **limits)
    client.token_start, client.token_digest = shown_part(token), digest(token)
    try:
        client.full_clean()
    except ValidationError as exc:
        raise CommandError("; ".join(f"{key}: {' '.join(value)}" for key, value in exc.message_dict.items())) from None
    client.save()
    command.stdout.write(f"Client {name} added. Its token, shown this once (only a digest is kept):\n{token}")


def rotate(command: BaseCommand, name: str, grace: timedelta) -> None:
    client = named(name)
    if client.revoked_at is not None:
        raise CommandError(f"{name} is revoked; add a new client instead.")
    token = new_token()
    client.previous_digest, client.previous_valid_until = client.token_digest, timezone.now() + grace
    client.token_start, client.token_digest = shown_part(token), digest(token)
    client.save(update_fields=["previous_digest", "previous_valid_until", "token_start", "token_digest"])
    until = "no longer" if not grace else f"until {client.previous_valid_until:%Y-%m-%d %H:%M:%S %Z}"
    command.stdout.write(f"New token of {name}, shown this once (the old one works {until}):\n{token}")


def listing(command: BaseCommand, *, as_json: bool) -> None:
    rows = [
        {
            "name": client.name,
            "token": client.token_start + "…",
            "sequences": client.sequences,
            "max_count": client.max_count,
            "rate": client.rate or "-",
            "new_rows": f"{client.rows_created}/{client.max_new_rows}",
            "last_used": client.last_used_at.isoformat() if client.last_used_at else None,
            "requests": client.requests,
            "numbers": client.numbers,
            "revoked": client.revoked_at.isoformat() if client.revoked_at else None,
        }
        for client in Client.objects.order_by("name")
    ]
    if as_json:
        command.stdout.write(json.dumps(rows, indent=2))
        return
    if not rows:
        command.stdout.write("No clients; add one with `segment_seq client add NAME --sequences PATTERNS`.")
        return
    for row in rows:
        state = f"revoked {row['revoked']}" if row["revoked"] else f"last used {row['last_used'] or 'never'}"
        command.stdout.write(
            f"{row['name']}  {row['token']}  {row['sequences']}  max {row['max_count']}  rate {row['rate']}  "
            f"{row['requests']} requests, {row['numbers']} numbers, {state}"
        )


class ClientCommand(Subcommand):
    name = "client"
    help = "The ID service's clients: add, list, revoke, rotate a token."
    database_help = None  # the Client table lives where the routers put the app's models

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        add_arguments(parser)

    def handle(self, **options: Any) -> None:
        handle(self.command, **options)
