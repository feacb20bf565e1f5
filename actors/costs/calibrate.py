"""Measure a pair's cost model on the engine's own step path (GT paper §3: the cost ratio c; Φ).

Probe. The one timing harness (``actors/costs/probe.py``) at one row: the engine runs ``steps`` × ``repeats``
speculative steps with exactly k drafts per step for k = 0 (``ar``), 1, 2, 4, … while k + 1 ≤ ``max_tokens`` (and
k ≤ the engine's ``max_draft``), on a repeated-block prompt and a random prompt of ``context`` tokens; ``ar`` and
the longest k run again at a longer context (2 × ``context``, within the KV capacity) to see whether context moves
the cost. Each step is timed by phase as the engine runs it: the draft phase (``Step.draft_time``: the drafter's
forwards and the policy's per-draft calls), the target forward alone (``Step.forward_time``), and the rest
(acceptance, cache crops, the policy, bookkeeping) as the per-step overhead.

Trees. With a drafter that grows trees, two static shapes (:data:`TREE_SHAPES`) run on the tree
path too; a tree step's draft phase is fitted as a·levels + b·nodes (``CostModel.tree``), since
the drafter runs one forward per level over all of that level's nodes — GT's tree rule reads
c = a / (T(1) + o) (``CostModel.c_tree``).

Fit. ``policies/cost_fit.py``'s rule and robust least squares (steps more than 3 robust σ off
refitted without) give d₀…d₄, T(m) at m = k + 1 and o; the residuals are kept. The context terms
stay only if they move a step's predicted time by more than ``CONTEXT_EFFECT`` (5 %) between the
two contexts; otherwise the model is refitted without them. T is made non-decreasing
(``policies.knots.monotone``: a longer forward never costs less), the raw knots kept in
``raw_verify`` (on a CPU the kernels chosen per shape can make m = 5 faster than m = 3).

Trust. The measurement is marked unreliable (``CostModel.trust``) when the steps scatter around
the fit by more than ``RESIDUAL_LIMIT`` (median relative residual of a step's time) or other work
ran on the machine: the CPUs busy over the probe (``actors/costs/machine.py``'s ``busy_cpus`` from
``/proc/stat``; where that cannot be read, the 1-minute load average, which also counts work that
ended in the minute before the probe) minus this process's own CPU use over the probe and minus the CPUs held by
the sweep's other actors (``sibling_load``: they calibrate and run beside this one by design) above
``LOAD_LIMIT`` × CPU count.
"""
from __future__ import annotations

import os
import time

import numpy as np
import torch

from actors.core.engine import SpecEngine
from actors.costs.machine import busy_cpus, cpu_times, engine_models, machine_facts
from actors.costs.probe import WARMUP_STEPS, block_prompt, eos_ignored, probe_runs
from policies.cost_fit import MIN_KNOT_STEPS, fit_cost_model
from policies.costs import CostModel
from policies.knots import measured_knots, monotone
from policies.fixed import TargetOnly
from policies.trees import Sequoia

CONTEXT_EFFECT = 0.05     # keep context terms when they move a predicted step by more than this
RESIDUAL_LIMIT = 0.15     # a step's time off the fit by more than this (median): not to be trusted
LOAD_LIMIT = 0.5          # others' load above this × CPU count: not to be trusted
TREE_SHAPES = ((8, 2), (16, 4))   # Sequoia (budget, depth) shapes of the tree probe
TREE_ACCEPT = "0.5/0.3/0.2"      # a fixed per-rank acceptance for those shapes


def probe_tree_steps(engine: SpecEngine, prompt: list[int], steps: int) -> list:
    """Tree steps of the engine's tree path (``actors/core/tree_step.py``) for each shape of :data:`TREE_SHAPES`: a warm-up
    run discarded, then ``steps`` steps kept, the first (the draft's prompt catch-up) dropped."""
    out = []
    with eos_ignored(engine):
        for budget, depth in TREE_SHAPES:
            policy = Sequoia(budget=budget, depth=depth, accept=TREE_ACCEPT)
            engine.generate(prompt, policy, max_new_tokens=WARMUP_STEPS * (depth + 1) + 1, max_steps=WARMUP_STEPS)
            g = engine.generate(prompt, policy, max_new_tokens=(steps + 1) * (depth + 1) + 1, max_steps=steps + 1)
            out += g.steps[1:]
    return out


