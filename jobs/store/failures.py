"""Failures of a sweep as one line each: the root cause of a (possibly Ray-wrapped) error, and the
full traceback appended to the output folder's error log (or a temporary file) whose path the line names."""
from __future__ import annotations

import os
import re
import tempfile
import time
import traceback
from pathlib import Path

from jobs.store.output import ERRORS, is_sweep_output, record_written
from policies.errors import SpecsweepError


def first_line(e: BaseException) -> str:
    """The first line of an error's message (colour codes dropped, at most 300 characters)."""
    text = _ANSI.sub("", str(e)).strip()
    return (text.splitlines() or [type(e).__name__])[0][:300]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit))(?:\([^)]*\))?: (.+)$")


def root_cause(e: BaseException) -> str:
    """One line naming the original error behind a (possibly Ray-wrapped) exception.

    A ``SpecsweepError`` raised anywhere (an actor included) reads as its own message;
    any other error as ``Type: message``.
    """
    seen = set()
    while getattr(e, "cause", None) is not None and id(e) not in seen:   # RayTaskError → the user's exception
        seen.add(id(e))
        e = e.cause
    if isinstance(e, SpecsweepError):
        return first_line(e)
    text = _ANSI.sub("", str(e))
    for line in reversed([ln.strip() for ln in text.splitlines() if ln.strip()]):
        m = _EXC_LINE.match(line)
        if m:          # a remote traceback rendered as text: its last "Type: message" line is the cause
            return m.group(2)[:300] if m.group(1) == "SpecsweepError" else f"{m.group(1)}: {m.group(2)[:300]}"
    return f"{type(e).__name__}: {first_line(e)}"


def error_log(cfg) -> Path:
    """The output folder's error log."""
    return Path(cfg.output) / ERRORS


def record_error(cfg, where: str, e: BaseException) -> Path:
    """Append the full traceback of ``e`` to the output folder's error log; returns its path."""
    path = error_log(cfg)
    record_written(path, cfg.output)
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} {where}\n{_ANSI.sub('', text)}\n")
    return path


def internal_error_log(cfg, e: BaseException) -> Path | None:
    """Where an unexpected error's traceback goes: the output folder's error log (a sweep output only, never
    another folder), else — or when that cannot be written (a full disk) — a temporary file; None when neither
    can. Never raises: the error being reported comes first."""
    try:
        if cfg is not None and Path(cfg.output).is_dir() and is_sweep_output(Path(cfg.output)):
            return record_error(cfg, "internal error", e)
    except OSError:
        pass
    try:
        fd, name = tempfile.mkstemp(prefix="specsweep-error-", suffix=".log")
        with os.fdopen(fd, "w") as f:
            f.write("".join(traceback.format_exception(type(e), e, e.__traceback__)))
        return Path(name)
    except OSError:
        return None
