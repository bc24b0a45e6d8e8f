#!/usr/bin/env python
"""A user's project as the test suite drives it: `manage.py test` with the app's test runner."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "usersite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
