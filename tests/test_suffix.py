"""Suffix decoding (``actors/drafting/suffix_drafter.py``, kind ``suffix``): hand-worked proposals, the cap and the confidence
stop, the global cache of responses (held, remembered, forgotten), greedy losslessness at B = 1 and B = 3,
``generate --draft``. Trees: ``tests/test_suffix_trees.py``; replay and request order: ``tests/test_suffix_replay.py``."""
import subprocess
import sys
from pathlib import Path

import pytest

from actors.drafter_kinds.registry import kind_of
from actors.core.engine import SpecEngine
from actors.drafting.suffix_drafter import ContextIndex, SuffixDrafter
from actors.loading.tiny_pair import llama, save_tiny_pair, sharpen
from policies.base import BatchPolicy
from policies.costs import CostModel
from policies.registry import build

ROOT = Path(__file__).resolve().parents[1]
VOCAB = 50
COSTS = CostModel.measured(0.002, {1: 0.01, 2: 0.011, 4: 0.013, 8: 0.018, 16: 0.03})


def _draft(drafter, tokens, k, row=0):
    drafter.reset(row + 1)
    return drafter.continuation(row, tokens, k)


def test_a_repeated_phrase_is_proposed():
    seq = [5, 6, 7, 8, 9, 1, 5, 6, 7]       # the suffix 5 6 7 occurred before, followed by 8 9 1
    assert _draft(SuffixDrafter(), seq, 6) == [8, 9, 1]                    # no longer than the match (3)
    assert _draft(SuffixDrafter(spec_factor=4.0), seq, 6) == [8, 9, 1, 5, 6, 7]   # the copy runs on
    assert _draft(SuffixDrafter(), seq, 2) == [8, 9]                       # the policy's cap
    assert _draft(SuffixDrafter(), seq, 1) == [8]
    assert _draft(SuffixDrafter(), [1, 2, 3, 4], 4) == []                 # nothing repeats: nothing proposed


def test_the_longest_match_wins_over_the_most_frequent_short_one():
    # after "3": 4 once, 5 twice; after "2 3": 4 only
    body = [1, 2, 3, 4, 8, 3, 5, 8, 3, 5]
    assert _draft(SuffixDrafter(spec_factor=1.0), body + [9, 2, 3], 1) == [4]   # "2 3" (2 tokens) beats "3"
    assert _draft(SuffixDrafter(), body + [6, 3], 1) == [5]                     # only "3" matches: 5 is more frequent


def test_the_confidence_rule_stops_a_draft():
    seq = [1, 2, 3, 4, 8, 3, 5, 8, 3, 5, 6, 3]      # after "3": 5 with frequency 2/3
    assert _draft(SuffixDrafter(min_prob=0.6), seq, 1) == [5]
    assert _draft(SuffixDrafter(min_prob=0.7), seq, 1) == []
    # the path's probability is a product: after "8 3" comes 5 (1/1); after "8 3 5", 8 once and 9 once (1/2, the
    # tie to the latest: 9); after "8 3 5 9", 8 (1/1): 1 · 1/2 · 1 ≥ 0.4, but 1/2 < 0.6 stops after the first
    seq = [8, 3, 5, 8, 3, 5, 9, 8, 3]
    assert _draft(SuffixDrafter(spec_factor=4.0, min_prob=0.4), seq, 3) == [5, 9, 8]
    assert _draft(SuffixDrafter(spec_factor=4.0, min_prob=0.6), seq, 3) == [5]


def test_ties_go_to_the_most_recent_continuation():
    assert _draft(SuffixDrafter(), [3, 4, 3, 5, 3], 1) == [5]
    assert _draft(SuffixDrafter(), [3, 5, 3, 4, 3], 1) == [4]


def test_the_index_counts_and_forgets():
    index = ContextIndex(depth=2)
    index.add([1, 2, 1, 2])
    assert index.get((1,)) == {2: [2, 3]} and index.get((2, 1)) == {2: [1, 3]}
    index.add([1, 2, 1, 2], sign=-1)
    assert index.table == {}


def test_the_global_cache_helps_a_second_request_with_the_same_answer():
    response = [10, 11, 12, 13, 14, 15]
    prompt = [99, 10, 11, 12]
    drafter = SuffixDrafter()
    assert _draft(drafter, prompt, 5) == []                    # nothing seen yet
    drafter.finished(response)
    assert _draft(drafter, prompt, 5) == [13, 14, 15]          # the earlier response continues the match
    drafter.clear()
    assert _draft(drafter, prompt, 5) == []


def test_the_cache_is_bounded_and_evicts_the_oldest_response():
    drafter = SuffixDrafter(cache_responses=1)
    drafter.finished([10, 11, 12, 13])
    assert _draft(drafter, [10, 11], 2) == [12, 13]
    drafter.finished([20, 21, 22])
    assert _draft(drafter, [10, 11], 2) == [] and _draft(drafter, [20, 21], 1) == [22]
    assert len(drafter.responses) == 1


