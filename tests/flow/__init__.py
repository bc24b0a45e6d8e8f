"""Tests of flow/: formats, parsing, resets, scopes and gapless numbers."""
