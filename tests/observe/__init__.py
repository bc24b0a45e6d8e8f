"""Tests of observe/: logs, metrics and usage figures."""
