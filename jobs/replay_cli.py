"""``specsweep replay OUTPUT --policies FILE.yaml [--costs ACTORS.json|COSTS.json|roofline:GPU[:Q]]``: stored traces.

Reads the traces a sweep in ``mode: replay`` or ``both`` stored under ``OUTPUT/traces/``
(one per question turn: the target-only greedy output, its measured ``ar`` times, and
the draft's rollouts along it; the row traces of batch tasks, B > 1, are left out) and
replays every policy × initial γ of FILE.yaml on them with :func:`actors.tracing.replay.replay` —
no model is loaded, so it takes seconds. Token ids, accept lengths and (k_max, drafted,
accepted) per step are exactly those of a live greedy run; wall times are predicted by the
cost model each pair's actor fitted (``OUTPUT/traces/cost_models.json``), and the policies
that read costs (``gt``, ``goodput``, ``bandit``) get the cost curve the actor measured
(``OUTPUT/actors.json``).

``--costs FILE`` takes both from another sweep's ``actors.json`` (for example one measured
on a GPU) or from a cost model written by ``specsweep calibrate --out`` (for example one
re-measured on a quiet machine): the figures then answer "what if these traces ran on that
machine", and every heading says so. Such a file prices a pair only if it measured that pair's models (the same
parameter counts as the sweep's actor recorded, :func:`check_measured_pairs`): a file of one pair on a sweep of
several is refused in one line unless FILE.yaml's ``pairs:`` keeps only the pairs it measured.
``--costs roofline:h100`` (h200, a100-80, a100-40, l4; ``:int4`` etc. for a quantized target) predicts every step
and prefill from the models' config.json
(``actors/plan/roofline.py``): figures of a GPU nobody measured, labelled "what-if (roofline h100)"
in every heading and in the replay folder's name. A cost model whose measurement was not trusted gives
no time figures (``jobs/report/derived.py``, ``trusted_times``).

FILE.yaml: ``policies:`` (as in a sweep config; per-sequence chain policies only: a batch or tree policy is refused
in one line) and optionally ``gammas:`` (default: the paper grid) and ``pairs:`` (the pairs to replay; default:
every pair with traces). Results: the report on stdout, and ``OUTPUT/replays/NAME/`` holding the rows (Parquet)
and the report, one folder per cost source (:func:`replay_folder`): NAME is FILE.yaml's stem (the sweep's own
costs), ``<stem>-roofline-<GPU>`` / ``<stem>-roofline-<GPU>-<Q>``, or ``<stem>-costs-<cost file's stem>``; a
folder that holds another file's replay under the same name is kept and the new one goes to ``NAME-2`` (…) instead
(:func:`replay_dest`; each folder's ``source.json`` names its two sources). The folder is checked writable before
anything is replayed, and its files are written whole or not at all (:func:`write_result`; else one line, exit 2).
"""
from __future__ import annotations

import contextlib
import functools
import json
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from actors.plan.roofline import label as roofline_label, parse as parse_roofline, roofline_cost_model
from actors.loading.schema import config_key, to_table
from jobs.report import metrics
from jobs.report.costs import untrusted_text
from jobs.report.derived import trusted_times
from jobs.report.regret import regret_md, regret_table
from jobs.report.tables import build_report
from jobs.store.durable import durable_replace
from jobs.store.output import check_writable, record_written, write_texts
from policies.cost_format import check_cost_dict
from policies.costs import CostModel
from policies.errors import SpecsweepError
from policies.registry import build


def _policy_mapping(path: str) -> dict:
    """FILE.yaml's mapping: ``policies:``, optionally ``gammas:`` and ``pairs:``; one line for anything else."""
    p = Path(path)
    if not p.is_file():
        raise SpecsweepError(f"policy file {path} does not exist or is not a file")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise SpecsweepError(f"{path}: not a valid YAML text file ({str(e).splitlines()[0]})") from None
    if not isinstance(raw, dict) or "policies" not in raw:
        raise SpecsweepError(f"{path}: expected a mapping with `policies:` (and optionally `gammas:`, `pairs:`)")
    unknown = sorted(set(raw) - {"policies", "gammas", "pairs"})
    if unknown:
        raise SpecsweepError(f"{path}: unknown field {unknown[0]!r}; valid fields: policies, gammas, pairs")
    return raw


