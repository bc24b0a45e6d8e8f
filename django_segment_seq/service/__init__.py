"""The app as its company's ID service over HTTP: clients with hashed tokens, scopes and rates, JSON views."""
