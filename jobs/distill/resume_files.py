"""The files a distillation resumes from (``answers-*.pt``, ``features-*.pt``, ``checkpoint.pt``, ``curve.json``,
``distill_config.json``, ``vocab_map.json``, ``draft_vocab.json``, ``own_texts.json``).

Rule: each is written whole to a temporary twin (``<name>.tmp``, which no resume reads) and renamed over its final
name only once its bytes are on the disk (``jobs/store/durable.py``), so a Ctrl-C, a kill or a power cut leaves the
old file or the whole new one, never a torn one. A file that still cannot be read (one torn before this rule, or
damaged since) is refused in one line that names it and says to delete it: the next run redoes what it held.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from jobs.store.durable import durable_replace
from policies.errors import SpecsweepError


def _twin(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


def save_atomically(obj, path: Path) -> None:
    """``torch.save(obj)`` to ``path`` through its twin (see the module docstring)."""
    tmp = _twin(path)
    torch.save(obj, tmp)
    durable_replace(tmp, path)


def write_atomically(text: str, path: Path) -> None:
    """``text`` (UTF-8) to ``path`` through its twin (see the module docstring)."""
    tmp = _twin(path)
    tmp.write_text(text, encoding="utf-8")
    durable_replace(tmp, path)


def unreadable(path: Path, err: BaseException) -> SpecsweepError:
    """The one-line refusal of a resume file that cannot be read."""
    return SpecsweepError(f"distill cannot read {path} ({type(err).__name__}: torn by an interrupted save or damaged "
                          f"since): delete {path} and run the same command again to redo what it held")


def load_resume(path: Path, **kwargs):
    """``torch.load(path, **kwargs)``, or the one-line refusal naming ``path`` when it cannot be read."""
    try:
        return torch.load(path, **kwargs)
    except Exception as err:            # any failure: the file is unusable, and deleting it is the remedy
        raise unreadable(path, err) from err


def read_json(path: Path):
    """``path``'s JSON, or the one-line refusal naming ``path`` when it cannot be read or parsed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:     # ValueError: JSONDecodeError and UnicodeDecodeError
        raise unreadable(path, err) from err
