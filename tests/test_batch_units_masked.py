"""Batch results resample one run of a block (its turns together), and the γ table's live check prices a batch's
target forward at the slots its gap-masked cache attends over (jobs/report/batches.py, jobs/report/live_costs.py)."""
import numpy as np
import pandas as pd
import pytest

import jobs.report.live_costs as live_costs
from actors.core.engine import SpecEngine
from actors.drafting.drafters import ModelDrafter
from actors.loading.tiny_pair import llama, perturbed, sharpen
from actors.runtime.batch_runner import BatchRunner
from jobs.report.batches import by_batch_size
from jobs.report.gamma_table import full_phase_totals
from jobs.report.live_costs import live_segments, refit, segment_seconds, segments
from policies.costs import CostModel
from policies.registry import build


# ---------------------------------------------------------------- the resampling unit: a block's run, turns together
def two_turn_rows(times: dict, repeats: int = 1) -> pd.DataFrame:
    """B = 2 rows of ``ar`` (timed first) and ``fixed`` γ 3: per block and config the seconds of its two turns'
    batches, ``times[(block, policy)] = (turn 0, turn 1)``; 8 tokens per row and turn."""
    out = []
    for (block, policy), turns in times.items():
        n, k = (8, 0) if policy == "ar" else (4, 3)            # 8 tokens a row: ar 1 a step, fixed 2 (1 accepted)
        for rep in range(repeats):
            for turn, seconds in enumerate(turns):
                for q in range(2):
                    out.append({"status": "ok", "mode": "live", "pair": "p@B2", "batch_size": 2, "policy": policy,
                                "policy_spec": policy, "gamma": k, "ar_timing": "first" if policy == "ar" else "",
                                "task_key": f"p|B2|{block}", "turn": turn, "repeat": rep,
                                "question_id": 10 * block + q, "new_tokens": 8, "prompt_ids": [1] * 5,
                                "wall_time": seconds * (1.0 if q else 0.9), "prefill_time": 0.0, "draft_time": 0.0,
                                "verify_time": 0.0, "accept_lengths": [8 // n] * n, "drafted": [k] * n,
                                "accepted": [8 // n - 1] * n})
    return pd.DataFrame(out)


TURNS = {(0, "ar"): (1.0, 2.0), (0, "fixed"): (0.5, 1.5), (1, "ar"): (1.2, 1.1), (1, "fixed"): (0.9, 0.4),
         (2, "ar"): (2.0, 0.8), (2, "fixed"): (1.0, 0.7)}


def test_a_blocks_turns_are_one_unit_of_the_batch_table():
    t = by_batch_size(two_turn_rows(TURNS), resamples=400).iloc[0]
    assert t["batches"] == 3                       # three blocks' runs, not six turns
    # the interval reads each block's run as a whole: moving seconds between its turns changes nothing
    moved = {k: (a + b - 0.3, 0.3) for k, (a, b) in TURNS.items()}
    u = by_batch_size(two_turn_rows(moved), resamples=400).iloc[0]
    assert (u["best_speedup"], u["best_speedup_lo"], u["best_speedup_hi"]) == pytest.approx(
        (t["best_speedup"], t["best_speedup_lo"], t["best_speedup_hi"]), rel=1e-12)
    # one block of two turns is one measurement: no interval; its repeats are runs of their own
    one = {k: v for k, v in TURNS.items() if k[0] == 0}
    assert np.isnan(by_batch_size(two_turn_rows(one), resamples=50)["best_speedup_lo"].iloc[0])
    assert by_batch_size(two_turn_rows(one, repeats=3), resamples=50)["batches"].iloc[0] == 3


def test_the_live_checks_units_sum_a_blocks_turns():
    rows = two_turn_rows(TURNS)
    ar = rows[rows["policy"] == "ar"]
    units = [(f"p|B2|{b}", 0) for b in range(3)]
    tok, seconds = full_phase_totals(ar, units)
    assert list(tok) == [32, 32, 32]               # 2 rows × 8 tokens × 2 turns
    assert seconds == pytest.approx([0.9 * (a + b) for (blk, pol), (a, b) in TURNS.items() if pol == "ar"])
    segs = live_segments(rows.assign(engine="eager"))
    assert set(segs["unit"]) == set(units)
    assert len(segs) == 2 * 3 * 2                  # per config, block and turn: one batch, its rows ending together


# ---------------------------------------------------------------- the target's context: the slots it attends over
VOCAB = 50


def engine_pair():
    target = sharpen(llama(vocab=VOCAB, seed=VOCAB))
    return target, perturbed(target, 0.6, seed=VOCAB + 1)


def logged_rows(outs, prompts) -> pd.DataFrame:
    """The log rows of one live batch of the eager engine (the fields ``segments`` reads)."""
    return pd.DataFrame([{"prompt_ids": list(p), "accept_lengths": o.accept_lengths, "drafted": o.drafted,
                          "accepted": o.accepted, "proposed": o.proposed, "draft_times": o.draft_times,
                          "verify_times": o.verify_times, "wall_time": o.wall_time, "prefill_time": o.prefill_time,
                          "draft_time": sum(o.draft_times), "verify_time": sum(o.verify_times), "engine": "eager"}
                         for o, p in zip(outs, prompts)])


@pytest.mark.parametrize("slack", [BatchRunner.COMPACT_SLACK, 0])
def test_a_batch_segments_target_context_is_the_slots_its_forwards_attend_over(monkeypatch, slack):
    """The real engine at B = 3 with prompts of 2, 9 and 30 tokens: before every step's target forward its cache
    holds (masked slots included) one less than the context the segments give that step, compacted or not."""
    assert live_costs.COMPACT_SLACK == BatchRunner.COMPACT_SLACK      # the report's copy of the engine's rule
    monkeypatch.setattr(BatchRunner, "COMPACT_SLACK", slack)
    monkeypatch.setattr(live_costs, "COMPACT_SLACK", slack)
    target, draft = engine_pair()
    held = []
    forward = BatchRunner.forward

    def watched(self, feeds, last_only=False, logits=True):
        out = forward(self, feeds, last_only, logits)
        if self.model is target and logits:            # a step's target forward (the prefill keeps no logits)
            held.append(self.slots - max(len(f) for f in feeds))
        return out
    monkeypatch.setattr(BatchRunner, "forward", watched)
    prompts = [[(3 * i + j + 1) % VOCAB for i in range(n)] for j, n in enumerate((2, 9, 30))]
    engine = SpecEngine(target, ModelDrafter(draft))
    outs = engine.generate_batch(prompts, [build("fixed", 3) for _ in prompts], max_new_tokens=20)
    rows = logged_rows(outs, prompts)
    assert len({len(a) for a in rows["accept_lengths"]}) > 1 and any(sum(o.accepted) < sum(o.drafted) for o in outs)
    slots = np.concatenate([s["slots"] for s in segments(rows)])
    assert list(slots) == [h + 1 for h in held]
    mean = np.concatenate([s["contexts"] for s in segments(rows)])
    assert (slots >= mean).all() and (slots > mean).any()   # padding and rejected drafts: not in the mean context
    assert list(np.concatenate([s["slots"] for s in segments(rows.iloc[:1])])) == list(segments(rows.iloc[:1])[0][
        "contexts"])                               # a lone row's cropped cache: its own context


PER_KCTX = 0.5                # s per 1000 context tokens per row: large, so a wrong context measure shows


def surface_model(values, d0, d1, overhead) -> CostModel:
    draft = {"per_step": 0.004, "per_proposal": 0.003, "per_catchup": 0.0, "per_catchup_token": 0.0,
             "per_proposal_kctx": 0.0}
    return CostModel(draft=draft, table={"knots": [1, 2, 3, 4], "values": [0.04, 0.05, 0.055, 0.07],
                                         "per_kctx": PER_KCTX, "per_token_kctx": 0.0}, overhead=0.0005, context=20,
                     batch={2: {"knots": [1, 2, 3, 4], "values": list(values), "draft": d1, "draft_base": d0,
                                "overhead": overhead}})


CALIBRATED = surface_model([0.06, 0.07, 0.08, 0.10], 0.003, 0.004, 0.001)
TRUE = surface_model([0.066, 0.075, 0.09, 0.12], 0.002, 0.005, 0.003)


def padded_batch(k: int, prompts: list[int], steps: int, unit: str, policy: str) -> list[dict]:
    """One live batch of two rows on the eager engine, both drafting ``k`` and accepting none for ``steps`` steps,
    timed by ``TRUE`` with the target's context the slots its cache holds + 1 (the longest prompt less one, then
    k + 1 more each step: rejected drafts stay as masked slots)."""
    d = v = o = 0.0
    for s in range(steps):
        d += TRUE.batch_step_parts(2, k, 0)[0] if k else 0.0
        v += TRUE.batch_step_parts(2, k, max(prompts) + s * (k + 1))[1]
        o += TRUE.batch_overhead(2)
    return [{"mode": "live", "status": "ok", "pair": "p@B2", "batch_size": 2, "policy": policy, "policy_spec": policy,
             "gamma": k, "ar_timing": "first" if policy == "ar" else "", "task_key": unit, "turn": 0, "repeat": 0,
             "prompt_ids": [1] * p, "accept_lengths": [1] * steps, "drafted": [k] * steps, "accepted": [0] * steps,
             "proposed": [k] * steps, "new_tokens": steps, "prefill_time": 0.01, "draft_time": d, "verify_time": v,
             "wall_time": 0.01 + d + v + o, "engine": "eager"} for p in prompts]


def test_the_refit_and_its_pricing_read_the_padded_context_alike():
    """Batches of unequal prompts timed at the slots they attend over: the refit recovers the timing model and prices
    every batch as it ran; read at the rows' mean context the same steps leave a context error no width scale
    absorbs (the masked slots grow k + 1 a step, the context one)."""
    rows = []
    for q, prompts in enumerate(([12, 40], [30, 33], [5, 60])):
        rows += padded_batch(0, prompts, 9 + q, f"q{q}", "ar") + padded_batch(3, prompts, 6 + q, f"q{q}", "fixed")
    segs = live_segments(pd.DataFrame(rows))
    fitted = refit(CALIBRATED, segs)
    for p in segs.itertuples(index=False):
        assert segment_seconds(fitted, p) == pytest.approx(p.draft + p.verify + p.rest, rel=1e-6)
    assert fitted.batch_verify(2, 4) == pytest.approx(TRUE.batch_verify(2, 4), rel=1e-6)
