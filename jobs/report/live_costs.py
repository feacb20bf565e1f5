"""A pair's cost model refitted on the sweep's own live steps, per batch size: the clock the γ table
(``jobs/report/gamma_table.py``) prices a step with when the sweep ran live, so that its check against the live rows
tests the table's model, not how far one calibration (minutes earlier, in another phase of the machine) lands from
the live steps (by −6 % to +26 % on the 2-core host, docs/benchmarks.md).

Data: the *segments* of each live batch. A static batch shrinks as its rows end: with its rows' step counts n_1 ≤ …
≤ n_B, steps [n_{j−1}, n_j) ran over the rows still running (all B in the first segment, while every row runs; a
B = 1 row is one segment). A row's clocks run while it is in the batch, so the row that ends at n_j carries the
batch's ``draft_time``, ``verify_time`` and rest (wall − prefill − draft − verify) over steps < n_j, and a
segment's seconds are the difference between the rows ending at its two bounds. Per step s: the verified width
L_s = 1 + the most drafts a running row verified, the draft forwards ℓ_s = the most proposals a running row made
(``proposed``, a discarded one included; logs without the column: the most drafts), the context c_s = the running
rows' mean prompt + tokens emitted before s, the target's context ĉ_s = the positions its forward attends over, and
the tokens the draft caught up on e_s (summed over rows;
``policies/cost_fit.py``'s ``draft_feeds``: the prompt in a row's first drafting step, one token after a fully
accepted draft). A segment also carries its steps' own clocks where the log holds them (``draft_times``,
``verify_times``: ``step_draft``, ``step_verify``; NaN in older logs), which ``bench/equal_work.py`` reads; the fit
below reads the sums. A batch is the rows of one (task, turn, repeat) of a config; its segments carry the
resampling ``unit`` of ``jobs/report/batches.py`` (task, repeat: a block's turns together).

The target's context. Rows of a batch differ in length, and the gap-masked batch cache
(``actors/runtime/batch_runner.py``, the ``eager`` engine's at B > 1) gives every row the same slots: the prefill
pads each row to the longest prompt, each step appends the step's verified width to every row, and padding and
rejected drafts stay as masked slots until a compaction. A forward's attention runs over every slot, masked or not,
so the target pays for ĉ_s = 1 + the slots per row (:func:`padded_slots`), not for its rows' mean context. A lone
row's cropped cache holds its own context: ĉ_s = c_s; the static engines attend over their whole capacity at every
step, which no context measure moves, and keep ĉ_s = c_s, as do logs without ``engine``. The verify context terms
read ĉ_s, in the fit and in every pricing alike; the draft's read c_s (the draft's cache is the drafter's own).

Rule: the cost model's (``policies/costs.py``) at B = a segment's running rows, summed over its steps:

    verify = Σ_s T_B(L_s) + context terms
    draft  = Σ_{s: ℓ_s > 0} D_B(ℓ_s) + Σ_s (d₂·[e_s > 0] + d₃·e_s) + context terms
    rest   = n·o_B

The catch-up and context terms are the calibrated model's, subtracted; T_B and d₀(B), T_d(B) by least squares over
the segments of B rows (each segment's equation divided by its n, so every segment weighs alike;
``policies/cost_fit.py``'s ``robust_lstsq`` drops a stalled one), o_B = Σ rest / Σ n. T_B is fitted at every width
that ran in ``MIN_STEPS`` steps or more, whichever configs ran it (a width an adaptive policy verifies in a few of
its steps gets its own time beside ``ar``'s 1 and ``fixed`` γ = K's K + 1), as a scale on the calibrated T_B:
T_B(w) = s(w)·calibrated T_B(w), s linear between the fitted widths and constant beyond them. Where the segments
leave the scales undetermined (widths that always run together in the same proportion), the least squares takes
the smoothest: the least Σ (s(f_{i+1}) − s(f_i))² over the fitted widths f.
The draft phase the same way: D_B(ℓ) = u(ℓ)·(calibrated d₀(B) + ℓ·T_d(B)), a scale u fitted at each ℓ that ran in
``MIN_STEPS`` drafting steps or more, linear between them and the smoothest where undetermined
(``CostModel.draft_levels``), because the forwards of one chain do not cost alike on a CPU (SmolLM2-135M's draft,
2026-11-29: 6.1, 12.2, 17.3, 22.0 ms for ℓ = 1…4, in every config) and a straight line fitted where `gt-batch` runs
one or two and `batch-schedule` four priced `fixed`'s three low. With fewer than two such ℓ, the line d₀(B) +
ℓ·T_d(B) stands, fitted as follows. When the segments cannot separate d₀ from T_d (their mean draft forwards per
drafting step span less than one), one factor scales the calibrated pair. At B = 1 the same fit gives the single-row
model's T(m), d₀, d₁ and o (its context terms counted from C = 0, as that model's are); above, the batch surface's
entry at B (``CostModel.batch``), sizes the calibration did not measure included (a B = 4 batch's B = 3 and 2
segments).
"""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pandas as pd

