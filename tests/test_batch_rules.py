"""Batch rules as their sources define them: ``batch-schedule`` in TensorRT-LLM's and vLLM's forms (hand-worked tables
from each engine's documented semantics), and ``gt-batch`` — our extension of the GT principle — with its two rules,
the per-step overhead in its price, the level where every row stops at its cap, and agreement with ``gt`` at B = 1."""
from __future__ import annotations

import random

import pytest

from policies.base import DISCARD, GenerationContext
from policies.costs import CostModel
from policies.errors import SpecsweepError
from policies.registry import REGISTRY, build


# ------------------------------------------------------------------ batch-schedule
def test_trtllm_draft_len_schedule_applies_a_value_up_to_its_key():
    """TensorRT-LLM ``get_draft_len_for_batch_size``'s documented example {4: 4, 8: 2, 32: 1}: batch size 1–4 → 4,
    5–8 → 2, 9–32 → 1, 33+ → 0 (speculation disabled)."""
    pol = build("batch-schedule:draft_len_schedule=4:4/8:2/32:1", 7)
    assert [pol.gamma_for(b) for b in (1, 4, 5, 8, 9, 32, 33, 100)] == [4, 4, 2, 2, 1, 1, 0, 0]
    assert pol.caps([9, 1, 9, 9, 9]) == [2, 1, 2, 2, 2]                     # B = 5 → 2, a row's own cap kept
    assert build("batch-schedule:draft_len_schedule=4:4/8:2/32:1", 1).gamma_for(1) == 4   # the initial γ is not read


def test_vllm_ranges_carry_the_previous_k_and_clamp_to_num_speculative_tokens():
    """vLLM ``build_dynamic_sd_schedule_lookup`` on its own test schedule [(1, 16, 3), (32, 128, 2), (256, 256, 0)]
    with num_speculative_tokens 3: 1 → 3, 16 → 3, 17 → 3 and 31 → 3 (a gap takes the range before it), 32 → 2,
    128 → 2, 129 → 2, 255 → 2, 256 → 0; every K is clamped to num_speculative_tokens (here the initial γ)."""
    spec = "batch-schedule:num_speculative_tokens_per_batch_size=1-16:3/32-128:2/256-256:0"
    pol = build(spec, 3)
    sizes = (1, 16, 17, 31, 32, 128, 129, 255, 256)
    assert [pol.gamma_for(b) for b in sizes] == [3, 3, 3, 3, 2, 2, 2, 2, 0]
    assert [build(spec, 2).gamma_for(b) for b in (1, 32)] == [2, 2]           # min(num_speculative_tokens, K)
    off = build("batch-schedule:num_speculative_tokens_per_batch_size=1-64:3,disable_by_batch_size=8", 3)
    assert [off.gamma_for(b) for b in (1, 8, 9, 64)] == [3, 3, 0, 0]         # disable_by_batch_size: off once B > N


def test_batch_schedule_forms_are_checked_and_the_old_form_is_refused_naming_both():
    for bad in ("batch-schedule:schedule=1:4/4:3/16:2", "batch-schedule:off_above=32"):
        with pytest.raises(SpecsweepError, match="draft_len_schedule.*num_speculative_tokens_per_batch_size") as e:
            build(bad, 4)
        assert "\n" not in str(e.value)
    for bad, needle in (("num_speculative_tokens_per_batch_size=2-8:3", "num_speculative_tokens_per_batch_size"),  # not from 1
                        ("num_speculative_tokens_per_batch_size=1-8:3/8-16:2", "num_speculative_tokens"),       # overlap
                        ("draft_len_schedule=4-4", "draft_len_schedule"),
                        ("draft_len_schedule=4:4,num_speculative_tokens_per_batch_size=1-4:4", "exactly one"),
                        ("draft_len_schedule=4:4,disable_by_batch_size=8", "disable_by_batch_size")):
        with pytest.raises(SpecsweepError, match=needle):
            build(f"batch-schedule:{bad}", 4)
    default = build("batch-schedule", 4)                                     # what the old default did, in TRT form
    assert [default.gamma_for(b) for b in (1, 3, 4, 15, 16, 32, 33)] == [4, 4, 3, 3, 2, 2, 0]
    assert "TensorRT-LLM" in REGISTRY["batch-schedule"][2] and "vLLM" in REGISTRY["batch-schedule"][2]


# ------------------------------------------------------------------ gt-batch
def reset(spec: str, costs=None):
    pol = build(spec, 4)
    pol.reset(GenerationContext(costs=costs))
    return pol


def test_gt_batch_is_documented_as_our_extension():
    assert REGISTRY["gt-batch"][2].startswith("ours")
    import policies.batch as batch
    assert "Our extension" in batch.__doc__ and "no batch equation" in batch.__doc__


