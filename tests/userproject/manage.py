#!/usr/bin/env python
"""manage.py of a small project that uses django-segment-seq, run by the test suite as its owners would run it."""

import os
import sys
from pathlib import Path

# The repository root, so `django_segment_seq` imports from the working copy even when it is not installed.
REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def main() -> None:
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(1, str(REPO_ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "userproject.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
