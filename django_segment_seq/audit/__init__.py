"""The gap register and audit: numbers deliberately not used are recorded with a reason, so every gap in a series
can be told apart as explained (voided) or unexplained."""
