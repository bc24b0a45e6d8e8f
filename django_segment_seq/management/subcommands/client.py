"""`segment_seq client add|list|revoke|rotate`: the ID service's clients and their tokens (management/clients.py)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from django_segment_seq.management import clients
from django_segment_seq.management.subcommands.base import Subcommand


class ClientCommand(Subcommand):
    name = "client"
    help = "The ID service's clients: add, list, revoke, rotate a token."
    database_help = None  # the Client table lives where the routers put the app's models

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        clients.add_arguments(parser)

    def handle(self, **options: Any) -> None:
        clients.handle(self.command, **options)