def load_policy_file(path: str) -> tuple[list[tuple[str, dict]], list[int]]:
    """(policies, initial γ values) from a YAML file, validated like a sweep config."""
    from jobs.config import PAPER_GAMMAS, parse_policies_and_gammas  # heavy: torch

    raw = _policy_mapping(path)
    try:
        return parse_policies_and_gammas(raw["policies"], raw.get("gammas", list(PAPER_GAMMAS)))
    except SpecsweepError as e:
        raise SpecsweepError(f"{path}: {e}") from None


def load_pairs(path: str) -> list[str] | None:
    """FILE.yaml's ``pairs:``: the names of the sweep's pairs to replay (a non-empty list); None: every pair."""
    pairs = _policy_mapping(path).get("pairs")
    if pairs is None:
        return None
    if not isinstance(pairs, list) or not pairs or not all(isinstance(x, str) and x.strip() for x in pairs):
        raise SpecsweepError(f"{path}: pairs is {str(pairs)[:60]!r}; expected a non-empty list of pair names such "
                             "as [smollm2]")
    return list(dict.fromkeys(x.strip() for x in pairs))


def read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SpecsweepError(f"{path} ({what}) is missing or not valid JSON ({type(e).__name__})") from None


def is_cost_file(infos) -> bool:
    """Whether ``infos`` is one cost model (``specsweep calibrate --out``) rather than an ``actors.json`` mapping."""
    return isinstance(infos, dict) and ("format" in infos or {"draft", "verify"} <= set(infos))


def actor_costs(infos: dict, pair: str, source: str) -> tuple[object, object]:
    """(cost curve, cost model) for ``pair`` from an ``actors.json`` mapping (its entry of one pair stands for any
    pair) or a ``specsweep calibrate`` file; whether the models match the pair's is :func:`check_measured_pairs`'s."""

    if is_cost_file(infos):   # `specsweep calibrate --out`
        check_cost_dict(infos, source)
        model = CostModel.from_dict(infos)
        return model, model
    if not isinstance(infos, dict) or not infos:
        raise SpecsweepError(f"{source} holds no actor information (expected an actors.json of a sweep or a cost "
                             "model written by `specsweep calibrate --out`)")
    acts = infos.get(pair) or (next(iter(infos.values())) if len(infos) == 1 else None)
    if not acts:
        raise SpecsweepError(f"{source} has no actor of pair {pair!r}; it holds {', '.join(sorted(infos))}")
    info = acts[0]
    model = info.get("cost_model")
    if not model:
        raise SpecsweepError(f"{source}: the actor of pair {pair!r} fitted no cost model "
                             "(it ran a live-only sweep); pass --costs with the actors.json of a replay sweep")
    check_cost_dict(model, f"{source} (pair {pair!r})")
    try:
        return (CostModel.from_dict(info["costs"]) if info.get("costs") else None), CostModel.from_dict(model)
    except (KeyError, TypeError, ValueError) as e:
        raise SpecsweepError(f"{source}: the cost data of pair {pair!r} is malformed ({e})") from None