from jobs.report import metrics
from jobs.report.agreement import modes
from jobs.report.batches import BATCH, UNIT, base_pairs
from jobs.report.gamma_model import catchup_time
from policies.cost_fit import draft_feeds, robust_lstsq
from policies.costs import CostModel

MIN_STEPS = 3                          # a width needs this many segment steps to be fitted (as replay's fit's knots)
COMPACT_SLACK = 64                     # actors/runtime/batch_runner.py: BatchRunner.COMPACT_SLACK
SEGMENT_COLUMNS = ["pair", "batch_size", "policy", "config", "timing", "unit", "segment", "running", "n", "widths",
                 "levels", "contexts", "slots", "feeds", "draft", "verify", "rest", "prefill", "step_draft",
                 "step_verify"]
CLOCKS = ("draft_time", "verify_time", "rest_time")


def config_of(rows: pd.DataFrame) -> pd.Series:
    """The config a live row ran: ``policy_spec|gamma`` (``ar`` timed first and last are one config)."""
    return rows["policy_spec"].astype(str) + "|" + rows["gamma"].astype(int).astype(str)


def gap_masked(rows: pd.DataFrame) -> bool:
    """Whether one live batch's ``rows`` ran on the gap-masked batch cache (``actors/runtime/batch_runner.py``): more
    than one row decoded together on the ``eager`` engine (``actors/runtime/row_runners.py``'s ``for_rows``; a lone
    row runs on a cropped cache, the other engines on a static one); False in logs without the ``engine`` column."""
    return len(rows) > 1 and "engine" in rows and (rows["engine"] == "eager").all()


def padded_slots(prompts: list[int], emitted: list[list[int]], widths: np.ndarray) -> np.ndarray:
    """Per step of one gap-masked batch (:func:`gap_masked`), 1 + the slots per row its target cache holds when the
    step's forward runs, masked ones included: the prefill pads every row to the longest prompt less its last token,
    each step appends its verified width to every running row (padding and rejected drafts stay, masked), and the
    cache is compacted to the longest running row's committed positions when it holds more than twice them +
    :data:`COMPACT_SLACK` (``BatchRunner.forward``). Row b commits its prompt less one + the tokens it emitted
    (``emitted[b]``, one entry per step it ran). A lone row's cache holds exactly its prompt + emitted tokens − 1, so
    the + 1 keeps the two measures alike."""
    held = float(max(max(p - 1, 0) for p in prompts))
    committed = [max(p - 1, 0) + np.concatenate([[0], np.cumsum(e)]) for p, e in zip(prompts, emitted)]
    out = np.zeros(len(widths))
    for s, width in enumerate(widths):
        longest = max(float(c[s]) for c, e in zip(committed, emitted) if len(e) > s)
        if held > 2 * longest + COMPACT_SLACK:
            held = longest
        out[s] = held + 1
        held += int(width)
    return out


