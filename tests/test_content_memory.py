"""``bench/content_memory.py``: its new passages are in no training prompt set and share no six-word run with the
pool or the held-out ``sample`` questions; both passage sets give the same reading tasks; a run on a tiny pair
prints one lossless row per head."""
import sys

from actors.loading.instruction_pool import labelled_prompts
from actors.loading.instruction_pool.own_texts import six_word_runs
from actors.loading.instruction_pool.reading import PASSAGES
from actors.loading.tiny_pair import save_tiny_pair
from bench import content_memory as cm
from jobs.dataset import load_questions


def test_new_passages_are_new_to_the_pool_and_to_the_sample_questions():
    pool = set().union(*(six_word_runs(p) for p, _ in PASSAGES))
    pool |= set().union(*(six_word_runs(p) for _, p in labelled_prompts(20000, seed=0)))
    sample = set().union(*(six_word_runs(t) for q in load_questions("sample") for t in q.turns))
    for p in cm.NEW_PASSAGES:
        assert not six_word_runs(p) & pool, p
        assert not six_word_runs(p) & sample, p
    assert len(set(cm.NEW_PASSAGES)) == len(cm.NEW_PASSAGES) >= 12


def test_both_sets_get_the_same_reading_tasks():
    new, pool = cm.prompts(cm.NEW_PASSAGES), cm.prompts(cm.pool_passages(len(cm.NEW_PASSAGES)))
    assert len(new) == len(pool) == len(cm.FRAMES) * len(cm.NEW_PASSAGES)
    strip = [(a.replace(p, "P"), b.replace(q, "P"))
             for p, q, a, b in zip([p for p in cm.NEW_PASSAGES for _ in cm.FRAMES],
                                   [q for q in cm.pool_passages(len(cm.NEW_PASSAGES)) for _ in cm.FRAMES], new, pool)]
    assert all(a == b for a, b in strip)
    assert cm.pool_passages(5) == cm.pool_passages(5) and set(cm.pool_passages(5)) <= {p for p, _ in PASSAGES}


def test_a_run_on_a_tiny_pair_prints_a_lossless_row_per_head(tmp_path, monkeypatch, capsys):
    target, draft = save_tiny_pair(tmp_path)
    monkeypatch.setattr(cm, "NEW_PASSAGES", cm.NEW_PASSAGES[:2])
    monkeypatch.setattr(sys, "argv", ["content_memory", "--target", target, "--heads", draft, "--max-new-tokens", "6"])
    assert cm.main() == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(draft[:32])]
    assert len(rows) == 1 and rows[0].split()[-1] == "True"