def fit_tree_draft(steps) -> dict:
    """Tree drafting as the engine pays it: draft_time = a·levels + b·nodes by least squares (coefficients ≥ 0; a
    level is one draft forward over that level's nodes), with the median relative residual."""
    if len(steps) < 2:
        return {}
    X = np.array([[s.tree_depth, s.tree_nodes] for s in steps], dtype=float)
    y = np.array([s.draft_time for s in steps])
    coef = np.clip(np.linalg.lstsq(X, y, rcond=None)[0], 0.0, None)
    if (coef == 0).any():                         # a negative coefficient dropped: refit the other alone
        j = int(np.argmax(coef))
        coef = np.zeros(2)
        coef[j] = max(0.0, float(np.linalg.lstsq(X[:, [j]], y, rcond=None)[0][0]))
    pred = X @ coef
    resid = np.abs(pred - y) / np.where(y > 0, y, np.nan)
    return {"per_level": float(coef[0]), "per_node": float(coef[1]), "steps": len(steps),
            "median_abs_rel": float(np.nanmedian(resid))}


def context_effect(model: CostModel, ks, contexts) -> float:
    """The largest relative change of a predicted step time (draft + verify) between the probe's two contexts."""
    if len(contexts) < 2:
        return 0.0
    a, b = contexts[0], contexts[-1]
    out = 0.0
    for k in ks:
        ta, tb = model.step_time(k, a), model.step_time(k, b)
        if ta > 0:
            out = max(out, abs(tb - ta) / ta)
    return out


def fit_engine_costs(runs, probe: dict, *, context: int, machine: dict, label: str = "",
                     own_load: float = 0.0, judge_trust: bool = True, sibling_load: float = 0.0) -> CostModel:
    """The cost model from engine-path runs: fit, context terms kept only where they matter, T made
    non-decreasing, and the trust verdict (module docstring)."""
    counts: dict[int, int] = {}
    for _, gen in runs:
        for st in gen.steps:
            counts[st.drafted + 1] = counts.get(st.drafted + 1, 0) + 1
    knots = sorted({k + 1 for k in probe["lengths"] if k + 1 in counts}
                   | {m for m, n in counts.items() if n >= MIN_KNOT_STEPS})
    model = fit_cost_model(runs, label=label, knots=knots)
    effect = context_effect(model, probe["lengths"], probe["contexts"])
    if effect <= CONTEXT_EFFECT:
        model = fit_cost_model(runs, label=label, knots=knots, context_terms=False)
    values = dict(zip(model.table["knots"], model.table["values"]))
    # the non-decreasing table policies read, from the knots as measured (a 0 or a stalled knot interpolated)
    fitted = monotone(dict(zip(values, measured_knots(list(values), list(values.values())))))
    if fitted != values:                 # kept: on a CPU a longer forward can run faster (kernels chosen per shape)
        model.raw_verify = values
        model.table["values"] = [fitted[m] for m in model.table["knots"]]
    model.context = int(context)
    model.device = machine.get("device", "cpu")
    model.machine = dict(machine)
    model.probe = {**probe, "context_effect": round(effect, 4), "context_terms": effect > CONTEXT_EFFECT}
    model.trust = judge(model, own_load, sibling_load) if judge_trust else {"reliable": True, "reasons": [], "judged": False}
    return model


def judge(model: CostModel, own_load: float, sibling_load: float = 0.0) -> dict:
    """{"reliable": bool, "reasons": [...]}: the fit's residual spread and the others' load (module docstring)."""
    reasons = []
    spread = model.residuals.get("step", {}).get("median_abs_rel")
    if spread is not None and spread > RESIDUAL_LIMIT:
        reasons.append(f"steps scatter {spread:.0%} around the fit (median; limit {RESIDUAL_LIMIT:.0%})")
    cpus = model.machine.get("cpu_count") or os.cpu_count() or 1
    busy = model.machine.get("busy_cpus")
    measured = busy is not None
    others = max(0.0, float(busy if measured else model.machine.get("load_avg", 0.0)) - own_load - sibling_load)
    if others > LOAD_LIMIT * cpus:
        what = "CPUs busy during the probe" if measured else "load"
        reasons.append(f"other work loaded the machine ({what} {others:.1f} besides ours on {cpus} CPUs; "
                       f"limit {LOAD_LIMIT * cpus:.1f})")
    return {"reliable": not reasons, "reasons": reasons, "others_load": round(others, 2),
            "sibling_load": round(float(sibling_load), 2),
            "load_source": "cpu time during the probe" if measured else "1-minute load average"}


