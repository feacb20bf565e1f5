"""``specsweep tune OUTPUT --policy NAME [--params k=v1/v2,k2=lo:hi:n] [--seed S] [--costs …]``: a policy's
parameters fitted by replay on stored traces, judged on questions it never saw.

Rule.
- **Split** (deterministic, seeded): the question ids of ``OUTPUT/traces/`` (batch-size-1 traces) are ordered by
  the SHA-256 of ``"{seed}:{question id}"``; the first ⌈n/2⌉ train, the rest are held out. Every turn of a
  question goes with it, and every pair uses the same split. Fewer than 2 questions: refused.
- **Grid**: ``--params`` lists values per parameter, ``k=v1/v2/…`` (a parameter whose own values hold "/" —
  ``bandit``'s ``arms``, ``ema-steps``' ``candidates`` — separates them with "|") or ``k=lo:hi:n`` (n evenly spaced
  numbers from lo to hi, rounded for an integer parameter); ``gamma=…`` gives the initial γ values (default
  1/2/3/4/6/8). Unnamed parameters keep their defaults. Before anything is replayed, ``policies/registry.py`` checks
  each value against its own bounds alone and each combination against the rules across parameters (gammatune's
  gamma_min <= gamma_max): an invalid combination is skipped (one stderr line: how many, one example), and the grid is
  refused only when none is valid. At most :data:`MAX_CONFIGS` combinations × γ (a larger n is refused unmade).
- **Replay**: every grid point × γ, ``fixed`` at every γ of :data:`FIXED_KS` (∪ the γ grid), ``ar`` and the oracle
  bound on every trace, by ``jobs/replay_cli.py::replay_output`` — the same rows ``specsweep replay`` computes, with
  no model loaded.
- **Choice**: on the training questions, the grid point (with its γ, one of the γ grid — for ``fixed`` too) of highest
  throughput (mean over questions of Σ tokens / Σ predicted time, the report's figure); the best fixed K likewise,
  chosen on the training questions among every K replayed.
- **Held out**: the chosen config's throughput against ``ar``, against the training-chosen fixed K and against the
  oracle bound (its fraction of the bound), each a ratio of mean per-question tok/s with its 95 % paired-bootstrap
  interval over the held-out questions (``jobs/report/intervals.py``); the default parameters at the chosen γ beside it.

Written: ``OUTPUT/tunes/NAME/report.md`` and ``grid.csv`` (every grid point's training and held-out throughput);
NAME is the policy, with ``-costs-<stem>`` / ``-roofline-<GPU>`` under ``--costs``, and ``NAME-2`` (…) when the folder
holds a tune of another grid, seed, cost source or ``--pair`` (``jobs/replay_cli.py::replay_dest``). The folder is
checked writable before anything is replayed, and its files (``source.json`` too) are written whole or not at all
(``jobs/replay_cli.py::write_result``): a failed write is one line, exit 2, leaving no partial result.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from actors.plan.roofline import parse as parse_roofline
from jobs.replay_cli import cost_source, replay_dest, replay_folder, replay_output, write_result
from jobs.report import metrics
from jobs.report.derived import trusted_times
from jobs.report.text import interval as interval_text, short
from policies.errors import SpecsweepError
from policies.oracle import BOUND_LABEL
from policies.registry import REGISTRY, check_gamma, convert_value, resolve

DEFAULT_GAMMAS = (1, 2, 3, 4, 6, 8)
FIXED_KS = (1, 2, 3, 4, 5, 6, 8)
MAX_CONFIGS = 4096


def split_questions(qids, seed: int = 0) -> tuple[list[int], list[int]]:
    """(training, held-out) question ids: ordered by SHA-256 of ``"{seed}:{id}"``, the first ⌈n/2⌉ train."""
    ids = sorted({int(q) for q in qids})
    if len(ids) < 2:
        raise SpecsweepError(f"tune needs at least 2 questions to hold some out; the traces hold {len(ids)}")
    order = sorted(ids, key=lambda q: hashlib.sha256(f"{seed}:{q}".encode()).hexdigest())
    cut = math.ceil(len(ids) / 2)
    return sorted(order[:cut]), sorted(order[cut:])


def _values(policy: str, key: str, text: str) -> list:
    """The grid values of one ``key=…`` item, each checked alone against its own rule in the registry (a rule across
    parameters is :func:`parse_grid`'s, per combination), first occurrences kept in order. A range of more than
    :data:`MAX_CONFIGS` values is refused before any value is made."""
    params = REGISTRY[policy][1]
    if key == "gamma":
        kind = int
    elif key not in params:
        raise SpecsweepError(f"{policy}: unknown parameter {key!r}; valid parameters: "
                             f"{', '.join(list(params) + ['gamma'])}")
    else:
        kind = params[key].kind
    parts = text.split(":")
    if kind in (int, float) and len(parts) not in (1, 3):
        raise SpecsweepError(f"--params {key}={text}: a range is lo:hi:n (three numbers, e.g. {key}=0.1:0.9:5); "
                             f"values are {key}=a/b")
    if kind in (int, float) and len(parts) == 3:
        try:
            lo, hi, n = float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise SpecsweepError(f"--params {key}={text}: a range is lo:hi:n with numbers lo, hi and an integer "
                                 "n >= 1") from None
        if n < 1 or not (math.isfinite(lo) and math.isfinite(hi)):
            raise SpecsweepError(f"--params {key}={text}: a range is lo:hi:n with finite lo, hi and n >= 1")
        if n == 1 and lo != hi:
            raise SpecsweepError(f"--params {key}={text}: one value cannot span {parts[0]} to {parts[1]}: give n >= 2 "
                                 f"(e.g. {key}={parts[0]}:{parts[1]}:5) or the one value ({key}={parts[0]})")
        if n > MAX_CONFIGS:
            raise SpecsweepError(f"--params {key}={text}: n={n} values; a grid holds at most {MAX_CONFIGS} configs "
                                 f"(grid × γ): give n <= {MAX_CONFIGS}")
        raw = list(np.linspace(lo, hi, n)) if n > 1 else [lo]
        vals = [int(round(v)) if kind is int else float(f"{v:.10g}") for v in raw]     # 0.4, not 0.39999999999999997
    else:
        slashed = key != "gamma" and "/" in str(params[key].default)     # its own values hold "/" (bandit arms)
        sep = "|" if ("|" in text or slashed) else "/"
        vals = [v.strip() for v in text.split(sep)]
        if any(v == "" for v in vals):
            raise SpecsweepError(f"--params {key}={text}: an empty value; give values like {key}=a/b "
                                 f"(values holding a slash: {key}=a|b) or a range lo:hi:n")
    out = []
    for v in vals:
        if key == "gamma":
            try:
                v = check_gamma(int(float(v)) if float(v) == int(float(v)) else v, "--params gamma")
            except (TypeError, ValueError, OverflowError):
                raise SpecsweepError(f"--params gamma={text}: initial γ values are integers >= 1") from None
        else:       # this value's own bounds only: the registry's own line (cross-parameter rules: parse_grid)
            v = convert_value(policy, key, params[key], v)
        out.append(v)
    return list(dict.fromkeys(out))


def parse_grid(policy: str, text: str | None) -> tuple[list[dict], list[int]]:
    """(parameter sets, initial γ values) of ``--params`` for ``policy`` (module docstring). Each value is checked
    alone (:func:`_values`); the product (at most :data:`MAX_CONFIGS` combinations × γ, counted before any is made)
    is checked per combination by ``registry.resolve`` (e.g. gammatune's gamma_min <= gamma_max): an invalid
    combination is skipped with one line on stderr (how many, one example), and refused only when none is valid."""
    if policy not in REGISTRY:
        raise SpecsweepError(f"unknown policy {policy!r}: valid policies are {', '.join(REGISTRY)}")
    if policy == "ar":
        raise SpecsweepError("ar has nothing to tune (no draft, no parameters): pick a speculative policy")
    axes: dict[str, list] = {}
    items = [s.strip() for s in text.split(",")] if text and text.strip() else []
    if not all(items):
        raise SpecsweepError(f"--params {text!r} holds an empty item: give key=values items separated by single "
                             "commas (e.g. tau=0.2/0.4,gamma=2/3)")
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key:
            raise SpecsweepError(f"--params item {item!r} is not key=values (e.g. tau=0.2/0.4 or tau=0.1:0.9:5)")
        if key in axes:
            raise SpecsweepError(f"--params names {key!r} twice: give each parameter once")
        axes[key] = _values(policy, key, value.strip())
    gammas = axes.pop("gamma", list(DEFAULT_GAMMAS))
    keys = list(axes)
    total = math.prod(len(axes[k]) for k in keys)
    if total * len(gammas) > MAX_CONFIGS:
        raise SpecsweepError(f"--params gives {total * len(gammas)} configs (grid × γ); at most {MAX_CONFIGS}: "
                             "give fewer values")
    sets, skipped = [], []
    for combo in itertools.product(*(axes[k] for k in keys)):
        try:
            sets.append(resolve(policy, dict(zip(keys, combo)))[1])
        except SpecsweepError as e:           # a rule across parameters (each value alone passed _values)
            skipped.append((", ".join(f"{k}={v}" for k, v in zip(keys, combo)), str(e)))
    if skipped and not sets:
        raise SpecsweepError(f"--params {text}: no combination is valid (e.g. {skipped[0][0]}: {skipped[0][1]}); "
                             "give values that are valid together (a parameter not named keeps its default)")
    if skipped:
        print(f"specsweep: tune skips {len(skipped)} of {total} parameter combinations that break a rule across "
              f"parameters (e.g. {skipped[0][0]}: {skipped[0][1]}); {len(sets)} remain", file=sys.stderr)
    return sets, [int(g) for g in gammas]


def _tok_s(q: pd.DataFrame, qids: list[int]) -> pd.DataFrame:
    """[configs, questions] mean tok/s per question (repeats averaged; NaN where a config did not run)."""
    sel = q[q["question_id"].isin(qids)]
    return sel.pivot_table(index=["policy_spec", "gamma"], columns="question_id", values="tok_s",
                           aggfunc="mean").reindex(columns=qids)


def _ratio(piv: pd.DataFrame, a, b) -> tuple[float, float, float]:
    return metrics.paired_ratio(piv.loc[a].to_numpy(float), piv.loc[b].to_numpy(float))


def tune(df: pd.DataFrame, policy: str, default_spec: str, seed: int,
         gammas=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-pair result, grid) from the replayed rows ``df`` (module docstring's choice and held-out figures). The
    candidates are ``policy``'s rows at the grid's γ values ``gammas`` (None: every γ) — for ``fixed`` too, whose
    other K are replayed only for the best-fixed-K reference, which is chosen among every K."""
    train, held = split_questions(df["question_id"].unique(), seed)
    q = metrics.per_question(df)
    results, grid = [], []
    for pair, qp in q.groupby("pair"):
        tr, he = _tok_s(qp, train), _tok_s(qp, held)
        score = tr.mean(axis=1, skipna=False)
        mine = (qp["policy"] == policy) & (qp["gamma"].isin(list(gammas)) if gammas is not None else True)
        cand = qp[mine][["policy_spec", "gamma"]].drop_duplicates()
        fixed = qp[qp["policy"] == "fixed"][["policy_spec", "gamma"]].drop_duplicates()
        keys = list(cand.itertuples(index=False, name=None))
        fkeys = list(fixed.itertuples(index=False, name=None))
        ok = [k for k in keys if np.isfinite(score.get(k, np.nan))]
        fkeys_ok = [k for k in fkeys if np.isfinite(score.get(k, np.nan))]     # a NaN would never lose a max()
        if not ok or not fkeys_ok:
            raise SpecsweepError(f"pair {pair!r}: no predicted time for the training questions (an untrusted cost "
                                 "model gives none; re-measure it, then pass --costs)")
        best = max(ok, key=lambda k: (score[k], -keys.index(k)))
        best_fixed = max(fkeys_ok, key=lambda k: (score[k], -k[1]))
        ar = next((k for k in he.index if k[0] == "ar"), None)
        if ar is None:
            raise SpecsweepError(f"pair {pair!r}: the held-out questions have no ar row to compare with")
        bound = next((k for k in he.index if k[0] == BOUND_LABEL), None)
        row = {"pair": pair, "policy_spec": best[0], "gamma": int(best[1]), "train_questions": len(train),
               "held_out_questions": len(held), "train_tok_s": float(score[best]),
               "best_fixed_gamma": int(best_fixed[1])}
        for name, other in (("vs_ar", ar), ("vs_best_fixed", best_fixed), ("of_bound", bound)):
            p, lo, hi = _ratio(he, best, other) if other is not None else (np.nan,) * 3
            row[name], row[f"{name}_lo"], row[f"{name}_hi"] = p, lo, hi
        dflt = (default_spec, best[1])
        for name, num in (("fixed_of_bound", best_fixed), ("default_of_bound", dflt)):
            p, lo, hi = _ratio(he, num, bound) if bound is not None and num in he.index else (np.nan,) * 3
            row[name], row[f"{name}_lo"], row[f"{name}_hi"] = p, lo, hi
        results.append(row)
        held_mean = he.mean(axis=1, skipna=False)
        listed = keys + [f for f in fkeys if f not in keys]
        grid += [{"pair": pair, "policy_spec": k[0], "gamma": int(k[1]), "train_tok_s": float(score.get(k, np.nan)),
                  "held_out_tok_s": float(held_mean.get(k, np.nan)), "chosen": k == best} for k in listed]
    return pd.DataFrame(results), pd.DataFrame(grid)


def _cell(r, name: str, pct: bool = False) -> str:
    v, lo, hi = r[name], r[f"{name}_lo"], r[f"{name}_hi"]
    if v != v:
        return "–"
    return f"{v:.1%}{interval_text(lo, hi, '.1%')}" if pct else f"{v:.2f}×{interval_text(lo, hi, '.2f')}"


def report_md(res: pd.DataFrame, a, train: list[int], held: list[int], facts: dict) -> str:
    flags = (f" --params {a.params}" if a.params else "") + (f" --seed {a.seed}" if a.seed else "") + (
        f" --costs {a.costs}" if a.costs else "") + "".join(f" --pair {p}" for p in a.pair or ())
    lines = [f"# specsweep tune {a.output} --policy {a.policy}{flags}",
             "", f"Replayed {facts['generations']} generations on {facts['traces']} traces in "
             f"{facts['seconds']:.1f} s, no model loaded; times: {facts['costs']}"
             + (" (what-if)" if facts["what_if"] else "") + ".",
             f"Split (seed {a.seed}, SHA-256 of \"seed:question id\", first ⌈n/2⌉ train): {len(train)} training "
             f"questions {train}, {len(held)} held out {held}.",
             "Chosen on the training questions by throughput; every figure below is on the held-out questions "
             "(ratios of mean per-question tok/s, 95 % paired-bootstrap intervals over held-out questions).", "",
             "| pair | chosen config | γ | vs ar | vs best fixed K (train-chosen) | fraction of oracle bound | "
             "best fixed K: fraction of bound | default params at that γ: fraction of bound |",
             "|---|---|---|---|---|---|---|---|"]
    for r in res.to_dict("records"):
        lines.append(f"| {r['pair']} | {short(r['policy_spec'])} | {r['gamma']} | {_cell(r, 'vs_ar')} | "
                     f"{_cell(r, 'vs_best_fixed')} (K = {r['best_fixed_gamma']}) | {_cell(r, 'of_bound', True)} | "
                     f"{_cell(r, 'fixed_of_bound', True)} | {_cell(r, 'default_of_bound', True)} |")
    return "\n".join(lines) + "\n"


def main(a) -> int:
    """Grid checked, result folder checked writable before anything is replayed (``replay_dest``); the report,
    grid and ``source.json`` written together, whole or not at all (``write_result``), then the report printed."""
    from actors.pair_actor import policy_spec  # heavy: torch

    sets, gammas = parse_grid(a.policy, a.params)
    default = resolve(a.policy, {})[1]
    policies = [(a.policy, s) for s in sets] + ([] if default in sets else [(a.policy, default)])
    if a.policy != "fixed":
        policies.append(("fixed", {}))
    ks = sorted(set(FIXED_KS) | set(gammas))
    source = {"policy": a.policy, "params": a.params, "seed": a.seed, "costs": cost_source(a.costs), "pairs": a.pair}
    folder = replay_folder(a.policy, a.costs, parse_roofline(a.costs))
    dest_of = functools.partial(replay_dest, Path(a.output) / "tunes", folder, source, "tune",   # checked, then written
                                files=("report.md", "grid.csv"))
    df, facts = _replay(a, policies, gammas, ks, dest_of)
    check_timed(a, facts)
    train, held = split_questions(df["question_id"].unique(), a.seed)
    res, grid = tune(trusted_times(df), a.policy, policy_spec(a.policy, default), a.seed, gammas)
    text = report_md(res, a, train, held, facts)
    dest = dest_of()
    write_result(dest, source, {"report.md": text, "grid.csv": grid.to_csv(index=False)}, command="tune")
    sys.stdout.write(text)
    print(f"specsweep: tune report and grid in {dest}", file=sys.stderr)
    return 0


def check_timed(a, facts: dict) -> None:
    """One line when a pair's cost model was not trusted when measured: its replayed times are left out
    (``jobs/report/derived.py``'s ``trusted_times``), so no grid point has a time to be chosen by."""
    for pair, (_, model) in sorted(facts["models"].items()):
        if model is not None and not model.reliable:
            why = "; ".join(dict.fromkeys(model.trust.get("reasons", []))) or "not trusted when measured"
            raise SpecsweepError(f"pair {pair!r}: the replayed times are marked unreliable ({why}; cost model from "
                                 f"{facts['costs']}), so nothing can be tuned: re-measure on a quiet machine with "
                                 "`specsweep calibrate --out costs.json` (the pair's flags), then `specsweep tune "
                                 f"{a.output} --policy {a.policy} --costs costs.json`")


def _replay(a, policies, gammas, ks, check=None):
    """Every grid point at the γ grid and ``fixed`` at each K, in one pass over the traces (``replay_output``);
    ``check`` runs once the inputs are checked, before any trace is read."""
    df, facts = replay_output(a.output, [p for p in policies if p[0] != "fixed" or a.policy == "fixed"],
                              sorted(set(gammas) | (set(ks) if a.policy == "fixed" else set())), a.costs, a.pair,
                              check=check)
    if a.policy != "fixed":
        extra, _ = replay_output(a.output, [("fixed", {})], ks, a.costs, a.pair)
        extra = extra[extra["policy"] == "fixed"]
        df = pd.concat([df, extra], ignore_index=True)
        facts["generations"] += len(extra)
    return df, facts


def add_parser(sub) -> None:
    t = sub.add_parser("tune", help="fit a policy's parameters by replay on a training half of the questions; "
                                    "report held-out speedup and fraction of the oracle bound (no model loaded)")
    t.add_argument("output", help="the output folder of a sweep run with mode: replay or both")
    t.add_argument("--policy", required=True, help="the policy to tune (see `specsweep policies`)")
    t.add_argument("--params", default=None, help="grid: k=v1/v2 (values holding a slash: k=a|b), k=lo:hi:n, "
                                                  "gamma=1/2/4 (default: the policy's defaults at γ 1/2/3/4/6/8)")
    t.add_argument("--seed", type=int, default=0, help="the split's seed (default 0)")
    t.add_argument("--costs", default=None, help="as for `specsweep replay`: another actors.json, a calibrate file "
                                                 "or roofline:GPU[:Q] (what-if)")
    t.add_argument("--pair", action="append", default=None, metavar="NAME",
                   help="tune on this pair's traces only (repeatable; default: every pair of the sweep)")
    t.set_defaults(fn=main)
