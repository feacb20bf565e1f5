"""The cost model refitted on a sweep's live steps (jobs/report/live_costs.py): synthetic live rows timed by a known
model, so the fit must give that model back."""
import numpy as np
import pandas as pd
import pytest

from jobs.report.live_costs import live_segments, refit, segment_seconds, segments
from policies.costs import CostModel

PROMPT = 20


def model(values, d0=0.004, d1=0.003, overhead=0.0005, batch=None, context=0):
    draft = {"per_step": d0, "per_proposal": d1, "per_catchup": 0.001, "per_catchup_token": 0.0002,
             "per_proposal_kctx": 0.0}
    return CostModel(draft=draft, table={"knots": list(range(1, len(values) + 1)), "values": list(values),
                                         "per_kctx": 0.02, "per_token_kctx": 0.0},
                     overhead=overhead, context=context, batch=batch or {})


CALIBRATED = model([0.040, 0.050, 0.055, 0.070, 0.080, 0.085])
TRUE = model([0.044, 0.052, 0.060, 0.081, 0.083, 0.090], d0=0.006, d1=0.0025, overhead=0.002)


def live_batch(truth: CostModel, k: int, rows: int, steps: list[int], unit: str, policy: str = "fixed",
               proposed: bool = True) -> list[dict]:
    """One live batch of ``rows`` rows drafting ``k`` each step, none accepted (one token per step), row b taking
    ``steps[b]`` steps; every row's clocks are the batch's, timed by ``truth`` (the prompts' catch-up in the first
    step, context = prompt + tokens so far)."""
    out, draft_t, verify_t = [], 0.0, 0.0
    clocks = []
    for s in range(max(steps)):
        running = sum(1 for n in steps if n > s)
        ctx = PROMPT + s
        d = 0.0
        if k:
            d = truth.batch_step_parts(running, k, ctx if running == 1 else ctx)[0]
            if s == 0:
                c = int(round(ctx))
                d += truth.draft_time(1, running * (PROMPT - 1), c) - truth.draft_time(1, 0, c)
        v = truth.batch_step_parts(running, k, ctx)[1]
        draft_t, verify_t = draft_t + d, verify_t + v
        clocks.append((draft_t, verify_t, (s + 1) * truth.batch_overhead(running)))
    for b, n in enumerate(steps):
        d, v, o = clocks[n - 1]
        out.append({"mode": "live", "status": "ok", "pair": "p" if rows == 1 else f"p@B{rows}", "batch_size": rows,
                    "policy": policy, "policy_spec": policy, "gamma": k, "ar_timing": "first" if policy == "ar" else "",
                    "task_key": unit, "turn": 0, "repeat": 0, "prompt_ids": [1] * PROMPT,
                    "accept_lengths": [1] * n, "drafted": [k] * n, "accepted": [0] * n,
                    "proposed": [k] * n if proposed else None, "decoding_steps": n, "new_tokens": n,
                    "prefill_time": 0.01, "draft_time": d, "verify_time": v, "wall_time": 0.01 + d + v + o})
    return out


def sweep_rows(truth: CostModel, rows: int = 1) -> pd.DataFrame:
    """ar, fixed γ = 1 and fixed γ = 3 on three questions at ``rows`` rows (each batch's rows end together)."""
    out = []
    for q in range(3):
        for k, policy in ((0, "ar"), (1, "fixed"), (3, "fixed")):
            out += live_batch(truth, k, rows, [8 + q] * rows, f"q{q}", policy)
    return pd.DataFrame(out).assign(policy_spec=lambda d: d["policy"])