def segments(rows: pd.DataFrame) -> list[dict] | None:
    """One live batch's segments (module docstring), first to last; None when a row has no step record or a tree
    step."""
    if any(a is None for a in rows["accept_lengths"]) or any(d is None for d in rows["drafted"]):
        return None
    lengths = [len(a) for a in rows["accept_lengths"]]
    n = max(lengths)
    if n <= 0:
        return None
    proposed = rows["proposed"] if "proposed" in rows else pd.Series([None] * len(rows), index=rows.index)
    levels, widths, contexts, feeds, running = (np.zeros(n, int), np.zeros(n, int), np.zeros(n), np.zeros(n),
                                                np.zeros(n, int))
    for (_, r), props, m in zip(rows.iterrows(), proposed, lengths):
        drafted, emitted = list(r["drafted"]), list(r["accept_lengths"])
        made = list(props) if props is not None and len(props) else drafted
        if any(d > 0 and p == 0 for d, p in zip(drafted, made)):
            return None                                  # a tree step: its draft forwards are not recorded
        steps = [SimpleNamespace(proposed=p, drafted=d, accepted=a, emitted=e)
                 for p, d, a, e in zip(made, drafted, r["accepted"], emitted)]
        levels[:m] = np.maximum(levels[:m], made)
        widths[:m] = np.maximum(widths[:m], np.asarray(drafted) + 1)
        contexts[:m] += len(r["prompt_ids"]) + np.concatenate([[0], np.cumsum(emitted)[:-1]])
        feeds[:m] += draft_feeds(len(r["prompt_ids"]), steps)
        running[:m] += 1
    slots = contexts / np.maximum(running, 1)
    if gap_masked(rows):
        slots = padded_slots([len(p) for p in rows["prompt_ids"]], [list(a) for a in rows["accept_lengths"]], widths)
    step_draft, step_verify = _step_clocks(rows, lengths, n)
    rows = rows.assign(rest_time=rows["wall_time"] - rows["prefill_time"] - rows["draft_time"] - rows["verify_time"],
                       steps=lengths)
    out, start, before = [], 0, np.zeros(3)
    for end in sorted(set(lengths)):
        clocks = rows[rows["steps"] == end][list(CLOCKS)].iloc[0].to_numpy(float)   # the batch's, over steps < end
        part = slice(start, end)
        out.append({"segment": len(out), "running": int(running[start]), "n": end - start, "widths": widths[part],
                    "levels": levels[part], "contexts": contexts[part] / running[part], "slots": slots[part],
                    "feeds": feeds[part],
                    **dict(zip(("draft", "verify", "rest"), clocks - before)),
                    "prefill": float(rows["prefill_time"].fillna(0).max()) if not out else 0.0,
                    "step_draft": step_draft[part], "step_verify": step_verify[part]})
        start, before = end, clocks
    return out


def _step_clocks(rows: pd.DataFrame, lengths: list[int], n: int) -> tuple[np.ndarray, np.ndarray]:
    """The batch's draft and verify seconds of each of its ``n`` steps, from the longest row's ``draft_times`` /
    ``verify_times`` (a batch step's clocks are every running row's); NaN in logs without them."""
    longest = rows.iloc[int(np.argmax(lengths))]
    out = []
    for col in ("draft_times", "verify_times"):
        v = longest[col] if col in rows else None
        out.append(np.asarray(v, float) if v is not None and len(v) == n else np.full(n, np.nan))
    return out[0], out[1]


def live_segments(df: pd.DataFrame) -> pd.DataFrame:
    """One row per segment of each live batch of ``df`` (every config, ``ar`` timed last included): :func:`segments`'
    fields with the base pair, batch size, config and the batch's resampling unit (``unit``:
    ``jobs/report/batches.py``'s ``UNIT``, a block's turns together)."""
    live = metrics.ok_rows(df[modes(df) == "live"]) if len(df) else df
    if live.empty:
        return pd.DataFrame(columns=SEGMENT_COLUMNS)
    live = live.assign(batch_size=live["batch_size"].fillna(1).astype(int) if "batch_size" in live else 1,
                       base=base_pairs(live["pair"]), config=config_of(live),
                       timing=live["ar_timing"].fillna("") if "ar_timing" in live else "")
    out = []
    for (pair, size, config, timing, *batch), rows in live.groupby(["base", "batch_size", "config", "timing"] + BATCH):
        unit = tuple(dict(zip(BATCH, batch))[c] for c in UNIT)          # the batch's resampling unit
        for seg in segments(rows) or []:
            out.append({"pair": pair, "batch_size": int(size), "policy": rows["policy"].iloc[0], "config": config,
                        "timing": timing, "unit": unit, **seg})
    return pd.DataFrame(out, columns=SEGMENT_COLUMNS)


