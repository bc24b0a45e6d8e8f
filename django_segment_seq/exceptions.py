"""Errors the app raises, all under SequenceError so callers can catch one name."""

from __future__ import annotations

__all__ = [
    "ConcealKeyChanged",
    "SequenceContention",
    "SequenceError",
    "SequenceExhausted",
    "SequenceMisconfigured",
    "SequenceNotFound",
    "SequenceRedisUnavailable",
    "SequenceScopeError",
    "SequenceShapeChanged",
    "SequenceTableMissing",
    "SequenceUnavailable",
]


class SequenceError(Exception):
    """Base class: something stopped a number from being handed out; none was."""


class SequenceExhausted(SequenceError):
    """The sequence reached max_value and cycle is off, so handing out more would repeat or overflow."""

    def __init__(self, name: str, max_value: int, *, wanted: int = 1, left: int = 0) -> None:
        self.name = name
        self.max_value = max_value
        if wanted > 1 and left > 0:
            detail = f"{wanted} contiguous numbers were asked for but only {left} remain before max_value {max_value}"
        else:
            detail = f"it reached its max_value {max_value}"
        super().__init__(
            f"Sequence {name!r} is exhausted: {detail} and cycle is off. "
            "Raise max_value or turn on cycle (cycling repeats numbers)."
        )


class SequenceContention(SequenceError):
    """Every compare-and-set attempt lost to another process; raise MAX_RETRIES or the step."""

    def __init__(self, name: str, attempts: int) -> None:
        self.name = name
        self.attempts = attempts
        super().__init__(
            f"Sequence {name!r}: gave up after {attempts} conflicting compare-and-set attempts "
            "(other processes kept taking ranges first). Raise SEGMENT_SEQ['MAX_RETRIES'] or the sequence's step."
        )


class SequenceUnavailable(SequenceError):
    """The database kept failing (lost connection, lock timeout) until the retry budget ran out."""

    def __init__(self, name: str, alias: str, attempts: int, error: BaseException) -> None:
        self.name = name
        self.alias = alias
        self.attempts = attempts
        super().__init__(f"Sequence {name!r}: database {alias!r} failed {attempts} times in a row, last with: {error}")


class SequenceRedisUnavailable(SequenceUnavailable):
    """Redis failed for a row on the Redis tier with FALLBACK off: calls for such rows fail at once for a while."""

    def __init__(self, name: str, alias: str, error: BaseException, retry_after: float) -> None:
        SequenceError.__init__(
            self,
            f"Sequence {name!r}: Redis failed ({error}). FALLBACK is off, so every call for a row on the Redis tier "
            f"fails at once for RETRY_AFTER ({retry_after:g} s) after a Redis error, then Redis is asked again.",
        )
        self.name = name
        self.alias = alias
        self.attempts = 1
        self.retry_after = retry_after


class SequenceNotFound(SequenceError):
    """The row is missing and SEGMENT_SEQ['CREATE_ON_FIRST_USE'] forbids creating it."""

    def __init__(self, name: str, alias: str) -> None:
        self.name = name
        self.alias = alias
        super().__init__(
            f"Sequence {name!r} does not exist in database {alias!r} and "
            "SEGMENT_SEQ['CREATE_ON_FIRST_USE'] is False: create it first "
            f"(admin, or Sequence.objects.create(name={name!r}))."
        )


class SequenceMisconfigured(SequenceError):
    """The stored row breaks its own limits (written around validation), so no safe range exists."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(f"Sequence {name!r} is misconfigured: {problem}")


class SequenceScopeError(SequenceError, ValueError):
    """A scope value that names no counter row: empty, of a type with no stable text, or a row name too long."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(f"Sequence {name!r}: {problem}")


class ConcealKeyChanged(SequenceError):
    """CONCEAL_KEY changed while a concealed format stayed the same: new texts could repeat ones handed out before;
    or, revealing, the key a format's texts were made under is configured neither as the key nor as a fallback."""

    def __init__(self, name: str, format: str, *, reading: bool = False) -> None:
        self.name = name
        self.format = format
        if reading:  # revealing: the key that made the texts is not configured, so no number can be read back
            super().__init__(
                f"Sequence {name!r}: its texts {format!r} were concealed under a key that is neither "
                "SEGMENT_SEQ['CONCEAL_KEY'] nor in SEGMENT_SEQ['CONCEAL_KEY_FALLBACKS'], so they cannot be "
                "revealed. Add the former key to CONCEAL_KEY_FALLBACKS."
            )
            return
        super().__init__(
            f"Sequence {name!r}: its texts {format!r} were concealed under another SEGMENT_SEQ['CONCEAL_KEY']. "
            "Under a new key a new number can be shown as a text handed out before. Change the format too "
            "(a new prefix, say), or put the old key back."
        )


class SequenceShapeChanged(SequenceError):
    """A sequence name first used with one reset or scope is now used with another: its counters would start again
    in new rows and repeat texts already handed out."""

    def __init__(self, name: str, recorded: str, now: str) -> None:
        self.name = name
        self.recorded = recorded
        self.now = now
        super().__init__(
            f"Sequence {name!r} was first used with {recorded}, and is now used with {now}. Its new rows would "
            "count from the minimum again and repeat texts already handed out. Give the new rule a new sequence "
            "name (and seed it above the stored texts with `manage.py segment_seq sync`), or put the old rule "
            f"back; once the new rows are seeded, `manage.py segment_seq reshape {name}` records the new shape."
        )


class SequenceTableMissing(SequenceMisconfigured):
    """The database has no Sequence table: the app was never migrated there, so retrying cannot help."""

    def __init__(self, name: str, alias: str, error: BaseException) -> None:
        SequenceMisconfigured.__init__(
            self,
            name,
            f"database {alias!r} has no table of the app ({' '.join(str(error).split())}). "
            f"Run `python manage.py migrate --database {alias}`.",
        )
        self.alias = alias