def test_the_fit_gives_back_the_model_that_timed_the_steps_at_one_row():
    rows = sweep_rows(TRUE)
    fitted = refit(CALIBRATED, live_segments(rows))
    for w in (1, 2, 4):                                 # the widths the configs ran: ar 1, γ 1 → 2, γ 3 → 4
        assert fitted.verify(w) == pytest.approx(TRUE.verify(w), rel=1e-9)
    # a width no config ran: the calibrated shape scaled by the fitted scales interpolated between 2 and 4
    scale = (TRUE.verify(2) / CALIBRATED.verify(2) + TRUE.verify(4) / CALIBRATED.verify(4)) / 2
    assert fitted.verify(3) == pytest.approx(CALIBRATED.verify(3) * scale, rel=1e-9)
    assert fitted.verify(6) == pytest.approx(CALIBRATED.verify(6) / CALIBRATED.verify(4) * TRUE.verify(4), rel=1e-9)
    assert fitted.draft["per_step"] == pytest.approx(0.006, rel=1e-9)
    assert fitted.draft["per_proposal"] == pytest.approx(0.0025, rel=1e-9)
    assert fitted.overhead == pytest.approx(0.002, rel=1e-9)
    assert fitted.draft["per_catchup"] == CALIBRATED.draft["per_catchup"]       # catch-up: the calibrated terms
    for p in live_segments(rows).itertuples(index=False):      # every segment priced as it ran = its measured time
        assert segment_seconds(fitted, p) == pytest.approx(p.draft + p.verify + p.rest, rel=1e-9)


def test_a_draft_phase_not_linear_in_its_forwards_is_priced_per_forward_count():
    """Steps timed by a concave D(ℓ) (6.1, 12.2, 17.3, 22.0 ms, as measured on the real draft): the refit gives D back
    at every ℓ that ran, and prices ``fixed`` γ 3 — left out, as the γ check leaves it out — from another config's
    three-forward steps exactly, where the line d₀ + T_d·ℓ through all of them misses it."""
    import dataclasses

    truth = dataclasses.replace(TRUE, draft_levels={1: {"knots": [1, 2, 3, 4],
                                                        "values": [0.0061, 0.0122, 0.0173, 0.0220]}})
    out = []
    for q in range(3):
        for k, policy in ((0, "ar"), (1, "gt-batch"), (2, "gt-batch"), (3, "tetris"), (3, "fixed"), (4, "schedule")):
            out += live_batch(truth, k, 1, [8 + q], f"q{q}", policy)
    steps = live_segments(pd.DataFrame(out).assign(policy_spec=lambda d: d["policy"]))
    fitted = refit(CALIBRATED, steps)
    for k, want in zip((1, 2, 3, 4), truth.draft_levels[1]["values"]):
        assert fitted.level_draft(1, k) == pytest.approx(want, rel=1e-9)
        assert fitted.batch_step_parts(1, k, 0)[0] == pytest.approx(want, rel=1e-9)
    assert fitted.draft_time(3, 0, 0) != pytest.approx(0.0173, rel=0.01)      # replay's clock keeps the line
    held_out = refit(CALIBRATED, steps[steps["config"] != "fixed|3"])
    for p in steps[steps["config"] == "fixed|3"].itertuples(index=False):
        assert segment_seconds(held_out, p) == pytest.approx(p.draft + p.verify + p.rest, rel=1e-9)
    line = held_out.draft["per_step"] + 3 * held_out.draft["per_proposal"]
    assert abs(line / 0.0173 - 1) > 0.01


def test_a_batch_size_refits_its_surface_entry_and_leaves_the_single_row_model():
    surface = {2: {"knots": [1, 2, 3, 4, 5, 6], "values": [0.06, 0.07, 0.08, 0.10, 0.11, 0.12], "draft": 0.004,
                   "draft_base": 0.003, "overhead": 0.001}}
    truth = model(TRUE.table["values"], batch={2: {**surface[2], "values": [0.066, 0.074, 0.09, 0.12, 0.12, 0.13],
                                                   "draft": 0.005, "draft_base": 0.002, "overhead": 0.003}})
    calibrated = model(CALIBRATED.table["values"], batch=surface)
    fitted = refit(calibrated, live_segments(sweep_rows(truth, rows=2)))
    for w in (1, 2, 4):
        assert fitted.batch_verify(2, w) == pytest.approx(truth.batch_verify(2, w), rel=1e-9)
    assert fitted.batch_draft(2, 3) == pytest.approx(truth.batch_draft(2, 3), rel=1e-9)
    assert fitted.batch_overhead(2) == pytest.approx(0.003, rel=1e-9)
    assert fitted.table == calibrated.table and fitted.overhead == calibrated.overhead


