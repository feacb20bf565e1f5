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
                SPEED-Bench's (the accepted fields: ``jobs/question_file.py``). A relative path is
                relative to the directory the command runs in (not the config file's folder);
                ``~`` is expanded. A path that does not exist or is not a regular file (a folder,
                a device) is refused in one line naming its absolute path.

A category filter names categories of the source: Spec-Bench's for ``sample`` and
``specbench``; for a file, Spec-Bench's or any the file holds (e.g. SPEED-Bench's
``multilingual``). A valid category the source does not hold is refused, naming the categories
it holds (it would select nothing, or be dropped silently beside others). An id of a
``question_ids`` filter that is not in the selection is refused, naming the valid ids: all of
them when at most ten, as a range when they run without gaps, else the first five and the count.
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


def load_questions(source: str = "sample", categories: Iterable[str] | None = None,
                   limit_per_category: int | None = None, question_ids: Iterable[int] | None = None) -> list[Question]:
    """Load and filter (rules: module docstring); raises before any model loads if the filter selects nothing."""
    path, name = _source_path(source)
    qs = parse_jsonl(path)
    if categories:
        cats = list(categories)
        valid = CATEGORIES + SAMPLE_EXTRA if source == "sample" else CATEGORIES if source == "specbench" else \
            CATEGORIES + tuple(sorted({q.category for q in qs} - set(CATEGORIES)))
        bad = [c for c in cats if c not in valid]
        if bad:
            raise SpecsweepError(f"unknown category {bad[0]!r}: valid categories are {', '.join(valid)}")
        held = list(dict.fromkeys(q.category for q in qs))
        absent = [c for c in cats if c not in held]
        if absent:
            raise SpecsweepError(f"category {absent[0]!r} is not in {name}: it holds categories {', '.join(held)}")
        qs = [q for q in qs if q.category in cats]
    if question_ids:
        ids = set(int(i) for i in question_ids)
        missing = sorted(ids - {q.question_id for q in qs})
        if missing:
            where = f" in categories {list(categories)}" if categories else ""
            known = sorted(q.question_id for q in qs)
            raise SpecsweepError(f"question id {missing[0]} is not in {name}{where}: valid ids are {_ids_text(known)}"
                                 if known else f"question id {missing[0]} is not in {name}{where}")
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
        raise SpecsweepError(f"the dataset filter selects no questions from {name} "
                             f"(categories={list(categories or [])}, question_ids={list(question_ids or [])})")
    return qs


def _source_path(source: str) -> tuple[Path, str]:
    """The question file of ``source`` and its name in messages (a file's: its absolute path); a path that is not
    an existing regular file is refused in one line (module docstring)."""
    if source == "sample":
        return SAMPLE, source
    if source == "specbench":
        return specbench_path(), source
    try:
        given = Path(source).expanduser()
    except RuntimeError:                            # ~user of an unknown user: taken as written
        given = Path(source)
    path = given.absolute()                         # relative: to the working directory (module docstring)
    rel = "" if given.is_absolute() else " (a relative path is read from the working directory)"
    try:
        exists, is_file, is_dir = path.exists(), path.is_file(), path.is_dir()
    except OSError as e:                            # a name too long, a folder on the way that cannot be searched
        raise SpecsweepError(f"dataset source {path} cannot be checked ({e.strerror or type(e).__name__}): "
                             "give a JSONL file, 'sample' or 'specbench'") from None
    if not exists:
        raise SpecsweepError(f"dataset source {source!r} is not 'sample', 'specbench' or an existing file: "
                             f"{path} does not exist{rel}")
    if not is_file:
        what = "a directory" if is_dir else "a special file (a device, a pipe)"
        raise SpecsweepError(f"dataset source {path} is {what}, not a question file "
                             "(give a JSONL file, 'sample' or 'specbench')")
    return path, str(path)


def _ids_text(known: list[int]) -> str:
    """Sorted ids as a message names them: all when at most ten, a range when gapless, else five and the count."""
    if len(known) <= 10:
        return ", ".join(map(str, known))
    if known[-1] - known[0] == len(known) - 1:
        return f"{known[0]}–{known[-1]} ({len(known)} questions)"
    return f"e.g. {', '.join(map(str, known[:5]))} ({len(known)} questions)"
