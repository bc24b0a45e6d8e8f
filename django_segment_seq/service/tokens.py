"""Client tokens: random, shown once, stored as a SHA-256 digest; and the rates and name patterns of a client."""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from dataclasses import dataclass
from fnmatch import fnmatchcase

TOKEN_PREFIX = "ssq_"
# Characters of the random part kept in clear, so an operator can tell tokens apart in the admin and the logs.
SHOWN_CHARACTERS = 8
# The digest an absent or malformed token is compared with, so every refusal costs the same work.
NO_DIGEST = "0" * 64
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])\s*$")


def new_token() -> str:
    """A token with 256 random bits: too many to guess, so a plain digest (no salt, no stretching) protects it."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    """The stored form of a token: its SHA-256, hex; computed for every request, right token or not."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def shown_part(token: str) -> str:
    """The start of a token, kept in clear to name it: "ssq_AbC12xYz"."""
    return token[: len(TOKEN_PREFIX) + SHOWN_CHARACTERS]


@dataclass(frozen=True)
class Rate:
    """At most `limit` requests per window of `seconds`, e.g. 50/s or 1000/10m."""

    limit: int
    seconds: int

    def __str__(self) -> str:
        return f"{self.limit}/{self.seconds}s"


def parse_rate(text: str) -> Rate | None:
    """A rate written as N/s, N/m, N/h, N/d or N/Ks (K units); None for an empty text (no limit); ValueError else."""
    if not text.strip():
        return None
    match = RATE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a rate: write requests per window, e.g. 50/s, 1000/m or 100/10s.")
    limit, multiple, unit = int(match[1]), int(match[2] or 1), match[3]
    if limit < 1 or multiple < 1:
        raise ValueError(f"{text!r}: a rate needs at least 1 request per window of at least 1 unit.")
    return Rate(limit, multiple * UNITS[unit])


def split_patterns(text: str) -> list[str]:
    """The patterns of a client's `sequences`, separated by commas or spaces."""
    return [part for part in re.split(r"[\s,]+", text) if part]


def allowed(patterns: str, name: str, *, fold: bool = False) -> bool:
    """Whether `name` (a sequence name, a field label, or snowflake:LAYOUT) matches one of the shell-style patterns;
    with `fold`, case and accents aside, as MariaDB's default collations compare names."""
    if fold:
        name, patterns = folded(name), folded(patterns)
    return any(fnmatchcase(name, pattern) for pattern in split_patterns(patterns))


def folded(text: str) -> str:
    """`text` without case or accents ("Éte" -> "ete"), for a comparison at least as loose as a _ci collation's."""
    return "".join(char for char in unicodedata.normalize("NFKD", text) if not unicodedata.combining(char)).casefold()
