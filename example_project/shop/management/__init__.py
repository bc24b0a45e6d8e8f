"""Management commands of the shop app."""