def test_one_draft_shape_scales_the_calibrated_draft_and_a_stalled_batch_is_dropped():
    rows = pd.DataFrame([r for q in range(8) for k, pol in ((0, "ar"), (3, "fixed"))
                         for r in live_batch(TRUE, k, 1, [9 + q], f"q{q}", pol)])
    stalled = live_batch(TRUE, 3, 1, [9], "q9")[0]
    stalled["verify_time"] *= 3
    fitted = refit(CALIBRATED, live_segments(pd.concat([rows, pd.DataFrame([stalled])], ignore_index=True)))
    assert fitted.verify(4) == pytest.approx(TRUE.verify(4), rel=1e-9)
    # every drafting step ran 3 forwards: d₀ and d₁ are not separable, so the calibrated pair is scaled to fit
    scale = fitted.draft["per_step"] / CALIBRATED.draft["per_step"]
    assert fitted.draft["per_proposal"] / CALIBRATED.draft["per_proposal"] == pytest.approx(scale)
    assert fitted.draft_time(3, 0, 0) == pytest.approx(TRUE.draft_time(3, 0, 0), rel=1e-9)


def test_a_segment_takes_the_widest_running_row_and_the_most_draft_forwards():
    rows = pd.DataFrame(live_batch(TRUE, 2, 2, [5, 7], "u"))
    rows.at[1, "drafted"] = [2, 1, 2, 2, 2, 1, 1]
    rows.at[1, "proposed"] = [3, 2, 2, 2, 2, 1, 1]      # a discarded proposal in its first step
    first, second = segments(rows)
    assert (first["segment"], first["running"], first["n"]) == (0, 2, 5) and list(first["widths"]) == [3] * 5
    assert list(first["levels"]) == [3, 2, 2, 2, 2] and first["feeds"][0] == 2 * (PROMPT - 1)
    assert list(first["contexts"]) == [PROMPT + s for s in range(5)]
    assert first["draft"] == rows.loc[0, "draft_time"] and first["prefill"] == 0.01
    # the second row alone for its last 2 steps: its clocks less the first row's, no prefill
    assert (second["running"], second["n"], second["prefill"]) == (1, 2, 0.0) and list(second["widths"]) == [2, 2]
    assert second["verify"] == pytest.approx(rows.loc[1, "verify_time"] - rows.loc[0, "verify_time"])
    older = rows.assign(proposed=None)                  # logs without the column: the drafts verified
    assert list(segments(older)[0]["levels"]) == [2] * 5
    tree = rows.copy()
    tree.at[0, "proposed"] = [0] * 5                    # a tree step records no proposals: not a chain batch
    assert segments(tree) is None


def test_a_whole_static_batch_is_priced_at_the_rows_still_running_and_refits_each_size():
    surface = {b: {"knots": [1, 2, 3], "values": [0.1 * b, 0.11 * b, 0.12 * b], "draft": 0.01 * b, "draft_base": 0.0,
                   "overhead": 0.0} for b in (2, 3)}
    m = model([0.10, 0.11, 0.12], d0=0.0, d1=0.01, overhead=0.0, batch=surface, context=PROMPT)
    m.draft.update(per_catchup=0.0, per_catchup_token=0.0)
    m.table.update(per_kctx=0.0)
    rows = pd.DataFrame(live_batch(m, 2, 3, [5, 2, 5], "u"))
    segs = live_segments(rows)
    assert list(segs["running"]) == [3, 2] and list(segs["n"]) == [2, 3]
    # rows of 5, 2 and 5 steps at K = 2: 2 steps of 3 rows, then 3 steps of 2 rows
    assert sum(segment_seconds(m, p) for p in segs.itertuples()) == pytest.approx(
        2 * (2 * 0.03 + 0.36) + 3 * (2 * 0.02 + 0.24))
    # each segment's seconds are the batch's at its rows: a refit on them keeps T_3 and T_2 at the verified width
    truth = model([0.10, 0.11, 0.12], d0=0.0, d1=0.01, overhead=0.0, context=PROMPT, batch={
        b: {**surface[b], "values": [v * 1.2 for v in surface[b]["values"]]} for b in (2, 3)})
    truth.draft, truth.table = m.draft, m.table
    slow = pd.DataFrame(live_batch(truth, 2, 3, [5, 2, 5], "u"))
    fitted = refit(m, live_segments(pd.concat([slow.assign(task_key=f"u{i}") for i in range(3)], ignore_index=True)))
    assert fitted.batch_verify(3, 3) == pytest.approx(0.36 * 1.2)
    assert fitted.batch_verify(2, 3) == pytest.approx(0.24 * 1.2)


