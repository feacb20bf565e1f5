"""A chat-instruction pool written for specsweep: millions of distinct requests composed from hand-written
templates and slot lists, spanning the Spec-Bench task families (writing, roleplay, reasoning, maths, maths word
problems, coding, extraction, STEM, humanities, translation, summarization, retrieval-augmented QA and factual QA)
plus code editing and text editing, so that a draft head distilled on the target's answers sees the breadth of
requests it will be evaluated on; every line of text (templates, snippets, passages, foreign sentences) was written
for this package, and none of it shares a run of six words with the held-out ``sample`` questions
(``jobs/data/sample_questions.jsonl``), which ``tests/test_instruction_pool.py`` checks. This module draws from the
pool (``varied_prompts``, ``labelled_prompts``); ``composer`` holds the template machinery, ``slots`` the shared slot
lists, and one module per group of families holds their data (``writing_roleplay``, ``reasoning_math``, ``coding``
with ``code_snippets``, ``language``, ``reading``, ``knowledge``).
"""
from __future__ import annotations

import random

from .code_snippets import CODE_SNIPPETS
from .coding import CODE_EDIT_TEMPLATES, CODING_TEMPLATES
from .composer import _Template
from .knowledge import HUMANITIES_TEMPLATES, QA_TEMPLATES, STEM_TEMPLATES
from .language import TEXT_EDIT_TEMPLATES, TRANSLATION_TEMPLATES
from .reading import EXTRACTION_TEMPLATES, RAG_TEMPLATES, SUMMARIZATION_TEMPLATES
from .reasoning_math import MATH_TEMPLATES, REASONING_TEMPLATES, WORD_PROBLEM_TEMPLATES
from .writing_roleplay import ROLEPLAY_TEMPLATES, WRITING_TEMPLATES

__all__ = ["FAMILIES", "CAPACITY", "CODE_SNIPPETS", "labelled_prompts", "template_count", "varied_prompts"]

# ==============================================================================================================
# The pool
# ==============================================================================================================
_BY_FAMILY = {
    "writing": WRITING_TEMPLATES,
    "roleplay": ROLEPLAY_TEMPLATES,
    "reasoning": REASONING_TEMPLATES,
    "math": MATH_TEMPLATES,
    "math_word_problems": WORD_PROBLEM_TEMPLATES,
    "coding": CODING_TEMPLATES,
    "code_editing": CODE_EDIT_TEMPLATES,
    "text_editing": TEXT_EDIT_TEMPLATES,
    "extraction": EXTRACTION_TEMPLATES,
    "stem": STEM_TEMPLATES,
    "humanities": HUMANITIES_TEMPLATES,
    "translation": TRANSLATION_TEMPLATES,
    "summarization": SUMMARIZATION_TEMPLATES,
    "rag": RAG_TEMPLATES,
    "qa": QA_TEMPLATES,
}
FAMILIES: tuple[str, ...] = tuple(_BY_FAMILY)
_TEMPLATES: tuple[_Template, ...] = tuple(t for templates in _BY_FAMILY.values() for t in templates)
for _family, _templates in _BY_FAMILY.items():
    for _template in _templates:
        _template.family = _family
# Every template numbers its prompts 0 .. size-1 and no two (template, number) pairs give the same text, so the
# pool holds exactly this many distinct prompts.
CAPACITY: int = sum(t.size for t in _TEMPLATES)


def template_count(family: str | None = None) -> int:
    """How many templates the pool composes from (all families, or one)."""
    return len(_TEMPLATES) if family is None else len(_BY_FAMILY[family])


def labelled_prompts(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct ``(family, prompt)`` pairs: each draw picks a family uniformly, then one of its templates
    uniformly, then a not-yet-used composition of that template (a lazy Fisher-Yates shuffle per template, so no
    draw is ever rejected). The list depends only on ``seed``, and a shorter list is a prefix of a longer one."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if n > CAPACITY:
        raise ValueError(f"n={n} exceeds the {CAPACITY} distinct prompts the instruction pool can compose")
    rng = random.Random(seed)
    live = {f: list(range(len(ts))) for f, ts in _BY_FAMILY.items()}
    families = list(FAMILIES)
    left = {}      # (family, template index) -> compositions not drawn yet
    swaps = {}     # (family, template index) -> sparse Fisher-Yates swap table
    out: list[tuple[str, str]] = []
    while len(out) < n:
        fi = rng.randrange(len(families))
        family = families[fi]
        ti = rng.randrange(len(live[family]))
        key = (family, live[family][ti])
        template = _BY_FAMILY[family][key[1]]
        m = left.get(key, template.size)
        table = swaps.setdefault(key, {})
        j = rng.randrange(m)
        index = table.get(j, j)
        table[j] = table.pop(m - 1, m - 1)
        left[key] = m - 1
        if m == 1:
            live[family].pop(ti)
            if not live[family]:
                families.pop(fi)
        out.append((family, template.render(index)))
    return out


def varied_prompts(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct chat instructions, roughly even across ``FAMILIES``; the same list for the same seed.

    Raises ``ValueError`` when ``n`` exceeds ``CAPACITY``, the number of distinct prompts the pool can compose."""
    return [prompt for _, prompt in labelled_prompts(n, seed)]
