"""Where a γ-table prediction misses: per pair, batch size and live config (``ar`` and ``fixed`` γ = K), the measured
milliseconds per step of the draft, the target forward and the rest while every row of a batch runs, beside the
cost model's terms for the same step.

Why: the γ table's live check (``jobs/report/gamma_table.py``) compares one ratio; when it misses, this says which
part of a step the cost model got wrong and by how much.

Rule: in each live batch (a B = 1 row is a batch of one) the row that ends first bounds the full phase; its
``draft_time``, ``verify_time`` and wall time less prefill, draft and verify, over its ``decoding_steps``, are the
measured per-step parts (a row's clocks run while it is in the batch, so they are the batch's). The model's parts at
C = the batch's mean prompt + half that row's tokens are ``CostModel.batch_step_parts`` on the measured forward times,
the draft part plus the expected catch-up after fully accepted rows and the prompts' catch-up spread over the phase's
steps (the γ table's rule). Per config: step-weighted means over batches; the measured step with its 95 % percentile
bootstrap interval over batches, and the model's step error against the measured mean.

    python -m bench.gamma_components OUTPUT           # a sweep folder with live rows (seconds, no model loaded)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from jobs.report import metrics
from jobs.report.agreement import modes
from jobs.report.batches import UNIT, base_pairs
from jobs.report.costs import pair_cost_models, read_actor_infos
from jobs.report.gamma_model import acceptance, catchup_time, expected_catchup
from jobs.report.intervals import bootstrap_weights, percentile_interval
from jobs.store.parquet_log import ParquetLog

PARTS = ("draft", "verify", "rest")


def phase_rows(df: pd.DataFrame) -> pd.DataFrame:
    """One row per live batch of ``ar`` (timed first) and ``fixed``: its first-ending row's measured parts (seconds)
    and steps, B, the batch's mean prompt length and that row's tokens."""
    live = metrics.ok_rows(df[modes(df) == "live"])
    live = live[live["policy"].isin(["ar", "fixed"]) & (live["ar_timing"].fillna("") != "last")]
    live = live.assign(batch_size=live["batch_size"].fillna(1).astype(int), base=base_pairs(live["pair"]))
    out = []
    for _, batch in live.groupby(["base", "batch_size", "policy_spec", "gamma"] + UNIT):
        first = batch.loc[batch["decoding_steps"].idxmin()]
        steps = int(first["decoding_steps"])
        if steps <= 0:
            continue
        rest = first["wall_time"] - first["prefill_time"] - first["draft_time"] - first["verify_time"]
        out.append({"pair": first["base"], "B": int(first["batch_size"]), "config": first["policy_spec"],
                    "K": int(first["gamma"]), "steps": steps, "draft": first["draft_time"],
                    "verify": first["verify_time"], "rest": rest, "new_tokens": int(first["new_tokens"]),
                    "prompt": float(np.mean([len(p) for p in batch["prompt_ids"]]))})
    return pd.DataFrame(out)


def model_parts(model, rows: int, k: int, context: float, s_k: float, prompt: float, steps: int) -> np.ndarray:
    """The cost model's (draft, verify, rest) seconds per step of the phase (module rule)."""
    d, v, o = model.batch_step_parts(rows, k, context)
    if k:
        d += float(expected_catchup(model, rows, s_k, context))
        d += float(catchup_time(model, rows * max(prompt - 1, 0), context)) / steps
    return np.array([d, v, o])


def components(folder: str, resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per (pair, B, config, K): measured and model ms per step by part, the measured step's interval over batches."""
    df = ParquetLog(folder).read()
    phases = phase_rows(df)
    if phases.empty:
        return pd.DataFrame()
    models = {p: m.as_measured() for p, m in pair_cost_models(read_actor_infos(folder)).items()}
    accept = acceptance(metrics.ok_rows(df))
    out = []
    for (pair, b, config, k), part in phases.groupby(["pair", "B", "config", "K"]):
        if pair not in models:
            continue
        s = accept.get(pair, [])
        s_k = s[k - 1] if 0 < k <= len(s) else 0.0
        steps = part["steps"].to_numpy(float)
        measured = part[list(PARTS)].to_numpy(float)                                   # [batches, 3] seconds
        model = np.array([model_parts(models[pair], int(b), int(k), r.prompt + r.new_tokens / 2, s_k, r.prompt,
                                      int(r.steps)) * r.steps for r in part.itertuples()])
        per_step = measured.sum(axis=0) / steps.sum()
        predicted = model.sum(axis=0) / steps.sum()
        lo = hi = np.nan
        if len(part) > 1:
            w = bootstrap_weights(len(part), resamples, seed)
            lo, hi = (x[0] for x in percentile_interval(((w @ measured.sum(axis=1)) / (w @ steps))[:, None]))
        row = {"pair": pair, "B": int(b), "config": config, "K": int(k), "batches": len(part), "steps": int(steps.sum())}
        for name, m, p in zip(PARTS, per_step, predicted):
            row[f"{name}_ms"], row[f"model_{name}_ms"] = m * 1e3, p * 1e3
        row.update(step_ms=per_step.sum() * 1e3, step_lo=lo * 1e3, step_hi=hi * 1e3,
                   model_step_ms=predicted.sum() * 1e3, error=predicted.sum() / per_step.sum() - 1)
        out.append(row)
    return pd.DataFrame(out)


def table(t: pd.DataFrame) -> str:
    lines = ["| pair | B | config | batches | steps | draft ms (model) | verify ms (model) | rest ms (model) | "
             "step ms [95 %] | model step ms | model error |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in t.itertuples():
        ci = f" [{r.step_lo:.1f}, {r.step_hi:.1f}]" if r.step_lo == r.step_lo else ""
        lines.append(f"| {r.pair} | {r.B} | {r.config} γ {r.K} | {r.batches} | {r.steps} | {r.draft_ms:.1f} "
                     f"({r.model_draft_ms:.1f}) | {r.verify_ms:.1f} ({r.model_verify_ms:.1f}) | {r.rest_ms:.2f} "
                     f"({r.model_rest_ms:.2f}) | {r.step_ms:.1f}{ci} | {r.model_step_ms:.1f} | {r.error:+.1%} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="a sweep's output folder with live rows")
    a = ap.parse_args(argv)
    if not Path(a.output).is_dir():
        print(f"bench.gamma_components: no sweep folder at {a.output!r} (give a sweep's output folder)", file=sys.stderr)
        return 2
    try:
        t = components(a.output)
    except (FileNotFoundError, OSError) as e:
        print(f"bench.gamma_components: cannot read {a.output!r}: {e}", file=sys.stderr)
        return 2
    if t.empty:
        print(f"bench.gamma_components: {a.output!r} holds no live ar or fixed rows with a stored cost model",
              file=sys.stderr)
        return 2
    print(table(t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
