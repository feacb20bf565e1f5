"""The hand-written instruction pool (actors/loading/instruction_pool/): deterministic, distinct, spread over every
task family, bounded in size, and held out from the ``sample`` questions (no shared run of six words)."""
import json
import re
import time
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from actors.loading import instruction_pool as pool

SAMPLE = Path(__file__).resolve().parents[1] / "jobs/data/sample_questions.jsonl"


@lru_cache(maxsize=None)
def labelled(n: int, seed: int = 0):
    return tuple(pool.labelled_prompts(n, seed))


def words(text: str, join_punctuation: bool) -> list[str]:
    """Lower-case words with punctuation stripped: either deleted (``don't`` -> ``dont``) or read as a gap."""
    text = text.lower()
    return re.sub(r"[^\w\s]", "", text).split() if join_punctuation else re.findall(r"\w+", text)


def six_grams(ws: list[str]) -> set[tuple[str, ...]]:
    return {tuple(ws[i:i + 6]) for i in range(len(ws) - 5)}


def test_same_seed_same_list_and_other_seed_other_list():
    assert pool.varied_prompts(300, seed=3) == pool.varied_prompts(300, seed=3)
    assert pool.varied_prompts(300, seed=3) != pool.varied_prompts(300, seed=4)
    assert pool.varied_prompts(300) == pool.varied_prompts(300, seed=0)
    assert pool.varied_prompts(100, seed=3) == pool.varied_prompts(300, seed=3)[:100]   # prefix-stable


def test_prompts_are_distinct_strings():
    prompts = [p for _, p in labelled(20000)]
    assert len(prompts) == 20000 and len(set(prompts)) == 20000
    assert all(isinstance(p, str) and p.strip() == p and p for p in prompts)
    assert pool.varied_prompts(0) == []


def test_too_many_prompts_is_a_clear_error():
    assert pool.CAPACITY >= 20000
    with pytest.raises(ValueError) as err:
        pool.varied_prompts(pool.CAPACITY + 1)
    message = str(err.value)
    assert str(pool.CAPACITY) in message and "\n" not in message
    with pytest.raises(ValueError):
        pool.varied_prompts(-1)


def test_capacity_counts_every_template():
    assert pool.template_count() >= 250
    assert all(pool.template_count(f) >= 15 for f in pool.FAMILIES)
    assert pool.CAPACITY == sum(t.size for t in pool._TEMPLATES)
    for t in pool._TEMPLATES:                       # every template renders at both ends of its numbering
        assert t.render(0) and t.render(t.size - 1)


def test_every_family_is_well_represented():
    assert len(pool.FAMILIES) == 15
    counts = Counter(f for f, _ in labelled(2000))
    assert set(counts) == set(pool.FAMILIES)
    for family in pool.FAMILIES:
        assert counts[family] >= 0.03 * 2000, (family, counts[family])


def test_no_prompt_shares_six_words_with_a_sample_question():
    turns = [t for line in SAMPLE.read_text().splitlines() if line.strip() for t in json.loads(line)["turns"]]
    assert len(turns) > 30
    for join in (True, False):
        held = set().union(*(six_grams(words(t, join)) for t in turns))
        for _, prompt in labelled(20000):
            shared = six_grams(words(prompt, join)) & held
            assert not shared, (prompt, shared)


def test_no_unfilled_slots_and_bounded_length():
    snippets = sorted(pool.CODE_SNIPPETS, key=len, reverse=True)
    assert len(snippets) >= 25
    for family, prompt in labelled(20000):
        assert len(prompt) <= 1500, prompt
        outside_code = prompt
        if family == "code_editing":
            outside_code = next(prompt.replace(s, "") for s in snippets if s in prompt)
        assert "{" not in outside_code and "}" not in outside_code, prompt


def test_code_snippets_arrive_verbatim():
    edits = [p for f, p in labelled(20000) if f == "code_editing"]
    assert edits and all(any(s in p for s in pool.CODE_SNIPPETS) for p in edits)
    assert any("{" in s and "}" in s for s in pool.CODE_SNIPPETS)       # braces survive composition


def test_fast():
    start = time.perf_counter()
    pool.varied_prompts(5000, seed=11)
    assert time.perf_counter() - start < 1.0