def test_the_live_check_prices_k_out_of_sample():
    """The γ table's live check refits without the checked config: its own rows cannot move its prediction."""
    from jobs.report.gamma_table import validation

    rows = sweep_rows(TRUE)
    accept = {"p": np.array([[0.0, 0.0, 0.0]])}
    a = validation(rows, {"p": CALIBRATED}, accept).set_index("K")
    for k in (1, 3):
        slow = rows.copy()
        own = slow["gamma"] == k
        slow.loc[own, "verify_time"] *= 1.5
        slow.loc[own, "wall_time"] += rows.loc[own, "verify_time"] * 0.5
        b = validation(slow, {"p": CALIBRATED}, accept).set_index("K")
        assert b.loc[k, "full_predicted"] == pytest.approx(a.loc[k, "full_predicted"], rel=1e-9)
        assert b.loc[k, "predicted"] == pytest.approx(a.loc[k, "predicted"], rel=1e-9)
        assert b.loc[k, "full_measured"] < a.loc[k, "full_measured"] / 1.2
    # ar timed last (the noise control) is not what the speedups divide by: a slow closing ar moves no prediction
    last = rows[rows["policy"] == "ar"].assign(ar_timing="last", verify_time=lambda d: d["verify_time"] * 1.3,
                                               wall_time=lambda d: d["wall_time"] + d["verify_time"] * 0.3)
    both = pd.concat([rows, last], ignore_index=True).assign(question_id=lambda d: d["task_key"], category="c")
    c = validation(both, {"p": CALIBRATED}, accept).set_index("K")
    assert c["predicted"].to_numpy() == pytest.approx(a["predicted"].to_numpy(), rel=1e-9)
    assert c["full_predicted"].to_numpy() == pytest.approx(a["full_predicted"].to_numpy(), rel=1e-9)


def test_the_live_checks_interval_refits_on_each_resample_of_the_batches():
    """Batches of the same steps price alike under one model: the prediction's interval comes from refitting on each
    resample, so a noisy batch among the fitted ones widens it, and one batch gives none."""
    from jobs.report.gamma_table import validation

    accept = {"p": np.array([[0.0, 0.0, 0.0]])}
    clean = sweep_rows(TRUE, rows=2)
    noisy = clean.copy()
    slow = (noisy["task_key"] == "q0") & (noisy["policy"] == "ar")
    noisy.loc[slow, "wall_time"] += noisy.loc[slow, "verify_time"] * 0.3
    noisy.loc[slow, "verify_time"] *= 1.3
    widths = []
    for rows in (clean, noisy):
        v = validation(rows, {"p": CALIBRATED}, accept).set_index("K").loc[3]
        assert v["predicted_lo"] <= v["predicted"] <= v["predicted_hi"]
        assert v["full_predicted_lo"] <= v["full_predicted"] <= v["full_predicted_hi"]
        widths.append(v["predicted_hi"] - v["predicted_lo"])
    assert widths[1] > 5 * widths[0] > 0
    one = validation(clean[clean["task_key"] == "q0"], {"p": CALIBRATED}, accept).set_index("K").loc[3]
    assert np.isnan(one["predicted_lo"]) and np.isnan(one["full_predicted_hi"]) and one["predicted"] > 0