def _origin(model: CostModel, rows: int) -> float:
    """The context the model's terms count from at ``rows`` rows: 0 for the single-row model, C₀ for the surface."""
    return 0.0 if rows <= 1 else float(model.context)


def _verify_context(model: CostModel, rows: int, width: int, context: float) -> float:
    """The calibrated verify context terms of one step (``CostModel.batch_step_parts`` at ``context`` less at the
    origin)."""
    k, c0 = width - 1, _origin(model, rows)
    return model.batch_step_parts(rows, k, context)[1] - model.batch_step_parts(rows, k, c0)[1]


def _draft_extras(model: CostModel, rows: int, levels: int, feed: float, context: float) -> float:
    """The calibrated catch-up and draft context terms of one step (``CostModel.draft_time``'s d₂, d₃; d₄ as
    ``batch_step_parts`` prices it)."""
    if levels <= 0:
        return 0.0
    c0 = _origin(model, rows)
    moved = model.batch_step_parts(rows, levels, context)[0] - model.batch_step_parts(rows, levels, c0)[0]
    return float(catchup_time(model, feed, context)) + moved


def context_terms(model: CostModel, p) -> tuple[float, float]:
    """Segment ``p``'s (Σ_s verify context terms, Σ_s catch-up and draft context terms) under ``model``'s calibrated
    coefficients (:func:`_verify_context` at the target's context ``slots``, :func:`_draft_extras` at the rows'
    ``contexts``: module docstring)."""
    b = int(p.running)
    return (sum(_verify_context(model, b, int(w), c) for w, c in zip(p.widths, p.slots)),
            sum(_draft_extras(model, b, int(lv), f, c) for lv, f, c in zip(p.levels, p.feeds, p.contexts)))


def with_context_terms(model: CostModel, part: pd.DataFrame) -> pd.DataFrame:
    """``part`` (segments) with :func:`context_terms` as columns ``verify_context`` and ``draft_extras``. The refit
    keeps the calibration's context and catch-up coefficients, so the calibration's terms hold for all its refits:
    many refits and pricings of the same segments compute them once. ``part`` as given when it has them."""
    if part.empty or "verify_context" in part:
        return part
    model = model.as_measured()
    terms = [context_terms(model, p) for p in part.itertuples(index=False)]
    return part.assign(verify_context=[t[0] for t in terms], draft_extras=[t[1] for t in terms])


def segment_parts(model: CostModel, p) -> np.ndarray:
    """(draft, verify, rest) seconds ``model`` gives segment ``p``'s steps as they ran (a :func:`live_segments` row) at
    its ``running`` rows, the module rule: Σ_w (its steps of width w)·T_B(w) + verify context terms;
    d₀(B)·#{s: ℓ_s > 0} + T_d(B)·Σ_s ℓ_s + catch-up and draft context terms; n·o_B. The context and catch-up terms
    are ``p``'s columns where :func:`with_context_terms` added them, else ``model``'s."""
    b = int(p.running)
    verify_ctx, extras = ((p.verify_context, p.draft_extras) if hasattr(p, "verify_context")
                          else context_terms(model, p))
    widths, steps = np.unique(p.widths, return_counts=True)
    verify = sum(int(n) * _verify_at_origin(model, b, int(w)) for w, n in zip(widths, steps)) + verify_ctx
    drafting = p.levels[p.levels > 0]
    if model.level_draft(b, 1) is not None:
        draft = sum(model.level_draft(b, int(x)) for x in drafting) + extras
    else:
        base, per_level = _draft_at_origin(model, b)
        draft = base * len(drafting) + per_level * float(drafting.sum()) + extras
    return np.array([draft, verify, p.n * model.batch_overhead(b)])


