"""Numbering rules above the plain counter: formats, periodic resets, scopes, gapless numbers, and the derived
Sequence rows they name."""
