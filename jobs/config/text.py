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


def check_config_texts(cfg) -> None:
    """:func:`check_text` on every name and model path of ``cfg``, and num_gpus against the device."""
    check_text("name", cfg.name)
    check_text("experiment", cfg.experiment)
    check_text("output", cfg.output, MAX_PATH)
    for i, p in enumerate(cfg.pairs):
        check_text(f"pairs[{i}].name", p.name)
        check_text(f"pairs[{i}].target", p.target, MAX_PATH)
        if p.draft is not None:
            check_text(f"pairs[{i}].draft", p.draft, MAX_PATH)
        if p.device.startswith("cuda") and p.num_gpus < 1:
            raise SpecsweepError(f"config pairs[{i}].num_gpus: is {p.num_gpus} with device {p.device}: a pair on a "
                                 "GPU reserves whole GPUs, an integer >= 1 (or use device cpu or auto)")
