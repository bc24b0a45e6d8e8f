"""What Redis holds of rows a command moved forward: emptied, so the tier hands out nothing below their new value."""

from __future__ import annotations

from django.core.management.base import CommandError


def retire_redis_states(alias: str, floors: dict[str, int]) -> list[str]:
    """Empty the Redis states of the rows of `floors` (name -> the row's new value) on the tier, the names retired:
    what Redis holds was lent by the table before the move, and may lie below the new value. CommandError if Redis
    failed."""
    from django_segment_seq.redistier import state  # imports redis-py when the tier is configured

    try:
        return state.retire(alias, floors)
    except Exception as exc:  # redis-py's errors: the table has moved; what Redis holds has not
        raise CommandError(
            f"The rows moved, but their Redis states could not be emptied ({exc}): run this command again once "
            "Redis answers (it moves the rows again, a gap), and keep the app stopped until then."
        ) from exc