def _row(trace, pair: str, spec: str, name: str, params: dict, gamma: int, g=None, trusted: bool = True) -> dict:
    meta = trace.meta
    base = {"task_key": trace.key.rsplit("|t", 1)[0], "pair": pair, "policy": name, "policy_spec": spec,
            "params": json.dumps(params, sort_keys=True), "gamma": gamma, "repeat": 0, "seed": 0,
            "temperature": 0.0, "question_id": int(meta.get("question_id", 0)),
            "category": meta.get("category", ""), "turn": int(meta.get("turn", 0)), "status": "ok", "error": "",
            "config_key": config_key(pair, spec, gamma), "target": trace.target, "draft": trace.draft,
            "prompt_ids": trace.prompt_ids}
    if g is None:       # the measured ar run the trace was recorded along
        return {**base, "mode": "live", "ar_timing": "first", "new_tokens": len(trace.reference),
                "wall_time": trace.ar_wall_time, "prefill_time": trace.prefill_time, "token_ids": trace.reference,
                "accept_lengths": [1] * len(trace.reference), "drafted": [0] * len(trace.reference),
                "accepted": [0] * len(trace.reference), "decoding_steps": len(trace.reference)}
    return {**base, "mode": "replay", "ar_timing": "", "time_reliable": trusted, "new_tokens": g.new_tokens,
            "wall_time": g.wall_time,
            "prefill_time": g.prefill_time, "token_ids": g.token_ids, "accept_lengths": g.accept_lengths,
            "drafted": g.drafted, "accepted": g.accepted, "k_max": g.k_max, "proposed": g.proposed,
            "draft_times": g.draft_times, "verify_times": g.verify_times, "pad_slots": g.pad_slots,
            "decoding_steps": g.decoding_steps, "draft_time": sum(g.draft_times), "verify_time": sum(g.verify_times)}


def check_costs(infos, source: str) -> None:
    """Every cost model in ``infos`` (a calibrate file, or each actor's of an ``actors.json``) passes
    ``policies/costs.py``'s checks, finite positive times included; one line naming the pair otherwise."""
    if is_cost_file(infos):
        check_cost_dict(infos, source)
        return
    for pair, acts in (infos.items() if isinstance(infos, dict) else ()):
        for info in (acts if isinstance(acts, list) else []):
            for key in ("costs", "cost_model"):
                if isinstance(info, dict) and info.get(key):
                    check_cost_dict(info[key], f"{source} (pair {pair!r}, {key})")


def recorded_params(infos) -> dict[str, dict]:
    """{pair: parameter counts {"target": n, "draft": n}} its actor recorded in an ``actors.json`` mapping (its cost
    model's ``params``, ``policies/costs.py``); a pair that recorded none is left out."""
    out = {}
    for pair, acts in (infos.items() if isinstance(infos, dict) and not is_cost_file(infos) else ()):
        info = acts[0] if isinstance(acts, list) and acts and isinstance(acts[0], dict) else {}
        for key in ("cost_model", "costs"):
            counts = _counts((info.get(key) or {}).get("params") if isinstance(info.get(key), dict) else None)
            if counts:
                out[pair] = counts
                break
    return out


def _counts(params) -> dict:
    """The positive integer ``target`` / ``draft`` counts of a ``params`` dict; {} when it records none."""
    return {k: v for k, v in (params.items() if isinstance(params, dict) else ())
            if k in ("target", "draft") and isinstance(v, int) and not isinstance(v, bool) and v > 0}


def _says(counts: dict) -> str:
    """``"target 1,000 + draft 100 parameters"``: the counts as the refusal names them."""
    return " + ".join(f"{k} {counts[k]:,}" for k in ("target", "draft") if k in counts) + " parameters"