def test_every_row_stopping_at_its_cap_on_the_same_level_is_still_tested():
    """Caps [2, 2]: both rows reach their cap at level 2, so the engine asks ``keep_drafting`` about level 1 only;
    ``select`` still tests level 2: mean α̂ = 0.09 <= c = 0.3, so neither row verifies it."""
    pol = reset("gt-batch:c=0.3")
    assert pol.caps([2, 2]) == [2, 2]
    assert pol.keep_drafting(1, {0: 0.9, 1: 0.9}) == {0, 1}
    assert pol.select([[0.9, 0.1], [0.9, 0.1]]) == [1, 1]
    row = reset("gt-batch:c=0.3,rule=row")
    row.caps([2, 2])
    assert row.select([[0.9, 0.1], [0.9, 0.9]]) == [1, 2]                     # 0.09 fails, 0.81 passes


def test_mean_and_row_rules():
    """Level 2 of rows [0.9, 0.9] and [0.9, 0.2] at c = 0.5: α̂ = 0.81 and 0.18, mean 0.495 <= 0.5 — the mean rule
    verifies level 1 in both rows; the row rule keeps row 0's level 2 (0.81 > 0.5) and drops row 1's."""
    q = [[0.9, 0.9], [0.9, 0.2]]
    mean, row = reset("gt-batch:c=0.5"), reset("gt-batch:c=0.5,rule=row")
    for p in (mean, row):
        p.caps([4, 4])
    assert mean.select(q) == [1, 1] and row.select(q) == [2, 1]
    assert mean.keep_drafting(2, {0: 0.81, 1: 0.18}) == set() and row.keep_drafting(2, {0: 0.81, 1: 0.18}) == {0}
    with pytest.raises(SpecsweepError, match="rule"):
        build("gt-batch:rule=max", 4)


def test_the_level_price_counts_the_overhead_and_the_batch_knee():
    """c_B(L) = (T_d(B) + Φ_B(L) − Φ_B(L − 1)) / (T_B(1) + o). B = 1 (single-row table, K = 1, o = 2 ms): level 1
    costs (1 + 3) / 12, not (1 + 3) / 10 as without o. B = 4 (flat to width 4, then 5 ms a token: K = 4): levels 1–3
    cost T_d / (T_4(1) + o) = 2 / 22; level 4 pays T_4(5) − T_4(1) = 5 ms: (2 + 5) / 22."""
    m = CostModel.measured(0.001, {1: 0.010, 2: 0.013, 4: 0.015, 8: 0.019})
    m.overhead = 0.002
    m.batch = {4: {"knots": [1, 4, 8], "values": [0.020, 0.020, 0.040], "draft": 0.002}}
    pol = reset("gt-batch", m)
    m1 = CostModel.measured(0.001, {1: 0.010, 2: 0.013, 4: 0.015, 8: 0.019})
    m1.overhead = 0.002
    assert reset("gt-batch", m1).level_cost(1, 1) == pytest.approx(4 / 12)
    assert m.batch_knee(4) == 4
    assert [pol.level_cost(4, L) for L in (1, 2, 3)] == pytest.approx([2 / 22] * 3)
    assert pol.level_cost(4, 4) == pytest.approx(7 / 22)


def gt_keeps(costs, qs) -> int:
    gt = reset("gt:cap=16", costs)
    for i, q in enumerate(qs, 1):
        if gt.after_draft(i, 0, q, q) == DISCARD:
            return i - 1
    return len(qs)


@pytest.mark.parametrize("with_table", [False, True])
def test_gt_and_gt_batch_agree_at_batch_size_one(with_table):
    """At B = 1 on the same costs ``gt`` and both ``gt-batch`` rules verify the same drafts: the level price is the
    token price (M_D + Φ(L) − Φ(L − 1)) / M_T — on the single-row model, and on a B = 1 batch table equal to it."""
    m = CostModel.measured(0.001, {1: 0.010, 2: 0.013, 4: 0.015, 8: 0.019})
    m.overhead = 0.002
    if with_table:
        m.batch = {1: {"knots": [1, 2, 4, 8], "values": [0.010, 0.013, 0.015, 0.019], "draft": 0.001}}
    rnd = random.Random(43)
    batch = [reset(f"gt-batch:rule={r}", m) for r in ("mean", "row")]
    for _ in range(200):
        qs = [rnd.choice((0.3, 0.6, 0.8, 0.9, 0.95, 0.99)) for _ in range(rnd.randint(1, 12))]
        want = gt_keeps(m, qs)
        for pol in batch:
            pol.caps([len(qs)])
            assert pol.select([qs]) == [want], (qs, pol.rule)
    assert [batch[0].level_cost(1, L) for L in range(1, 9)] == pytest.approx(
        [reset("gt", m).price(L) for L in range(1, 9)])
