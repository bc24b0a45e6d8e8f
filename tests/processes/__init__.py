"""Tests that start many processes, kill them or restart servers.

The whole-suite cell runs them; the core cells leave this folder out.
"""
