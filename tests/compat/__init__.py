"""Tests of compat/: django-sequences' API on this app's rows, and carrying its rows over."""