def check_measured_pairs(models: dict, own: dict, traces: dict, source: str, named=None) -> None:
    """A foreign cost model (``--costs FILE``) prices a pair only when it was measured on that pair's models: the
    parameter counts it records (``CostModel.params``, written by ``specsweep calibrate`` and every actor) equal the
    ones the sweep's own actor recorded for the pair (``own``, from ``OUTPUT/actors.json``). Refused in one line:
    a pair whose counts differ, and, in a replay of several pairs, a pair the file does not name whose counts
    either side did not record (nothing tells which pair the file measured); a replay of one pair takes a file that
    records none. ``models``: {pair: (cost curve, cost model)}; ``traces``: {pair: one of its traces} (for the model
    names); ``named``: the pairs an ``actors.json`` has an entry of their own for (None: a calibrate file)."""
    bad, unknown, is_file = [], [], named is None
    named = named or ()
    for pair, (_, model) in sorted(models.items()):
        theirs, mine = _counts(getattr(model, "params", {})), own.get(pair, {})
        if theirs and mine:
            bad += [(pair, theirs, mine)] if theirs != mine else []
        elif len(models) > 1 and pair not in named:
            unknown.append(pair)
    if not bad and not unknown:
        return
    ok = [p for p in sorted(models) if p not in unknown and all(p != b[0] for b in bad)]
    fix = ("valid: " + (f"only pairs {', '.join(ok)} (`pairs:` in replay's --policies file, `--pair` in tune), "
                        if ok else "")
           + "a file measured on the pair (`specsweep calibrate --target T --draft D --out FILE`) or roofline:GPU")
    label = getattr(next(iter(models.values()))[1], "label", "") if is_file else ""
    what = f"--costs {source}" + (f" ({label})" if label else "")
    if bad:
        pair, theirs, mine = bad[0]
        names = " + ".join(n for n in (traces[pair].target, traces[pair].draft) if n)
        more = f" ({', '.join(b[0] for b in bad[1:])} do not match either)" if len(bad) > 1 else ""
        raise SpecsweepError(f"{what} measured {_says(theirs)}; pair {pair} ({names}) runs {_says(mine)}{more}; {fix}")
    raise SpecsweepError(f"{what} cannot be matched to pair{'s' * (len(unknown) > 1)} {', '.join(unknown)} of "
                         f"the {len(models)} replayed: no parameter counts recorded on both sides; {fix}")


def replay_folder(policies: str, costs: str | None, roof: tuple[str, str | None] | None) -> str:
    """The name of a replay's folder under ``OUTPUT/replays/``, one per cost source: FILE.yaml's stem alone (the
    sweep's own costs), ``<stem>-roofline-<GPU>[-<quantization>]``, or ``<stem>-costs-<cost file's stem>``."""
    stem = Path(policies).stem
    if roof:
        return f"{stem}-roofline-{roof[0]}" + (f"-{roof[1]}" if roof[1] else "")
    return f"{stem}-costs-{Path(costs).stem}" if costs else stem


SOURCE_FILE = "source.json"    # in each replay folder: the policies file and cost source it was replayed from


def cost_source(costs: str | None) -> str | None:
    """``--costs`` as recorded beside a result: a roofline label as given, a file by its absolute path."""
    return None if costs is None else costs if costs.startswith("roofline:") else str(Path(costs).resolve())


def replay_dest(root: Path, name: str, source: dict, command: str = "replay", files=()) -> Path:
    """``root/name``, unless that folder holds a result of other sources (two files with one stem, another grid):
    then the first free ``root/name-2``, ``-3``, … — a rerun of the same sources replaces its own folder, never
    another's. Creates nothing: one line unless it and its ``files`` (and source.json) pass ``check_writable``."""
    source = json.loads(json.dumps(source))         # compared as read back
    for n in range(1, 1000):
        dest = root / (name if n == 1 else f"{name}-{n}")
        try:
            held = json.loads((dest / SOURCE_FILE).read_text())
        except (OSError, ValueError):
            held = None
        if not dest.exists() or held is None or held == source:   # free, written before sources were recorded, or ours
            try:
                check_writable(dest, f"{command} results folder")
                for file in (SOURCE_FILE, *files) if dest.is_dir() else ():
                    check_writable(dest / file, f"{command} result file", folder=False, what="file")
                return dest
            except SpecsweepError as e:     # its "choose another …" cannot apply: the path is the command's
                why = str(e).split(": choose ")[0].split(": give ")[0]
                raise SpecsweepError(f"{why}: `specsweep {command}` writes its results there; move what is in the way "
                                     "or fix the permissions") from None
    raise SpecsweepError(f"{root} holds 999 replays named {name}-N of other sources: remove some")