def segment_seconds(model: CostModel, p) -> float:
    """Seconds ``model`` gives segment ``p``'s steps as they ran: the sum of :func:`segment_parts`."""
    return float(segment_parts(model, p).sum())


def _verify_at_origin(model: CostModel, rows: int, width: int) -> float:
    """The model's T_B(width) at its origin (context terms excluded)."""
    return model.batch_step_parts(rows, width - 1, _origin(model, rows))[1]


def _draft_at_origin(model: CostModel, rows: int) -> tuple[float, float]:
    """The model's (d₀(B), T_d(B)) at its origin."""
    c0 = _origin(model, rows)
    one, two = model.batch_step_parts(rows, 1, c0)[0], model.batch_step_parts(rows, 2, c0)[0]
    return one - (two - one), two - one


def fit_size(model: CostModel, part: pd.DataFrame, rows: int) -> dict | None:
    """{"knots", "values", "draft_base", "draft", "draft_levels", "overhead"} fitted on the segments ``part`` of
    ``rows`` rows (module rule), the widths up to the calibrated model's widest; None without a fitted width. A
    ``draws`` column (a bootstrap resample's) counts each segment that often."""
    if part.empty:
        return None
    part = with_context_terms(model, part)
    draws = part["draws"].to_numpy(float) if "draws" in part else np.ones(len(part))
    counts = {}
    for w, d in zip(part["widths"], draws):
        for x, c in zip(*np.unique(w, return_counts=True)):
            counts[int(x)] = counts.get(int(x), 0) + int(c) * d
    fitted = sorted(w for w, c in counts.items() if c >= MIN_STEPS)
    if not fitted:
        return None

    top = max(max(fitted), max(model.table["knots"]), max((max(e["knots"]) for e in model.batch.values()), default=1))
    widest = max(top, max(int(w.max()) for w in part["widths"]))
    calibrated = {w: _verify_at_origin(model, rows, w) for w in range(1, widest + 1)}

    by_width = {w: _in_scales(fitted, w) * calibrated[w] for w in calibrated}   # T_B(w) in the fitted scales
    Xv, yv, Xd, yd, wd = [], [], [], [], []
    for p, d in zip(part.itertuples(index=False), draws):
        ws, c = np.unique(p.widths, return_counts=True)
        Xv.append(sum(by_width[int(w)] * n for w, n in zip(ws, c)) / p.n)
        yv.append((p.verify - p.verify_context) / p.n)
        if p.levels.sum() > 0:
            Xd.append([float((p.levels > 0).sum()) / p.n, float(p.levels.sum()) / p.n])
            yd.append((p.draft - p.draft_extras) / p.n)
            wd.append(d)
    scales = robust_lstsq(np.array(Xv), np.array(yv), weights=draws, smooth=np.diff(np.eye(len(fitted)), axis=0))
    base, per_level = _draft_at_origin(model, rows)
    if Xd:
        Xd, yd, wd = np.array(Xd), np.array(yd), np.array(wd)
        per_step = Xd[:, 1] / Xd[:, 0]                  # each segment's draft forwards per drafting step
        if per_step.max() - per_step.min() >= 1 and len(yd) > 2:
            base, per_level = robust_lstsq(Xd, yd, weights=wd)
        else:                                           # one draft shape: scale the calibrated pair
            scale = float(wd @ yd / max(wd @ (Xd @ [base, per_level]), 1e-12))
            base, per_level = base * scale, per_level * scale
    knots = list(range(1, top + 1))
    out = [float(by_width[w] @ scales) for w in knots]
    return {"knots": knots, "values": out, "draft_base": float(base), "draft": float(per_level),
            "draft_levels": fit_levels(model, part, rows, draws),
            "overhead": float(draws @ part["rest"].to_numpy(float) / (draws @ part["n"].to_numpy(float)))}