def mixed_batch(truth: CostModel, ks: list[int], unit: str, policy: str) -> list[dict]:
    """One single-row live batch drafting ``ks[s]`` in step s (none accepted), timed by ``truth`` as
    :func:`live_batch` times it."""
    d = v = 0.0
    for s, k in enumerate(ks):
        d += truth.draft_time(k, PROMPT - 1 if s == 0 and k else 0, PROMPT + s) if k else 0.0
        v += truth.verify_time(k + 1, PROMPT + s)
    n = len(ks)
    return [{"mode": "live", "status": "ok", "pair": "p", "batch_size": 1, "policy": policy, "policy_spec": policy,
             "gamma": 3, "ar_timing": "", "task_key": unit, "turn": 0, "repeat": 0, "prompt_ids": [1] * PROMPT,
             "accept_lengths": [1] * n, "drafted": list(ks), "accepted": [0] * n, "proposed": list(ks),
             "decoding_steps": n, "new_tokens": n, "prefill_time": 0.01, "draft_time": d, "verify_time": v,
             "wall_time": 0.01 + d + v + n * truth.overhead}]


def test_a_width_run_only_among_others_gets_its_own_time():
    """ar runs width 1 alone; a policy verifies width 2 in 4 of its 15 steps. The width-2 forward is fitted from the
    two together, so neither config's time leans on the calibrated ratio T(2)/T(1)."""
    rows = []
    for q in range(3):
        rows += live_batch(TRUE, 0, 1, [12 + q], f"q{q}", "ar")
        rows += mixed_batch(TRUE, [0] * (11 + q) + [1] * 4, f"q{q}", "adaptive")
    fitted = refit(CALIBRATED, live_segments(pd.DataFrame(rows)))
    assert fitted.verify(1) == pytest.approx(TRUE.verify(1), rel=1e-9)
    assert fitted.verify(2) == pytest.approx(TRUE.verify(2), rel=1e-9)
    assert TRUE.verify(2) / TRUE.verify(1) != pytest.approx(CALIBRATED.verify(2) / CALIBRATED.verify(1), rel=0.05)


def test_widths_that_always_run_together_take_the_smoothest_split():
    """A policy whose every batch verifies widths 5 and 6 in the same proportion cannot separate them: the fit
    still prices its steps as they ran, and splits the two by the smoothest scales beside width 4's."""
    rows = []
    for q in range(3):
        rows += live_batch(TRUE, 0, 1, [9 + q], f"q{q}", "ar")
        rows += live_batch(TRUE, 3, 1, [9 + q], f"q{q}", "fixed")
        rows += mixed_batch(TRUE, [4, 5, 5] * (3 + q), f"q{q}", "wide")
    segs = live_segments(pd.DataFrame(rows))
    fitted = refit(CALIBRATED, segs)
    for p in segs.itertuples(index=False):
        assert segment_seconds(fitted, p) == pytest.approx(p.draft + p.verify + p.rest, rel=1e-6)
    s4, s5, s6 = (fitted.verify(w) / CALIBRATED.verify(w) for w in (4, 5, 6))
    assert s4 == pytest.approx(TRUE.verify(4) / CALIBRATED.verify(4), rel=1e-9)
    # the split: the least (s4 − s5)² + (s5 − s6)² on the line the segments fix (T(5) + 2·T(6) per three steps)
    def roughness(e: float) -> float:
        t5, t6 = s5 + e, s6 - e * CALIBRATED.verify(5) / (2 * CALIBRATED.verify(6))
        return (s4 - t5) ** 2 + (t5 - t6) ** 2

    assert roughness(0.0) < min(roughness(-1e-3), roughness(1e-3))
    assert (s5, s6) != pytest.approx((TRUE.verify(5) / CALIBRATED.verify(5), TRUE.verify(6) / CALIBRATED.verify(6)))
