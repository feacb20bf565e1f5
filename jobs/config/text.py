"""The printable-text rule for the names and paths a sweep config gives (``jobs/config/__init__.py`` applies it to every one).
"""
from __future__ import annotations

import unicodedata

from policies.errors import SpecsweepError

MAX_NAME = 200
MAX_PATH = 4096
BIDI = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))


def check_text(path: str, value: str, limit: int = MAX_NAME) -> None:
    """Rule for names and paths a sweep prints, logs and files results under: at most ``limit`` characters, none a
    control character (NUL, newline, tab, … : Unicode Cc), a line or paragraph separator (U+2028, U+2029) or a
    bidirectional override (U+202A–U+202E, U+2066–U+2069), which would forge or hide text where it is shown."""
    if len(value) > limit:
        raise SpecsweepError(f"config {path}: is {len(value)} characters long; use at most {limit}")
    for i, ch in enumerate(value):
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ord(ch) in BIDI:
            raise SpecsweepError(f"config {path}: holds the control character U+{ord(ch):04X} at position {i}; use printable text only")
