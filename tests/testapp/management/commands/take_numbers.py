"""A management command that takes numbers and finishes, as a project's batch job would."""

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from django_segment_seq import next_value


class Command(BaseCommand):
    help = "Take COUNT numbers of sequence NAME and print them as JSON."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("name")
        parser.add_argument("count", type=int)

    def handle(self, *args: Any, name: str, count: int, **options: Any) -> None:
        self.stdout.write(json.dumps({"numbers": [next_value(name) for _ in range(count)]}))
