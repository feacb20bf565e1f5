"""Spec-Bench questions: loading, validating and filtering.

Sources (``dataset.source``):
``sample``      34 questions written for specsweep in Spec-Bench's format: two per Spec-Bench
                category, the MT-bench ones two-turn, and 8 in ``editing`` (:data:`SAMPLE_EXTRA`:
                code editing and multi-turn rewriting, each answer repeating much of the last, the
                workload suffix decoding is for; not a Spec-Bench category, so the Spec-Bench
                tables count it only in ``overall``); shipped with the package.
``specbench``   Spec-Bench's ``question.jsonl`` (480 questions), downloaded once from
                the Spec-Bench GitHub repository, cached, sha256-checked.
a path          a local JSONL file in Spec-Bench's / MT-Bench's ``question.jsonl`` format or
                SPEED-Bench's (the accepted fields: ``jobs/question_file.py``).

A category filter names categories of the source: Spec-Bench's for ``sample`` and
``specbench``; for a file, Spec-Bench's or any the file holds (e.g. SPEED-Bench's
``multilingual``).
"""
from __future__ import annotations

import hashlib
import urllib.request
from pathlib import Path
from typing import Iterable

from actors.loading.shared_cache import build_once, cache_root
from jobs.question_file import Question, parse_jsonl  # noqa: F401  (re-exported: the loader's API)
from policies.errors import SpecsweepError

MT_BENCH = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")
CATEGORIES = MT_BENCH + ("translation", "summarization", "qa", "math_reasoning", "rag")
SAMPLE_EXTRA = ("editing",)       # the sample's own categories beyond Spec-Bench's (module doc)
GROUPS = {"mt_bench": MT_BENCH, "translation": ("translation",), "summarization": ("summarization",),
          "qa": ("qa",), "math_reasoning": ("math_reasoning",), "rag": ("rag",)}
GROUP_ORDER = ("mt_bench", "translation", "summarization", "qa", "math_reasoning", "rag", "overall")
SPECBENCH_URL = "https://raw.githubusercontent.com/hemingkx/Spec-Bench/main/data/spec_bench/question.jsonl"
SPECBENCH_SHA256 = "4b6d33e79484f9841c487ee87d1cf6aa8c6066f61d5d482ff09e5a007fafdf04"
SAMPLE = Path(__file__).resolve().parent / "data" / "sample_questions.jsonl"


def group_of(category: str) -> str:
    for g, cats in GROUPS.items():
        if category in cats:
            return g
    return "other"


def specbench_path(cache: Path | None = None) -> Path:
    """The cached Spec-Bench question file, downloaded and verified on first use (written once under a lock and
    renamed into place, so racing sweeps never read half a file: actors/loading/shared_cache.py)."""
    path = (cache or cache_root()) / "spec_bench" / "question.jsonl"

    def verified(p: Path) -> bool:
        return p.is_file() and _sha256(p) == SPECBENCH_SHA256

    return build_once(path, _download_specbench, f"the Spec-Bench questions ({path})", ready=verified)


def _download_specbench(tmp: Path) -> None:
    try:
        with urllib.request.urlopen(SPECBENCH_URL, timeout=30) as r:
            data = r.read()
    except Exception as e:  # network errors come in many types
        raise SpecsweepError(f"cannot download Spec-Bench questions ({type(e).__name__}); offline? pass a local copy: "
                             "set dataset.source to /path/to/question.jsonl") from None
    if hashlib.sha256(data).hexdigest() != SPECBENCH_SHA256:
        raise SpecsweepError("downloaded Spec-Bench question.jsonl has an unexpected sha256; pass a local copy instead")
    tmp.write_bytes(data)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_questions(source: str = "sample", categories: Iterable[str] | None = None, limit_per_category: int | None = None,
                   question_ids: Iterable[int] | None = None) -> list[Question]:
    """Load and filter; raises before any model loads if the filter selects nothing."""
    if source == "sample":
        path = SAMPLE
    elif source == "specbench":
        path = specbench_path()
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise SpecsweepError(f"dataset source {source!r} is not 'sample', 'specbench' or an existing file")
    qs = parse_jsonl(path)
    if categories:
        cats = list(categories)
        valid = CATEGORIES + SAMPLE_EXTRA if source == "sample" else CATEGORIES if source == "specbench" else \
            CATEGORIES + tuple(sorted({q.category for q in qs} - set(CATEGORIES)))
        bad = [c for c in cats if c not in valid]
        if bad:
            raise SpecsweepError(f"unknown category {bad[0]!r}: valid categories are {', '.join(valid)}")
        qs = [q for q in qs if q.category in cats]
    if question_ids:
        ids = set(int(i) for i in question_ids)
        missing = sorted(ids - {q.question_id for q in qs})
        if missing:
            where = f" in categories {list(categories)}" if categories else ""
            known = sorted(q.question_id for q in qs)
            raise SpecsweepError(f"question id {missing[0]} is not in {source}{where}: valid ids are "
                                 f"{known[0]}–{known[-1]} ({len(known)} questions)" if known else
                                 f"question id {missing[0]} is not in {source}{where}")
        qs = [q for q in qs if q.question_id in ids]
    if limit_per_category is not None:
        if limit_per_category < 1:
            raise SpecsweepError(f"limit_per_category must be >= 1, got {limit_per_category}")
        kept, count = [], {}
        for q in qs:
            count[q.category] = count.get(q.category, 0) + 1
            if count[q.category] <= limit_per_category:
                kept.append(q)
        qs = kept
    if not qs:
        raise SpecsweepError(f"the dataset filter selects no questions from {source} "
                             f"(categories={list(categories or [])}, question_ids={list(question_ids or [])})")
    return qs
