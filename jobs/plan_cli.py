"""``specsweep plan CONFIG.yaml [--json]``: each pair's GPU memory from its config.json alone, and where it fits.

The rule is in ``actors/plan/memory_plan.py``; the GPU kinds and their sources in ``actors/plan/gpus.py``.
Every pair is planned at the config's largest batch size (``plan_batch``), which the output names.
A pair that reserves GPUs (``num_gpus`` ≥ 1) and fits no listed GPU kind at that count ends the
command with one line and exit status 2 — the same check ``specsweep sweep`` runs before Ray starts.
"""
from __future__ import annotations

import json

from actors.plan.gpus import GB, GPUS
from actors.plan.memory_plan import (VERIFY_TOKENS, WORKSPACE_BYTES, ModelPlan, PairPlan, check_fits, load_config_dict,
                                     pair_plan, plan_batch)
from jobs.config.lists import load_configs
from policies.errors import SpecsweepError


def _gb(x: float) -> str:
    return f"{x / GB:.2f} GB"


def _model_lines(role: str, m: ModelPlan, positions: int, batch: int) -> list[str]:
    weights = (f"{m.quantization} linear layers, the rest {m.dtype}" if m.quantization else m.dtype)
    parts = ", ".join(f"{k} {v / 1e9:.3f} B" for k, v in m.params.items() if v)
    return [f"  {role:6s} {m.name} ({m.source})",
            f"         params {m.total_params / 1e9:.3f} B ({parts})",
            f"         weights {_gb(m.weight_bytes)} ({weights}); KV cache {m.kv_bytes_per_token / 1e3:.1f} kB/position "
            f"× {positions} positions × {batch} row(s) = {_gb(m.kv_bytes)}; "
            f"activations {_gb(m.activation_bytes)}"]


def plan_text(plan: PairPlan, positions: int) -> str:
    lines = [f"pair {plan.label}: num_gpus {plan.num_gpus}, batch {plan.batch} (the largest of batch_sizes)"]
    lines += _model_lines("target", plan.target, positions, plan.batch)
    if plan.draft:
        lines += _model_lines("draft", plan.draft, positions, plan.batch)
    lines.append(f"  GPU 0 holds {_gb(plan.per_gpu_bytes)} (target weights and cache / {plan.num_gpus}, the draft, "
                 f"activations of a {VERIFY_TOKENS}-token forward of {plan.batch} row(s), {_gb(WORKSPACE_BYTES)} "
                 "workspace)")
    cells = []
    for key, g in GPUS.items():
        n = plan.min_gpus[key]
        cells.append(f"{g.label}: {'fits' if plan.fits[key] else 'no'} (fewest {n if n else '>64'})")
    lines.append("  " + "; ".join(cells))
    return "\n".join(lines)


def plans(cfg, path: str = "config") -> list[PairPlan]:
    """Each pair's plan at the config's largest batch size; a config.json or EAGLE head the sweep would refuse is
    refused here, naming the pair."""
    out, batch = [], plan_batch(cfg)
    for i, p in enumerate(cfg.pairs):
        for field, step in (("target", lambda: load_config_dict(p.target)),
                            ("draft", lambda: out.append(pair_plan(p, batch)))):
            try:
                step()
            except SpecsweepError as e:
                raise SpecsweepError(f"{path} pairs[{i}].{field}: {e}") from None
    return out


def check_config(cfg, path: str = "config") -> None:
    """Refuse the first pair that reserves GPUs and fits no listed GPU kind at the config's largest batch size."""
    for i, p in enumerate(cfg.pairs):
        if p.num_gpus >= 1:
            check_fits(pair_plan(p, plan_batch(cfg)), f"{path} pairs[{i}]")


def main(a) -> int:
    cfg = load_configs(a.config)[0]      # the pairs are the same at every listed temperature
    result = plans(cfg, a.config)
    if a.json:
        print(json.dumps([p.to_dict() for p in result], indent=1))
    else:
        print(f"# Memory plan of {a.config} (from config.json files; no weights loaded)")
        for p, entry in zip(result, cfg.pairs):
            print(plan_text(p, entry.max_context))
    check_config(cfg, a.config)
    return 0


def add_parser(sub) -> None:
    pl = sub.add_parser("plan", help="each pair's GPU memory from its config.json, and which GPUs it fits")
    pl.add_argument("config")
    pl.add_argument("--json", action="store_true", help="print the plans as JSON")
    pl.set_defaults(fn=main)