def test_forgetting_a_response_leaves_ties_to_the_newest_one():
    # [1,2,3] twice then [1,2,4]: once the oldest [1,2,3] leaves (eviction or forget), the held texts are
    # [1,2,3] and [1,2,4], and the tie after (1, 2) goes to 4, the newer, as for a drafter that only ever saw those
    evicting = SuffixDrafter(cache_responses=2)
    forgetting = SuffixDrafter()
    for response in ([1, 2, 3], [1, 2, 3], [1, 2, 4]):
        evicting.remember(response)
        forgetting.remember(response)
    forgetting.forget([1, 2, 3])
    for drafter in (evicting, forgetting):
        drafter.reset(1)
        assert drafter.continuation(0, [5, 1, 2], 1) == [4]


def test_rows_keep_their_own_text_and_follow_keep_rows():
    drafter = SuffixDrafter()
    drafter.reset(2)
    drafter.begin([[1, 2, 3, 1, 2], [7, 8, 9, 7, 8]], [1, 1])
    assert drafter.next([0, 1]) == {0: (3, 1.0, 1.0, 0.0, None), 1: (9, 1.0, 1.0, 0.0, None)}
    drafter.keep_rows([1])
    drafter.begin([[7, 8, 9, 7, 8, 9, 7]], [1])
    assert drafter.next([0]) == {0: (8, 1.0, 1.0, 0.0, None)}


def _target():
    return sharpen(llama(vocab=VOCAB, seed=VOCAB))


def _prompts():
    return [[1, 2, 3, 4, 1, 2, 3, 4, 1, 2], [7], [5, 9, 5, 9, 5, 9, 11, 12, 13, 5, 9]]


def _policy(name, rows):
    pol = build(name, 4)
    return pol if isinstance(pol, BatchPolicy) else [pol] + [build(name, 4) for _ in range(rows - 1)]


@pytest.mark.parametrize("B", [1, 3])
def test_greedy_rows_equal_target_alone(B):
    target = _target()
    prompts = _prompts()[:B]
    refs = [SpecEngine(target).generate(p, build("ar"), max_new_tokens=24).token_ids for p in prompts]
    engine = SpecEngine(target, SuffixDrafter(), costs=COSTS)
    multi = 0
    for name in ("fixed", "gammatune", "gt", "tetris"):
        for _ in range(2):                   # the second pass drafts from the first pass's responses too
            outs = engine.generate_batch(prompts, _policy(name, B), max_new_tokens=24)
            assert [o.token_ids for o in outs] == refs, (name, B)
            assert all(sum(o.accept_lengths) == 24 for o in outs)
            multi += sum(a > 1 for o in outs for a in o.accept_lengths)
    assert multi > 0                          # not vacuous: drafts were accepted
    assert len(engine.drafter.responses) == 8 * B


def test_a_second_generation_of_the_same_prompt_takes_fewer_steps():
    target = _target()
    engine = SpecEngine(target, SuffixDrafter(), costs=COSTS)
    prompt = [3, 17, 29, 41]
    first = engine.generate(prompt, build("fixed", 6), max_new_tokens=32)
    second = engine.generate(prompt, build("fixed", 6), max_new_tokens=32)
    assert second.token_ids == first.token_ids
    assert second.decoding_steps < first.decoding_steps


def test_a_held_drafter_learns_only_what_it_is_told():
    target = _target()
    engine = SpecEngine(target, SuffixDrafter(), costs=COSTS)
    engine.drafter.hold(True)
    prompt = [3, 17, 29, 41]
    engine.generate(prompt, build("fixed", 6), max_new_tokens=16)
    assert len(engine.drafter.responses) == 0                     # the engine's hook learns nothing while held
    engine.drafter.remember([1, 2, 3])
    engine.drafter.remember([4, 5, 6])
    engine.drafter.forget([1, 2, 3])
    engine.drafter.forget([9, 9])                                 # never learnt (or evicted): nothing happens
    assert list(engine.drafter.responses) == [[4, 5, 6]] and _draft(engine.drafter, [4, 5], 1) == [6]
    assert _draft(engine.drafter, [1, 2], 1) == []


def test_the_kind_loads_a_suffix_drafter():
    drafter = kind_of("suffix").load(None, None, None)
    assert isinstance(drafter, SuffixDrafter) and drafter.name == "suffix" and drafter.supports_trees
    assert drafter.deterministic and kind_of("suffix").record_rollouts is not None


@pytest.mark.slow                       # a CLI subprocess (8 s); the fast tier runs `generate` in test_config_and_cli
def test_generate_with_draft_suffix(tmp_path):
    target, _ = save_tiny_pair(tmp_path)
    r = subprocess.run([sys.executable, "-m", "jobs.cli", "generate", "--prompt", "hello hello hello", "--target",
                        target, "--draft", "suffix", "--max-new-tokens", "8"], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("--- new_tokens=8") and "policy=fixed" in last
