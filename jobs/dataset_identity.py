"""What a sweep's questions are, as one digest.

Rule: digest = the first 12 hex digits of SHA-256 over the JSON of the sorted (question id, category, turns)
triples of the selected questions. It names the questions in MLflow's dataset entity
(``jobs/mlflow/artifacts.py``) and, for a question file, joins the config's fingerprint
(``SweepConfig.fingerprint``): the same YAML run from another folder, or after the file's selected questions were
edited, is another sweep, so an output folder never resumes one file's results under another's questions. The
built-in sources (``sample``, ``specbench``) ship with specsweep and keep the fingerprints they had.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Iterable

from jobs.dataset import load_questions

BUILT_IN = ("sample", "specbench")


def content_digest(questions: Iterable[tuple[int, str, tuple[str, ...]]]) -> str:
    """The digest of (question id, category, turns) triples (module rule)."""
    content = sorted({(int(q), str(c), tuple(t)) for q, c, t in questions})
    return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:12]


def file_selection_digest(source: str, categories=None, limit_per_category=None, question_ids=None) -> str | None:
    """The digest of the questions a sweep's ``dataset`` selects from a question file; None for a built-in source.
    Read once per file state (path, modification time, size) and filter."""
    if source in BUILT_IN:
        return None
    path = Path(source).expanduser().resolve()
    stat = path.stat()
    return _selected(str(path), stat.st_mtime_ns, stat.st_size, tuple(categories or ()), limit_per_category,
                     tuple(question_ids or ()))


@functools.lru_cache(maxsize=32)
def _selected(path: str, _mtime: int, _size: int, categories: tuple, limit, question_ids: tuple) -> str:
    qs = load_questions(path, list(categories) or None, limit, list(question_ids) or None)
    return content_digest((q.question_id, q.category, q.turns) for q in qs)