def write_result(dest: Path, source: dict, texts: dict, tables: dict | None = None, command: str = "replay") -> None:
    """``source.json``, ``texts`` {name: text} and ``tables`` {name: DataFrame, as Parquet} in ``dest``, whole or none:
    tables to hidden twins, then the texts together (``write_texts``), then the twins renamed in (``durable_replace``).
    An OSError is one line, leaving no twin, file or folder of this call; files already there keep what they held."""
    made = [p for p in (dest, *dest.parents) if not p.exists()]          # deepest first
    texts = {dest / SOURCE_FILE: json.dumps(source, indent=1) + "\n", **{dest / k: t for k, t in texts.items()}}
    twins = {dest / k: (dest / f".{k}.tmp", df) for k, df in (tables or {}).items()}
    new = [p for p in (*texts, *twins) if not p.exists()]
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for path in (*texts, *twins, *(twin for twin, _ in twins.values())):   # a killed write's twin too (--fresh)
            record_written(path)
        for twin, df in twins.values():
            df.to_parquet(twin)
        write_texts(texts)
        for path, (twin, _) in twins.items():
            durable_replace(twin, path)
    except OSError as e:
        for p in [*(twin for twin, _ in twins.values()), *new, *made]:   # its files, then its folders, deepest first
            with contextlib.suppress(OSError):
                (p.rmdir if p in made else p.unlink)()
        where = getattr(e, "filename2", None) or e.filename          # a rename names its destination second
        why = (e.strerror or str(e).split("\n")[0] or type(e).__name__) + (f": {where}" if where else "")
        raise SpecsweepError(f"`specsweep {command}` could not write its results to {dest} ({why}); nothing was "
                             "written there: free some space, fix the permissions or move what is in the way") from None


def roofline_models(roof: tuple[str, str | None], trace) -> tuple[object, object]:
    """(cost curve, cost model) of the trace's pair on the roofline GPU: one model serves both."""
    model = roofline_cost_model(roof[0], trace.target, trace.draft or None, "bfloat16", roof[1])
    return model, model


def replay_output(output: str, policies, gammas, costs_file: str | None = None, pairs: list[str] | None = None,
                  check=None) -> tuple[pd.DataFrame, dict]:
    """Every policy × γ replayed on every trace of ``output`` (of ``pairs`` only, when given); (rows, facts for the
    heading). A foreign cost file must have measured each replayed pair's models (:func:`check_measured_pairs`).
    ``check`` (the result folder's, :func:`replay_dest`) runs once the inputs are checked, before any replay."""
    from actors.tracing import oracle_bound  # heavy: torch
    from actors.pair_actor import policy_spec  # heavy: torch
    from actors.tracing.replay import check_replayable, replay  # heavy: torch
    from actors.rollouts import read_traces  # heavy: torch

    roof = parse_roofline(costs_file)             # a bad GPU kind is named before anything is read
    out = Path(output)
    folder = out / "traces"
    if not folder.is_dir() or not any(folder.glob("*.parquet")):
        raise SpecsweepError(f"{output} holds no traces ({folder}): run its sweep with `mode: replay` or "
                             "`mode: both` first")
    for name, params in policies:
        for g in gammas:
            check_replayable(build((name, params), g), spec=policy_spec(name, params))
    source = roofline_label(*roof) if roof else (costs_file or str(out / "actors.json"))
    infos = None if roof else read_json(Path(source), "actor costs")
    if infos is not None:
        check_costs(infos, source)                # every stored time checked before a trace is read
    t0 = time.perf_counter()
    traces = [t for t in read_traces(folder) if int(t.meta.get("batch_size", 1)) == 1]   # a row of a batch: skipped
    if not traces:
        raise SpecsweepError(f"{output} holds traces of batch tasks only ({folder}); this command replays the "
                             "batch-size-1 traces: run the sweep with 1 in batch_sizes")
    first = {t.pair: t for t in reversed(traces)}
    if pairs is not None:
        missing = [p for p in pairs if p not in first]
        if missing:
            raise SpecsweepError(f"pair {missing[0]!r} has no traces in {output}; valid pairs: "
                                 f"{', '.join(sorted(first))}")
        traces = [t for t in traces if t.pair in pairs]
    models = {pair: roofline_models(roof, t) if roof else actor_costs(infos, pair, source)
              for pair, t in sorted(first.items()) if pairs is None or pair in pairs}
    if costs_file is not None and not roof:
        own = recorded_params(read_json(out / "actors.json", "the sweep's actors") if (out / "actors.json").is_file()
                              else {})
        check_measured_pairs(models, own, first, source, None if is_cost_file(infos) else set(infos))
    if check is not None:
        check()
    rows = []
    for trace in traces:
        pair = trace.pair
        curve, model = models[pair]
        # a roofline predicts the prefill too: the trace's measured one is this machine's, not the GPU's
        pre = {"prefill_time": model.verify_time(len(trace.prompt_ids), 0)} if roof else {}
        # what-if: ar is predicted under the same foreign cost model, so speedups compare like with like
        ar = None if costs_file is None else replay(trace, build(("ar", {}), 0), cost_model=model, **pre)
        trusted = model is None or model.reliable
        rows.append(_row(trace, pair, "ar", "ar", {}, 0, ar, trusted))
        if model is not None:          # the least predicted time any chain schedule reaches on this trace
            _, g = oracle_bound.replay_bound(trace, model, **pre)
            rows.append(_row(trace, pair, oracle_bound.LABEL, oracle_bound.NAME, {}, 0, g, trusted))
        for name, params in policies:
            spec = policy_spec(name, params)
            for gamma in gammas:
                g = replay(trace, build((name, params), gamma), costs=curve, cost_model=model, **pre)
                rows.append(_row(trace, pair, spec, name, params, gamma, g, trusted))
    df = to_table(rows).to_pandas()
    facts = {"traces": len(traces), "seconds": time.perf_counter() - t0, "costs": source,
             "what_if": costs_file is not None, "roofline": roof, "models": models,
             "generations": sum(r["policy"] not in ("ar", oracle_bound.NAME) for r in rows)}
    return df, facts