def fit_levels(model: CostModel, part: pd.DataFrame, rows: int, draws: np.ndarray) -> dict | None:
    """D_B(ℓ), the seconds of a drafting step of ℓ draft forwards at ``rows`` rows (module rule: scales on the
    calibrated d₀(B) + ℓ·T_d(B) fitted at each ℓ run in ``MIN_STEPS`` drafting steps or more, linear between them,
    the smoothest where the segments leave them open), as {"knots": [1 … the most forwards run], "values"}; None
    with fewer than two such ℓ (the linear rule then stands) or a calibrated rule that is not positive."""
    counts: dict[int, float] = {}
    for lv, d in zip(part["levels"], draws):
        for x, c in zip(*np.unique(lv[lv > 0], return_counts=True)):
            counts[int(x)] = counts.get(int(x), 0.0) + int(c) * d
    fitted = sorted(x for x, c in counts.items() if c >= MIN_STEPS)
    base, per_level = _draft_at_origin(model, rows)
    top = max(counts, default=0)
    calibrated = {x: base + per_level * x for x in range(1, top + 1)}
    if len(fitted) < 2 or min(calibrated.values()) <= 0:
        return None
    by_level = {x: _in_scales(fitted, x) * calibrated[x] for x in calibrated}
    X, y, w = [], [], []
    for p, d in zip(part.itertuples(index=False), draws):
        drafting = p.levels[p.levels > 0]
        if len(drafting):
            X.append(sum(by_level[int(x)] for x in drafting) / p.n)
            y.append((p.draft - p.draft_extras) / p.n)
            w.append(d)
    scales = robust_lstsq(np.array(X), np.array(y), weights=np.array(w), smooth=np.diff(np.eye(len(fitted)), axis=0))
    knots = list(range(1, top + 1))
    return {"knots": knots, "values": [float(by_level[x] @ scales) for x in knots]}


def _in_scales(fitted: list[int], x: int) -> np.ndarray:
    """Weights on the fitted points' scales that give the scale at ``x``: linear between the two around it, the
    nearest one's beyond them."""
    out, i = np.zeros(len(fitted)), int(np.searchsorted(fitted, x))
    if i == 0 or i == len(fitted) or fitted[i] == x:
        out[min(i, len(fitted) - 1)] = 1.0
    else:
        t = (x - fitted[i - 1]) / (fitted[i] - fitted[i - 1])
        out[i - 1], out[i] = 1.0 - t, t
    return out


def refit(model: CostModel, part: pd.DataFrame) -> CostModel:
    """``model`` (its measured forward times: ``as_measured``) with every batch size that has segments in ``part``
    (their ``running`` rows) refitted on them (:func:`fit_size`); the other sizes as calibrated."""
    model = model.as_measured()
    table, draft, overhead, batch = dict(model.table), dict(model.draft), model.overhead, dict(model.batch)
    levels = dict(model.draft_levels)
    for size, sub in part.groupby("running"):
        fit = fit_size(model, sub, int(size))
        if fit is None:
            continue
        by_level = fit.pop("draft_levels")
        if by_level is not None:
            levels[int(size)] = by_level
        if int(size) <= 1:
            table.update(knots=fit["knots"], values=fit["values"])
            draft.update(per_step=fit["draft_base"], per_proposal=fit["draft"])
            overhead = fit["overhead"]
        else:
            batch[int(size)] = {k: v for k, v in batch.get(int(size), {}).items() if k != "raw"} | fit
    return dataclasses.replace(model, table=table, draft=draft, overhead=overhead, batch=batch, raw_verify={},
                               draft_levels=levels, label=f"{model.label} refitted on live steps".strip())


def live_models(models: dict[str, CostModel], steps: pd.DataFrame) -> dict[str, CostModel]:
    """{pair: :func:`refit` model} for every pair of ``models`` with segments in ``steps`` (:func:`live_segments`); the
    rest as given."""
    return {pair: (refit(m, steps[steps["pair"] == pair]) if (steps["pair"] == pair).any() else m)
            for pair, m in models.items()}
