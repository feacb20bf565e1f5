"""Measure a pair's batch cost surface: what one step of B rows costs, by phase, on the engine's own step path.

Rule. For each batch size B in ``sizes``, the one timing harness (``actors/costs/probe.py``) runs the pair's engine
at B rows with k = L − 1 drafts per step for every width L in ``widths`` (every row verifies L tokens), on B
repeated-block and B random prompts of ``context`` tokens on average (their lengths spread ± 25 %), ``steps`` × ``repeats`` kept steps per k — the same runs,
rows runner and clock as ``specsweep calibrate``'s single-row probe (``actors/costs/calibrate.py``). The single-row
fit of ``policies/cost_fit.py`` (no context terms: one context) is applied to the batch's steps, each step being one
batched draft phase, one target forward over B·L slots and the rest of the step for all B rows:

* T_B(L) — one target forward over B rows × L tokens: the table value at knot L (its raw fit kept in ``raw``,
  ``values`` made non-decreasing over L by ``policies/costs.py::monotone``: a wider forward never costs less);
* T_d(B) — one batched draft level (``draft``: d₁, seconds per proposal level) and the per-step draft cost paid
  once a step drafts at all (``draft_base``: d₀); 0 for a drafter whose levels cost nothing measurable;
* o_B — the rest of a B-row step (``overhead``: acceptance, cache crops, policy calls and bookkeeping of B rows).

Result: ``{B: {"knots": [L…], "values": [T_B(L)…], "raw": […], "draft": T_d(B), "draft_base": d₀(B),
"overhead": o_B, "steps": n}}``, the format of ``policies/costs.py``'s ``CostModel.batch``; the size B = 1 is the
single-row model itself (``CostModel._by_batch``), so it is measured only where asked (``bench/batch.py``).
"""
from __future__ import annotations

from typing import Sequence

from actors.core.engine import SpecEngine
from actors.costs.probe import probe_runs
from policies.cost_fit import fit_cost_model
from policies.knots import monotone

# every width from 1 to 9 (k = 0 … 8 drafts): a batched forward's time is far from smooth in B·L on a CPU (measured
# on SmolLM2-135M at B = 4: L = 4 costs less than the line between L = 3 and L = 5 predicts), so no γ up to 8 is
# priced by interpolation; wider steps extrapolate from the last two widths
WIDTHS = tuple(range(1, 10))


def positive_times(fitted: Sequence[float], least: float = 1e-9) -> list[float]:
    """Fitted forward times with every value ≤ 0 raised to the least positive one (``least`` when none is): a forward
    never costs nothing, and a knot fitted at ≤ 0 — few steps at a width, or steps of microseconds where timer noise
    outweighs the work, with interpolated widths pulling on it — says only that its cost was not resolved."""
    floor = min((v for v in fitted if v > 0), default=least)
    return [float(v) if v > 0 else floor for v in fitted]


def surface_entry(runs, widths: Sequence[int]) -> dict:
    """One batch size's entry from the harness's runs at that size (the module docstring's rule)."""
    seen = {s.drafted + 1 for _, g in runs for s in g.steps}
    model = fit_cost_model(runs, knots=[w for w in widths if w in seen] or None, context_terms=False,
                           draft_nonneg=("per_step", "per_proposal"))     # stored as times: none fitted below 0
    # a width no step ran at (a drafter that proposed fewer) is read off the fitted table, never left at 0
    raw = positive_times([model.verify_time(w, 0) for w in widths])
    fitted = monotone(dict(zip(widths, raw)))                 # a wider forward never costs less
    return {"knots": list(widths), "values": [fitted[w] for w in widths], "raw": raw,
            "draft": max(0.0, model.draft.get("per_proposal", 0.0)),
            "draft_base": max(0.0, model.draft.get("per_step", 0.0)),
            "overhead": max(0.0, model.overhead), "steps": model.n_steps}


def measure_batch_costs(engine: SpecEngine, sizes: Sequence[int] = (2, 4, 8, 16),
                        widths: Sequence[int] = WIDTHS, context: int = 256, repeats: int = 3,
                        steps: int = 2, seed: int = 0, progress=None) -> dict:
    """The batch cost surface ``{B: entry}`` of ``engine``'s pair at each batch size in ``sizes`` and verified width
    in ``widths`` (module docstring's rule). ``progress(text)``: told as each size is done (None: silent)."""
    sizes, widths = sorted({int(b) for b in sizes}), sorted({int(w) for w in widths})
    if not sizes or sizes[0] < 1 or not widths or widths[0] < 1:
        raise ValueError(f"batch sizes and widths must be integers >= 1, got {sizes} and {widths}")
    if context < 1 or repeats < 1 or steps < 1:
        raise ValueError(f"context, repeats and steps must be >= 1, got {context}, {repeats} and {steps}")
    if engine.drafter is None:
        widths = [1]                                             # nothing to draft: ar steps only
    engine.prepare(max(widths) - 1)
    out = {}
    for rows in sizes:
        runs, _ = probe_runs(engine, context=context, repeats=repeats, steps=steps, seed=seed,
                             second_context=False, rows=rows, lengths=[w - 1 for w in widths])
        out[rows] = surface_entry(runs, widths)
        if progress is not None:
            progress(f"batch cost surface at B = {rows}: T_B(1) {out[rows]['values'][0] * 1e3:.1f} ms")
    return out
