"""Each pair's cost model as the report shows it, and whether its predicted times can be trusted.

From ``OUTPUT/actors.json`` (one entry per actor; ``costs`` is the model measured on the engine's
step path, ``actors/costs/calibrate.py``): per actor the cost ratio c = M_D / M_T that GT reads ("Max-Speedup
Speculative Sampling: A Generic Tree Construction Principle", §3.1), that paper's knee K and Φ(k) (Eq. 2,
18: the milliseconds verifying k drafts adds to a plain target forward, 0 below K; ``policies/phi.py``), the
parameter ratio c_params (its A.8 / Table 10), the plain target step T(1) + o, the draft phase per token,
the per-step overhead o, the median relative residual of a step's time, and the trust verdict.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from jobs.report.agreement import stored_config, untrusted_by_validation
from policies.costs import CostModel
from policies.phi import NO_KNEE

PHI_AT = (1, 2, 4, 8, 16)
REMEASURE = ("re-measure on a quiet machine: `specsweep calibrate --out costs.json` (same pair flags), then "
             "`specsweep replay OUTPUT --policies FILE.yaml --costs costs.json`")


def read_actor_infos(output: str) -> dict:
    """``OUTPUT/actors.json`` as {pair label: [actor info, …]}; {} when the sweep wrote none."""
    try:
        return json.loads((Path(output) / "actors.json").read_text())
    except (OSError, ValueError):
        return {}


def pair_cost_models(infos: dict) -> dict[str, CostModel]:
    """{pair: the cost model to predict its steps with}: per actor the replay clock (``cost_model``) or else the
    measured model (``costs``); of a pair's actors the one whose batch cost surface holds the most batch sizes (the
    first on a tie). Pairs with no model are left out."""
    out: dict[str, CostModel] = {}
    for pair, acts in infos.items():
        models = [CostModel.from_dict(i.get("cost_model") or i["costs"]) for i in acts
                  if i.get("cost_model") or i.get("costs")]
        if models:
            out[pair] = max(models, key=lambda m: len(m.batch))
    return out


def cost_table(infos: dict) -> pd.DataFrame:
    """One row per actor with a cost model (module docstring)."""
    rows = []
    for pair, actors in infos.items():
        for info in actors:
            if not info.get("costs"):
                continue
            m = CostModel.from_dict(info["costs"])
            knots = m.table["knots"]
            row = {"pair": pair, "actor": info.get("actor", ""), "drafter": info.get("drafter", ""),
                   "device": m.machine.get("device_name", m.device),
                   "c": m.c, "T(1)+o ms": m.t_target * 1e3, "draft/token ms": m.t_draft * 1e3,
                   "overhead ms": m.overhead * 1e3}
            row["c_params"] = m.c_params if m.c_params is not None else float("nan")
            row["K"] = m.knee() if m.knee() < NO_KNEE else float("nan")
            row.update({f"Φ({k}) ms": m.phi(k) * 1e3 for k in PHI_AT if k + 1 <= max(knots)})
            row["residual"] = m.residuals.get("step", {}).get("median_abs_rel", float("nan"))
            row["trusted"] = "yes" if m.reliable else "NO: " + "; ".join(m.trust.get("reasons", []))
            rows.append(row)
    return pd.DataFrame(rows)


def costs_text(infos: dict) -> str:
    """The cost-model section of the report ("" when no actor measured one)."""
    t = cost_table(infos)
    if t.empty:
        return ""
    t = t.drop(columns=["actor"]) if t["pair"].is_unique else t
    for c in t.columns:
        if c == "residual":
            t[c] = t[c].map(lambda v: f"{v:.1%}" if v == v else "")
        elif t[c].dtype.kind == "f":
            t[c] = t[c].map(lambda v: f"{v:.3g}" if v == v else "")
    return ("cost model per actor, measured on the engine's step path (c = draft/token over a plain target step; "
            "c_params = draft/target parameters; K = the GT paper's knee, the fewest drafts whose verify is measurably "
            "slower (blank: none); Φ(k) = the GT paper's Φ, what verifying k drafts adds, 0 below K; "
            "residual = a step's median relative miss)\n"
            + t.to_string(index=False))


def untrusted_pairs(infos: dict) -> dict[str, list[str]]:
    """{pair: reasons} for the pairs with an actor whose cost model was not trusted when measured."""
    out: dict[str, list[str]] = {}
    for pair, actors in infos.items():
        for info in actors:
            model = info.get("cost_model") or info.get("costs")
            if model and not (model.get("trust") or {}).get("reliable", True):
                out.setdefault(pair, []).extend(model["trust"].get("reasons", []))
    return out


def untrusted_text(reasons: dict[str, list[str]]) -> str:
    """One line per pair whose replayed times are left out, with why and how to re-measure ("" when none)."""
    return "\n".join(f"UNRELIABLE: replayed times of {pair} are not shown ({'; '.join(dict.fromkeys(r)) or 'see actors.json'}"
                     f"); token and step figures stand; {REMEASURE}" for pair, r in reasons.items())


def untrusted_reasons(output: str, df: pd.DataFrame) -> dict[str, list[str]]:
    """{pair: reasons} for the pairs whose replayed times are not to be shown: an actor's cost model was not
    trusted when measured (``actors.json``), or the validated replays miss live times beyond the machine's noise
    (not when the sweep's config says ``calibrate: {judge: false}``)."""
    out = untrusted_pairs(read_actor_infos(output))
    if not judged(output):                     # `calibrate: {judge: false}`: trusted whatever validation says
        return out
    for pair, why in untrusted_by_validation(df).items():
        out.setdefault(pair, []).extend(why)
    return out


def judged(output: str) -> bool:
    """Whether the sweep in ``output`` judges its replayed times (its config's ``calibrate.judge``, default true)."""
    return bool((stored_config(output).get("calibrate") or {}).get("judge", True))
