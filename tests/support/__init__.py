"""Helpers of the tests: worker processes, scenarios run in subprocesses, private servers, users' projects,
and the runner of the version matrix."""
