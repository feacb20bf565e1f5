"""Question files: the JSONL formats ``dataset.source`` reads, validated line by line.

One JSON object per line (blank lines are skipped), UTF-8 with or without a byte-order mark; a
file may mix the formats below, since every line is checked against the same fields:

- **Spec-Bench / MT-Bench** ``question.jsonl``: ``question_id`` (an integer), ``category``
  (a non-empty string), ``turns`` (a non-empty list of non-empty strings, one per user turn)
  and optionally ``reference`` (a list: reference answers, kept and not used).
- **SPEED-Bench** rows written as JSON lines: ``question_id`` (a string or an integer),
  ``category``, ``turns``, and optionally ``sub_category``, ``source``, ``src_id``,
  ``difficulty`` (strings or null) and ``multiturn`` (a boolean or null), read and not used.

Rules:
- Any other field is refused, as are a wrong type, empty ``turns``, a turn that is not a
  non-empty string, a missing field, a line that is not a JSON object (also one nested too deep
  or holding a number past Python's digit limit), a duplicate id and a file without questions:
  one line each, naming the file and the line number (and, for an unknown field, the field and
  the valid fields). Nothing is read past the first problem. A file that cannot be read (a
  folder, no permission) or is not UTF-8 is one line naming the file.
- The rows store integer ids, so a string ``question_id`` is mapped by :func:`numeric_id`:
  a decimal string that fits a signed 64-bit integer (the range an integer id may take) is
  that number; any other string, a longer decimal one included, is the first 48 bits of its
  SHA-256 — the same integer for the same id in any file and any order. Two ids that map to one
  integer are a duplicate.
- A turn that is still SPEED-Bench's release placeholder (``TURNS_PLACEHOLDER``: the released
  rows of some sources hold it instead of the prompt) is refused: those prompts must be
  resolved into the file first.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from policies.errors import SpecsweepError

REQUIRED = ("question_id", "category", "turns")
OPTIONAL = {"reference": (list,), "sub_category": (str,), "source": (str,), "src_id": (str,),
            "difficulty": (str,), "multiturn": (bool,)}          # null is accepted for each
FIELDS = REQUIRED + tuple(OPTIONAL)
TURNS_PLACEHOLDER = "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE"
INT64_MAX = 2 ** 63 - 1


@dataclass(frozen=True)
class Question:
    question_id: int
    category: str
    turns: tuple[str, ...]
    reference: tuple = field(default=(), compare=False)


def numeric_id(qid: int | str) -> int:
    """The integer id the rows store for ``qid`` (see the module docstring)."""
    if isinstance(qid, int):
        return qid
    s = qid.strip()
    if s.isdecimal() and len(s) <= 19 and int(s) <= INT64_MAX:    # the length first: int() of 5000 digits raises
        return int(s)
    return int(hashlib.sha256(qid.encode("utf-8", "surrogatepass")).hexdigest()[:12], 16)


def _type_name(v) -> str:
    return "null" if v is None else type(v).__name__


def parse_line(d, where: str) -> Question:
    """One line's object as a :class:`Question`; raises :class:`SpecsweepError` naming ``where``."""
    if not isinstance(d, dict):
        raise SpecsweepError(f"{where}: expected a JSON object with question_id, category, turns")
    unknown = [k for k in d if k not in FIELDS]
    if unknown:
        raise SpecsweepError(f"{where}: unknown field {unknown[0]!r} (valid fields: {', '.join(FIELDS)})")
    missing = [k for k in REQUIRED if k not in d]
    if missing:
        raise SpecsweepError(f"{where}: missing field {missing[0]!r} (need question_id, category, turns)")
    qid = d["question_id"]
    if isinstance(qid, bool) or not isinstance(qid, (int, str)) or (isinstance(qid, str) and not qid.strip()):
        raise SpecsweepError(f"{where}: question_id must be an integer or a non-empty string, got {qid!r}")
    if not isinstance(d["category"], str) or not d["category"].strip():
        raise SpecsweepError(f"{where}: category must be a non-empty string, got {d['category']!r}")
    turns = d["turns"]
    if not isinstance(turns, list):
        raise SpecsweepError(f"{where}: turns must be a list of strings, got {_type_name(turns)}")
    if not turns:
        raise SpecsweepError(f"{where}: question {qid} has no turns (need a non-empty list of strings)")
    if not all(isinstance(t, str) and t.strip() for t in turns):
        raise SpecsweepError(f"{where}: question {qid} has a turn that is not a non-empty string")
    if any(t.lstrip().startswith(TURNS_PLACEHOLDER) for t in turns):
        raise SpecsweepError(f"{where}: question {qid} holds SPEED-Bench's placeholder instead of a prompt; "
                             "resolve its turns from their source into the file first")
    for k, types in OPTIONAL.items():
        if d.get(k) is not None and not isinstance(d[k], types):
            kind = "a list" if types[0] is list else "a " + types[0].__name__
            raise SpecsweepError(f"{where}: {k} must be {kind} or null, got {_type_name(d[k])}")
    return Question(numeric_id(qid), d["category"], tuple(turns), tuple(d.get("reference") or ()))


def parse_jsonl(path: Path) -> list[Question]:
    """Questions from a question file (module docstring); the first problem is named by file and line."""
    try:
        return _parse_lines(path)
    except SpecsweepError:
        raise
    except UnicodeDecodeError as e:
        raise SpecsweepError(f"{path}: not a UTF-8 text file (byte {e.start}): save it as UTF-8 JSON lines") from None
    except OSError as e:                           # a folder, no permission, an I/O error
        raise SpecsweepError(f"{path}: cannot be read as a question file ({e.strerror or type(e).__name__}): "
                             "give a readable JSONL file") from None


def _parse_lines(path: Path) -> list[Question]:
    out, seen = [], {}
    with open(path, encoding="utf-8-sig") as f:     # -sig: a leading byte-order mark (Windows editors) is dropped
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{no}"
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                raise SpecsweepError(f"{where}: not valid JSON ({e.msg})") from None
            except RecursionError:
                raise SpecsweepError(f"{where}: not readable JSON (nested too deep)") from None
            except ValueError as e:                # a number past Python's digit limit
                raise SpecsweepError(f"{where}: not readable JSON ({str(e).split(';')[0][:120]})") from None
            q = parse_line(d, where)
            if not -INT64_MAX <= q.question_id <= INT64_MAX:
                digits = str(abs(q.question_id))
                shown = q.question_id if len(digits) <= 24 else \
                    f"{'-' * (q.question_id < 0)}{digits[:12]}… ({len(digits)} digits)"
                raise SpecsweepError(f"{where}: question_id {shown} does not fit a 64-bit integer")
            if q.question_id in seen:
                raw = d["question_id"]
                also = "" if raw == q.question_id else f" (as {q.question_id})"
                first = seen[q.question_id]
                raise SpecsweepError(f"{where}: duplicate question_id {raw!r}{also}, first on line {first}")
            seen[q.question_id] = no
            out.append(q)
    if not out:
        raise SpecsweepError(f"{path}: no questions in file")
    return out
