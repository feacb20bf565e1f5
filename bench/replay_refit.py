"""Refit the replay cost model offline on a ``bench.replay --dump`` file and compare time errors.

No model is loaded: the dump holds the cost-model fit runs, every turn's trace and the live
brute-force generations. For each variant of the fit (which runs it sees, where the verify
table has knots) every live config is replayed again and |predicted − measured| / measured
wall time is summarised (median, p90), with and without the per-turn ``ar`` calibration.
The error is also split by component on the live runs' own steps (same steps, so no
replay difference): Σ draft, Σ verify and the per-step remainder, predicted vs measured, as
shares of the measured wall time.

    python -m bench.replay_refit DUMP.pkl
"""
from __future__ import annotations

import argparse
import pickle
import statistics

import numpy as np

from actors.tracing.replay import replay
from jobs.report.derived import time_error
from policies.cost_fit import draft_feeds, fit_cost_model, target_time, turn_scale
from policies.registry import build


def time_errors(dump: dict, model, calibrate: bool, keys=None) -> list[float]:
    """|predicted − measured| / measured wall time of each live config (or of ``keys``), replayed under ``model``."""
    live, traces, costs = dump["live"], dump["traces"], dump["costs"]
    out = []
    for k in keys or live:
        qi, spec, g = k
        rep = replay(traces[qi], build(spec, g), costs=costs, cost_model=model, calibrate=calibrate)
        out.append(time_error(rep.wall_time, live[k].wall_time))
    return out


def _components(dump: dict, model) -> dict:
    """Signed mean of (predicted − measured) / measured wall, per component, over the live runs' own steps."""
    rows = {"draft": [], "verify": [], "rest": [], "all": []}
    for (qi, spec, g), gen in dump["live"].items():
        tr = dump["traces"][qi]
        plen = len(tr.prompt_ids)
        s = turn_scale(model, plen, tr.ar_step_times)
        pd = pv = 0.0
        ctx = plen
        for st, e in zip(gen.steps, draft_feeds(plen, gen.steps)):
            p = st.proposed or st.drafted
            pd += s * model.draft_time(p, e, ctx)
            pv += s * model.verify_time(st.drafted + 1, ctx)
            ctx += st.emitted
        md = sum(st.draft_time for st in gen.steps)
        mv = sum(target_time(st) for st in gen.steps)
        rest_m = gen.wall_time - gen.prefill_time - md - mv
        rest_p = s * model.overhead * len(gen.steps) + (tr.prefill_time - gen.prefill_time)
        w = gen.wall_time
        rows["draft"].append((pd - md) / w)
        rows["verify"].append((pv - mv) / w)
        rows["rest"].append((rest_p - rest_m) / w)
        rows["all"].append((pd + pv + rest_p - md - mv - rest_m) / w)
    return {k: (float(np.mean(v)), float(np.median(np.abs(v)))) for k, v in rows.items()}


def variants(dump: dict) -> dict:
    """The fits compared: name → (fit runs, verify-table knots or None for a knot at every verified length)."""
    fit, live = dump["fit_runs"], dump["live"]
    plen0 = len(dump["traces"][0].prompt_ids)
    q1_fixed = [(plen0, g) for (qi, spec, _), g in live.items() if qi == 0 and spec == "fixed"]
    everything = [(len(dump["traces"][qi].prompt_ids), g) for (qi, _, _), g in live.items()]
    last = max(s.drafted + 1 for _, g in fit for s in g.steps)
    few = sorted({1, 2, 3, 4, last})
    return {
        "fit runs, knot at every m": (fit, None),
        "fit runs, knots 1-4 + last": (fit, few),
        "fit runs + q1 live fixed, every m": (fit + q1_fixed, None),
        "fit runs + q1 live fixed, 1-4 + last": (fit + q1_fixed, few),
        "all live (in-sample floor), every m": (everything, None),
        "all live (in-sample floor), 1-4 + last": (everything, few),
    }


def evaluate(dump: dict, runs, knots=None) -> dict:
    """Fit on ``runs`` and replay every live config: relative wall-time errors (calibrated, uncalibrated, and
    calibrated on questions after the first), the component split and the fitted model."""
    model = fit_cost_model(runs, knots=knots)
    later = [k for k in dump["live"] if k[0] > 0]
    return {"model": model, "calibrated": time_errors(dump, model, True), "uncalibrated": time_errors(dump, model, False),
            "later": time_errors(dump, model, True, later) if later else [], "components": _components(dump, model)}


def _stat(errs: list[float]) -> str:
    if not errs:
        return "   -  /   -  "
    return f"{statistics.median(errs) * 100:5.1f} / {np.percentile(errs, 90) * 100:5.1f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump", help="a file written by python -m bench.replay --dump")
    args = ap.parse_args(argv)
    with open(args.dump, "rb") as f:
        dump = pickle.load(f)
    print(f"{len(dump['live'])} live generations; live ar spread median "
          f"{statistics.median(dump['spreads']) * 100:.1f} %")
    print("variant | calibrated median / p90 | uncalibrated median / p90 | calibrated, questions 2+ | "
          "signed mean error share: draft, verify, rest")
    for name, (runs, knots) in variants(dump).items():
        r = evaluate(dump, runs, knots)
        comp, model = r["components"], r["model"]
        print(f"{name:40s} | {_stat(r['calibrated'])} | {_stat(r['uncalibrated'])} | {_stat(r['later'])} | "
              f"{comp['draft'][0] * 100:+5.1f} {comp['verify'][0] * 100:+5.1f} {comp['rest'][0] * 100:+5.1f}")
        print(f"{'':40s}   T(m) ms = " + ", ".join(f"{m}:{v * 1000:.0f}" for m, v in
                                                    zip(model.table["knots"], model.table["values"])))


if __name__ == "__main__":
    main()