def main(a) -> int:
    policies, gammas = load_policy_file(a.policies)
    source = {"policies": str(Path(a.policies).resolve()), "costs": cost_source(a.costs)}
    folder = replay_folder(a.policies, a.costs, parse_roofline(a.costs))
    dest_of = functools.partial(replay_dest, Path(a.output) / "replays", folder, source,     # checked, then written
                                files=("rows.parquet", f"report.{a.format}"))
    df, facts = replay_output(a.output, policies, gammas, a.costs, load_pairs(a.policies), check=dest_of)
    shown = trusted_times(df)                    # an untrusted cost model's times give no time figure
    summary, speed = metrics.config_summary(shown), metrics.speedup_vs_ar(shown)
    frac, t2 = metrics.fraction_of_oracle(shown), metrics.table2(shown)
    label = (f"WHAT-IF: step and prefill times (ar's too) predicted by a {facts['costs']} model from the models' "
             "config.json (actors/plan/roofline.py), not measured" if facts["roofline"] else
             f"WHAT-IF: step times (ar's too) predicted with the cost model in {facts['costs']}, not measured on "
             "this sweep's machine; prefill times are this machine's measured ones"
             if facts["what_if"] else f"times predicted by the sweep's own cost models ({facts['costs']}); "
             "ar times are the measured reference runs")
    head = (f"# Replay of {a.policies} on {a.output}: {facts['generations']} generations from {facts['traces']} traces "
            f"in {facts['seconds']:.2f} s, no model loaded\n{label}; no noise floor (ar was timed once per trace)\n\n")
    text = head + build_report(summary, speed, frac, a.format, t2, None) + regret_md(regret_table(shown))
    untrusted = {p: list(m.trust.get("reasons", [])) for p, (_, m) in facts["models"].items() if m and not m.reliable}
    if untrusted:
        text += "\n" + untrusted_text(untrusted) + "\n"
    if facts["what_if"]:
        text = text.replace("\n## ", f"\n## ({facts['costs'] if facts['roofline'] else 'what-if'}) ")
    dest = dest_of()
    write_result(dest, source, {f"report.{a.format}": text}, {"rows.parquet": df})
    sys.stdout.write(text)
    print(f"specsweep: replay rows and report in {dest}", file=sys.stderr)
    return 0
