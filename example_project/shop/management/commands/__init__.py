"""The shop app's management commands: `demo`."""