@torch.no_grad()
def calibrate(engine: SpecEngine, *, context: int = 256, max_tokens: int = 64, repeats: int = 3, steps: int = 4,
              seed: int = 0, label: str = "", extra_runs=(), judge: bool = True, sibling_load: float = 0.0) -> CostModel:
    """The pair's :class:`~policies.costs.CostModel`, measured on the engine's step path (module docstring).
    ``extra_runs``: more live runs of this engine [(prompt length, Generation), …] fitted with the probe's.
    ``judge=False``: trusted whatever the residuals and the load (the sweep config's ``calibrate.judge``).
    ``sibling_load``: CPUs the sweep's other actors hold, not counted as other work."""
    engine.prepare()
    wall, cpu, ticks = time.perf_counter(), time.process_time(), cpu_times()
    runs, probe = probe_runs(engine, context=context, max_tokens=max_tokens, repeats=repeats, steps=steps, seed=seed)
    tree_steps = []
    if engine.drafter is not None and engine.drafter.supports_trees:
        vocab = engine.target.get_input_embeddings().weight.shape[0]
        tree_steps = probe_tree_steps(engine, block_prompt(vocab, context, seed), steps * repeats)
    own = (time.process_time() - cpu) / max(time.perf_counter() - wall, 1e-9)
    busy = busy_cpus(ticks, cpu_times(), os.cpu_count() or 1)
    dtype = next(engine.target.parameters()).dtype
    machine = machine_facts(engine.device, dtype, engine_models(engine), engine)
    if busy is not None:
        machine["busy_cpus"] = round(busy, 2)
    model = fit_engine_costs(runs + list(extra_runs), probe, context=context, machine=machine,
                             label=label, own_load=own, judge_trust=judge, sibling_load=sibling_load)
    model.tree = fit_tree_draft(tree_steps)
    return model


@torch.no_grad()
def rank_acceptance(target, draft, prompts: list[list[int]], *, ranks: int = 8, max_new_tokens: int = 48,
                    floor: float = 1e-3) -> list[float]:
    """Per-rank acceptance p[r-1] = P(the target's greedy token is the draft's rank-r candidate),
    unconditional (Σ_r p_r <= 1): Sequoia's acceptance vector (Chen et al. 2024, §3.1), which its
    dynamic program and GT(s)'s α̂ = Π p multiply along a path.

    Measured with teacher forcing on the target's own greedy continuations of ``prompts``: p_r =
    (positions where the target's token is the draft's rank-r candidate) / (all positions). Each
    entry is at least ``floor`` (a rank never seen still gets a tiny chance); if the floors push
    the sum above 1 the vector is scaled back to sum 1. ``draft``: a causal LM, or a function
    seq -> draft logits [len(seq) − 1, V] predicting seq[1:] (an EAGLE head's ``teacher_forced_logits``).
    """
    hits = [0] * ranks
    positions = 0
    engine = SpecEngine(target)
    for prompt in prompts:
        cont = engine.generate(prompt, TargetOnly(), max_new_tokens=max_new_tokens).token_ids
        seq = list(prompt) + cont
        if isinstance(draft, torch.nn.Module):
            logits = draft(input_ids=torch.tensor([seq[:-1]], device=draft.device)).logits[0, len(prompt) - 1:]
        else:
            logits = draft(seq)[len(prompt) - 1:]
        order = logits.float().argsort(-1, descending=True)[:, :ranks].tolist()
        for row, tok in zip(order, cont):
            positions += 1
            if tok in row:
                hits[row.index(tok)] += 1
    return acceptance_vector(hits, positions, floor)


def acceptance_vector(hits: list[int], positions: int, floor: float = 1e-3) -> list[float]:
    """Unconditional per-rank acceptance from hit counts: max(floor, hits_r / positions), rescaled
    to sum 1 if the floors push it above 1."""
    p = [max(floor, h / positions) if positions > 0 else floor for h in hits]
    total = sum(p)
    return [x / total for x in p] if total > 1.0 else p
