"""Numbers that do not reveal volume: a keyed, reversible permutation of a fixed-width decimal number (NIST FF3-1).

A permutation never maps two numbers to one, so concealed numbers stay unique by construction; consecutive
numbers look unrelated to anyone without the key. The key comes from SEGMENT_SEQ["CONCEAL_KEY"]; the sequence
name is the tweak, so two sequences under one key do not line up. The cipher is the `ff3` package (the
`conceal` extra).
"""

from __future__ import annotations

import hashlib
import hmac
from functools import lru_cache
from typing import Any

from django_segment_seq.conf import app_settings
from django_segment_seq.exceptions import SequenceMisconfigured

# FF3-1 in radix 10 needs a domain of at least a million (NIST SP 800-38G Rev. 1): six digits.
MIN_WIDTH = 6
# The widest zero-padded number a BIGINT column's values fit in.
MAX_WIDTH = 18
# AES key sizes, in hex digits.
KEY_HEX_LENGTHS = (32, 48, 64)


class ConcealUnavailable(ImportError):
    """The `ff3` package, which computes the permutation, is not installed."""


def key_problem(key: Any, setting: str = "SEGMENT_SEQ['CONCEAL_KEY']") -> str | None:
    """Why `key` cannot be a CONCEAL_KEY, or None when it can: 32, 48 or 64 hex digits (AES-128, -192, -256)."""
    if key in (None, ""):
        return f"{setting} is not set"
    if not isinstance(key, str):
        return f"{setting} must be a string of hex digits, not {type(key).__name__}"
    try:
        bytes.fromhex(key)
    except ValueError:
        return f"{setting} is not made of hex digits"
    if len(key) not in KEY_HEX_LENGTHS:
        return f"{setting} has {len(key)} hex digits; an AES key has 32, 48 or 64"
    return None


def current_key(sequence_name: str) -> str:
    """The configured key; SequenceMisconfigured when it is missing or malformed (system check E047/E048 says so)."""
    key = app_settings().get("CONCEAL_KEY")
    problem = key_problem(key)
    if problem is not None:
        raise SequenceMisconfigured(sequence_name, f"{problem}, so its concealed numbers cannot be made or read back")
    return str(key)


def usable_keys() -> dict[str, str]:
    """The keys texts may be revealed under, by fingerprint: CONCEAL_KEY, then each of CONCEAL_KEY_FALLBACKS (the
    malformed ones left out: system check E052 reports them)."""
    configured = app_settings()
    fallbacks = configured.get("CONCEAL_KEY_FALLBACKS") or ()
    candidates = [configured.get("CONCEAL_KEY"), *(fallbacks if isinstance(fallbacks, (list, tuple)) else ())]
    keys: dict[str, str] = {}
    for key in candidates:
        if key_problem(key) is None:
            keys.setdefault(key_id(key), key)
    return keys


def key_id(key: str) -> str:
    """A fingerprint that tells keys apart without revealing them, kept beside each concealed format."""
    return hmac.new(bytes.fromhex(key), b"django-segment-seq key id", hashlib.sha256).hexdigest()[:16]


def tweak_of(sequence_name: str) -> str:
    """The 56-bit FF3-1 tweak of a sequence: sequences sharing a key get unrelated permutations."""
    return hashlib.sha256(f"django-segment-seq:{sequence_name}".encode()).hexdigest()[:14]


@lru_cache(maxsize=64)
def _cipher(key: str, tweak: str) -> Any:
    try:
        # Optional (only projects that conceal install ff3) and untyped: a user's mypy ignores it, installed or not.
        from ff3 import FF3Cipher  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as exc:
        raise ConcealUnavailable(
            "conceal=True needs the ff3 package: pip install 'django-segment-seq[conceal]'"
        ) from exc
    return FF3Cipher(key, tweak, radix=10)


class Concealment:
    """The permutation of one sequence's numbers of `width` digits, under the key configured now."""

    def __init__(self, sequence_name: str, width: int) -> None:
        self.sequence_name = sequence_name
        self.width = width
        self.tweak = tweak_of(sequence_name)

    def _digits(self, number: int) -> str:
        if not 0 <= number < 10**self.width:
            raise ValueError(f"{number} does not fit the {self.width} digits of a concealed {self.sequence_name!r}")
        return format(number, f"0{self.width}d")

    def conceal(self, number: int) -> int:
        """The number shown in place of `number`."""
        return int(_cipher(current_key(self.sequence_name), self.tweak).encrypt(self._digits(number)))

    def reveal(self, shown: int, key: str | None = None) -> int:
        """The number that conceal() showed as `shown`, under `key` (by default the one configured now)."""
        key = current_key(self.sequence_name) if key is None else key
        return int(_cipher(key, self.tweak).decrypt(self._digits(shown)))
