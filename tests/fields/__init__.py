"""Tests of fields/: the field classes, their checks, forms and bulk numbering."""
