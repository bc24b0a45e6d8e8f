"""Project checks, one module per thing they guard: the SEGMENT_SEQ setting (settings.py), SERVERS (servers.py),
PostgreSQL's standbys (standbys.py), SQLite's single writer (sqlite_writer.py), the concealment keys
(concealment.py), numbering rules made in code and the one shape of each sequence name (rules.py), the Redis tier
(redis_tier.py) and an ID service client table left without its app (client_table.py), so a typo fails at
`manage.py check`, not under load.

Importing the package registers them all (apps.py does, in ready()). The fields' own checks are in
fields/checks/.
"""

from django_segment_seq.checks.client_table import check_client_table_left
from django_segment_seq.checks.concealment import check_concealment_keys
from django_segment_seq.checks.redis_tier import check_redis_rows, check_redis_tier
from django_segment_seq.checks.rules import (
    check_migrated_and_shapes_kept,
    check_one_shape_per_name,
    check_rules_made_in_code,
)
from django_segment_seq.checks.settings import check_settings, expected, valid
from django_segment_seq.checks.sqlite_writer import check_sqlite_single_writer
from django_segment_seq.checks.standbys import check_gapless_replication, check_unwatched_standbys, gapless_fields

__all__ = [
    "check_client_table_left",
    "check_concealment_keys",
    "check_gapless_replication",
    "check_migrated_and_shapes_kept",
    "check_one_shape_per_name",
    "check_redis_rows",
    "check_redis_tier",
    "check_rules_made_in_code",
    "check_settings",
    "check_sqlite_single_writer",
    "check_unwatched_standbys",
    "expected",
    "gapless_fields",
    "valid",
]
