"""``specsweep`` — the command line.

    specsweep generate  [--target M] [--draft M|ngram|suffix] [--policy P] [--gamma G] --prompt TEXT
                        (or --prompt-file FILE [--batch-size B] [--json]: one prompt per line, batched)
    specsweep sweep     CONFIG.yaml [--address ADDR] [--dry-run] [--fresh] [--backend inprocess]   (a re-run resumes)
    specsweep report    (--experiment NAME [--output DIR] | --parquet DIR | DIR) [--format md|csv] [--specbench]
    specsweep replay    OUTPUT --policies FILE.yaml [--costs ACTORS.json|COSTS.json] [--format md|csv]
    specsweep plan      CONFIG.yaml [--json]   (GPU memory per pair from config.json; which GPUs it fits)
    specsweep recommend OUTPUT --for vllm|sglang|trtllm [--out FILE] [--pair LABEL]   (the engine's config per batch size)
    specsweep tune      OUTPUT --policy NAME [--params k=v1/v2,k2=lo:hi:n] [--seed S]   (fit by replay, held-out figures)
    specsweep calibrate [--target M] [--draft M|ngram] --out COSTS.json   (the pair's cost model)
    specsweep distill   --target M [--out DIR] ...
    specsweep policies  (list every policy with its parameters)

Bad input is reported as one line on stderr with exit status 2; ``sweep`` exits 3 when it
finished with failed rows or tasks, 130 on SIGINT and 143 on SIGTERM.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from actors.costs.quiet import quiet_third_party
from actors.loading.conversation import run_question
from actors.loading.templates import default_template, render
from jobs.batch_generate import (check_batch_flags, generate_dataset, generate_file, generation_fields, generation_json,
                                 run_label, write_answer_file)
from jobs.calibrate_checks import PROBE_STEPS, check_calibrate_flags, check_probe_room
from jobs.dataset import load_questions
from jobs.distill.cli import add_parser as add_distill_parser
from jobs.plan_cli import add_parser as add_plan_parser
from jobs.recommend.cli import add_parser as add_recommend_parser
from jobs.replay_cli import main as replay_main
from jobs.tune.cli import add_parser as add_tune_parser
from jobs.report.derived import summarize
from jobs.report_cli import main as report_main
from jobs.store.answers import answer_records
from jobs.store.output import check_writable, write_texts
from jobs.inputs import DEFAULT_TARGET, OneLineParser, add_sweep_flags, read_cost_file
from policies.costs import CostModel
from policies.phi import NO_KNEE
from policies.errors import SpecsweepError
from policies.registry import REGISTRY, build, check_gamma, check_generation, check_seed

MAX_WARMUP = 1000               # the sweep config's bound on its warmup runs (jobs/config)


def default_draft() -> str:
    """The shipped distilled draft when present, else the model-free ngram drafter."""
    from actors.loading.models import ALIASES  # heavy: torch

    return "smollm2-135m-draft" if (Path(ALIASES["smollm2-135m-draft"]) / "config.json").exists() else "ngram"


def _add_generation_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=None, help=f"target model: hub id, local folder or alias (default {DEFAULT_TARGET})")
    p.add_argument("--draft", default=None, help="draft model, 'ngram' for prompt lookup, 'suffix' for suffix decoding, "
                        "eagle:PATH or smollm2-135m-eagle for an EAGLE-1/2 head, eagle3:PATH for an EAGLE-3 head "
                        "(default: the embedded draft)")
    p.add_argument("--policy", default="fixed", help="speculation policy, e.g. fixed, gammatune:eta=0.5 (see `specsweep policies`)")
    p.add_argument("--gamma", type=int, default=4, help="initial speculation length γ (default 4)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--quantization", default=None, choices=["int8", "int4", "fp8"],
                   help="quantize the target as it loads (weight-only; int4/fp8 with torchao need a GPU)")
    p.add_argument("--quant-backend", default="torchao", choices=["torchao", "optimum-quanto"])
    p.add_argument("--engine", default=None, choices=["eager", "static", "compiled"],
                   help="KV-cache engine (default: compiled on CUDA, eager on CPU; see docs/engine.md)")
    p.add_argument("--max-context", type=int, default=2048, help="static/compiled engines: KV cache positions")
    p.add_argument("--trust-remote-code", action="store_true")


def _int_list(flag: str, text: str) -> list[int]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if not x.lstrip("-").isdigit()]
    if bad or not items:
        raise SpecsweepError(f"{flag} must be comma-separated integers, got {text!r}")
    ids = [int(x) for x in items]
    if len(set(ids)) != len(ids):
        raise SpecsweepError(f"{flag} lists an id twice: {text!r}")
    return ids


def check_generation_flags(a) -> None:
    """The sweep config's rules, applied to ``generate``'s flags: finite numbers within range (``--warmup`` 0 …
    :data:`MAX_WARMUP`, the config's ``warmup`` bounds), no empty names."""
    check_gamma(a.gamma, "--gamma")
    check_generation({"max_new_tokens": a.max_new_tokens, "temperature": a.temperature, "top_p": a.top_p},
                     lambda key: "--" + key.replace("_", "-"))
    warmup = getattr(a, "warmup", 0)
    if not 0 <= warmup <= MAX_WARMUP:
        raise SpecsweepError(f"--warmup {warmup} is not valid: use an integer >= 0 and <= {MAX_WARMUP} (untimed runs)")
    for flag in ("target", "draft"):
        v = getattr(a, flag)
        if v is not None and not v.strip():
            raise SpecsweepError(f"--{flag} is empty: give a hub id, a local folder or an alias, or omit it")
    if getattr(a, "answers", None):
        check_writable(a.answers, "--answers", folder=False, what="file path such as answers.jsonl")


def cmd_generate(a) -> int:
    """Generate one --prompt, every line of --prompt-file in batches (jobs/batch_generate.py) or a dataset's questions."""
    check_generation_flags(a)
    file_prompts = check_batch_flags(a)             # --prompt-file's lines, before any model loads
    questions = None
    if a.dataset:
        ids = _int_list("--question-ids", a.question_ids) if a.question_ids else None
        cats = [c.strip() for c in a.categories.split(",") if c.strip()] if a.categories else None
        questions = load_questions(a.dataset, cats, a.limit_per_category, ids)   # fails before any model loads
    elif file_prompts is None and (a.prompt is None or not a.prompt.strip()):
        raise SpecsweepError("prompt is empty: pass --prompt \"some text\", --prompt-file FILE or --dataset "
                             "sample|specbench|PATH")
    policy = build(a.policy, a.gamma)
    cost_model = read_cost_file(a.costs) if a.costs else None      # checked before any model loads
    if policy.needs_reference and a.temperature > 0:
        raise SpecsweepError(f"policy {policy.name} is defined for greedy decoding only: use --temperature 0")
    target = a.target or DEFAULT_TARGET
    draft = None if policy.name == "ar" and a.draft is None else (a.draft or default_draft())
    pair = _pair(a, target, draft)
    template = "raw" if a.raw else default_template(target, pair.tokenizer)
    measures = policy.needs_costs or policy.needs_rank_acceptance      # the policy reads a cost model
    if cost_model is not None:
        load_costs(pair, a.costs, cost_model, policy.name, measures)
    if measures:
        if pair.costs is None and cost_model is None:               # a rejected --costs file said so already
            print("specsweep: measuring the pair's step costs on the engine path (about half a minute on a CPU; "
                  "`specsweep calibrate --out FILE` once, then --costs FILE, skips this)", file=sys.stderr)
        pair.calibrate()
    if file_prompts is not None:
        return generate_file(a, pair, policy, template, file_prompts, target, draft)
    if questions is not None:
        run = generate_dataset if a.batch_size is not None else _generate_questions
        return run(a, pair, policy, template, questions, target, draft)
    ids = render(template, pair.tokenizer, [{"role": "user", "content": a.prompt}])
    pair.check_length(len(ids), a.max_new_tokens)
    g = pair.engine.generate(ids, policy, max_new_tokens=a.max_new_tokens, temperature=a.temperature,
                             top_p=a.top_p, seed=a.seed)
    text = pair.tokenizer.decode(g.token_ids, skip_special_tokens=True)
    if a.json:
        print(json.dumps(generation_json(g, text, target=target, draft=draft, policy=policy, gamma=a.gamma,
                                         costs=pair.costs)))
    else:
        print(text)
        print("\n--- " + " · ".join(f"{k}={'–' if v is None else v}" for k, v in generation_fields(g).items())
              + f" · {run_label(policy, a.gamma, draft)}")
    return 0


def _pair(a, target: str, draft: str | None):
    from actors.pair import Pair, PairConfig  # heavy: torch

    return Pair(PairConfig(target=target, draft=draft, dtype=a.dtype, device=a.device, quantization=a.quantization,
                           quant_backend=a.quant_backend, engine=a.engine, max_context=a.max_context,
                           trust_remote_code=a.trust_remote_code))


def load_costs(pair, path: str, model: CostModel, policy: str = "", measures: bool = True) -> None:
    """Attach ``model`` (read from ``path`` by ``jobs/inputs.py``) to ``pair`` when it was measured on the same kind
    of machine and engine setup (``actors/costs/machine.py``); otherwise one line naming the differences and what
    happens instead: the costs are measured again here when ``measures`` (``policy`` reads a cost model), else the
    file is not used and nothing is measured."""
    from actors.costs.machine import engine_models, machine_differences, machine_facts  # heavy: torch

    here = machine_facts(pair.target.device, pair.cfg.dtype, engine_models(pair.engine), pair.engine)
    diff = machine_differences(model.machine, here) if model.machine else ["no machine recorded"]
    if diff:
        then = ("measuring the pair's step costs again here (about half a minute on a CPU)" if measures else
                f"not using it; nothing is measured instead (policy {policy} reads no cost model)")
        print(f"specsweep: {path} was measured on another machine or engine setup ({'; '.join(diff)}); {then}",
              file=sys.stderr)
        return
    pair.engine.costs = model


def cmd_calibrate(a) -> int:
    """Measure the pair's cost model on the engine's step path and write it to ``--out``."""
    draft = a.draft or default_draft()
    if draft == "none":
        raise SpecsweepError("calibrate needs a draft (a model or 'ngram'): the cost model prices drafting")
    check_calibrate_flags(a)                        # bounds and the probe against --max-context: before any load
    target = a.target or DEFAULT_TARGET
    out = check_writable(a.out, "--out", folder=False, what="JSON file path")
    pair = _pair(a, target, draft)
    check_probe_room(a, pair)
    print(f"specsweep: measuring {target} + {draft} on {pair.device} (the engine's step path, k = 0 … "
          f"{a.max_tokens - 1})", file=sys.stderr)
    from actors.costs.calibrate import calibrate  # heavy: torch

    m = calibrate(pair.engine, context=a.context, max_tokens=a.max_tokens, repeats=a.repeats, steps=PROBE_STEPS,
                  label=f"{target} {pair.device}")
    m.params = pair.param_counts()
    try:
        write_texts({out: json.dumps(m.to_dict(), indent=1)})
    except OSError as e:
        raise SpecsweepError(f"--out {a.out}: {e.strerror or e}") from None
    phi = " ".join(f"Φ({m2 - 1})={m.phi(m2 - 1) * 1e3:.2f} ms" for m2 in m.table["knots"][1:])
    knee = "none measured" if m.knee() >= NO_KNEE else str(m.knee())
    print(f"c = {m.c:.3f} · plain target step {m.t_target * 1e3:.1f} ms · draft/token {m.t_draft * 1e3:.1f} ms · "
          f"overhead {m.overhead * 1e3:.2f} ms · knee K = {knee} · {phi} (GT's Φ: what verifying k drafts adds)")
    if not m.reliable:
        print(f"specsweep: UNRELIABLE measurement: {'; '.join(m.trust['reasons'])}; measure again on a quiet machine",
              file=sys.stderr)
    print(f"specsweep: cost model in {out}", file=sys.stderr)
    return 0 if m.reliable else 3


def _generate_questions(a, pair, policy, template, questions, target, draft) -> int:
    """Answer dataset questions turn by turn (Spec-Bench style); optionally write an answer file. Every turn's prompt
    is checked against the pair's room before it runs (``Pair.check_length``), the first turns before the warm-up."""
    for q in questions:
        pair.check_length(len(render(template, pair.tokenizer, [{"role": "user", "content": q.turns[0]}])),
                          a.max_new_tokens)
    for _ in range(a.warmup):
        run_question(pair, questions[0].turns, policy, template=template, max_new_tokens=min(16, a.max_new_tokens),
                     check_length=True)
    rows, generations = [], []
    for i, q in enumerate(tqdm(questions, desc="questions", unit="q")):      # question i: seed rule of run_questions
        turns = run_question(pair, q.turns, policy, template=template, max_new_tokens=a.max_new_tokens,
                             temperature=a.temperature, top_p=a.top_p, seed=a.seed + i, check_length=True)
        generations.append([turn.generation for turn in turns])
        for t, turn in enumerate(turns):
            g = turn.generation
            rows.append({"question_id": q.question_id, "category": q.category, "turn": t, "text": turn.text,
                         "decoding_steps": g.decoding_steps, "new_tokens": g.new_tokens, "wall_time": g.wall_time,
                         "accept_lengths": g.accept_lengths})
    df = pd.DataFrame(rows)
    m = summarize(generations)
    print(f"{m['questions']} questions, {m['generations']} turns: throughput {m['throughput']:.2f} tok/s, "
          f"mean accepted length {m['mean_accepted_length']:.3f} ({run_label(policy, a.gamma, draft)})")
    if a.answers:
        model_id = f"{target}-{policy.name}-g{a.gamma}"
        write_answer_file(Path(a.answers), answer_records(df, model_id))
        print(f"answers written to {a.answers}")
    return 0


def cmd_policies(a) -> int:
    for name, (_, params, rule) in REGISTRY.items():
        ps = ", ".join(f"{k}={p.default}" for k, p in params.items()) or "-"
        print(f"{name:14s} {rule}\n{'':14s} parameters: {ps}")
    return 0


def cmd_sweep(a) -> int:
    from jobs.sweep.command import main as sweep_main  # heavy: torch

    argv = [a.config] + (["--address", a.address] if a.address else []) \
        + (["--dry-run"] if a.dry_run else []) + (["--fresh"] if a.fresh else []) \
        + (["--verbose"] if a.verbose else []) + (["--json"] if a.json else []) \
        + (["--backend", a.backend] if a.backend != "ray" else []) \
        + (["--wait-for-gpus", str(a.wait_for_gpus)] if a.wait_for_gpus else [])
    return sweep_main(argv)


def cmd_report(a) -> int:
    return report_main(a)


def cmd_replay(a) -> int:
    return replay_main(a)


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="specsweep", description="Evaluate speculative-decoding policies.")
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="generate one answer and print its statistics")
    _add_generation_args(g)
    g.add_argument("--prompt", default=None)
    g.add_argument("--prompt-file", default=None, help="generate every non-empty line of FILE (a user message each)")
    g.add_argument("--batch-size", default=None, help="rows per batch for --prompt-file (default 1) or --dataset")
    g.add_argument("--dataset", default=None, help="answer questions instead: sample, specbench or a question.jsonl path")
    g.add_argument("--categories", default=None, help="comma-separated Spec-Bench categories")
    g.add_argument("--limit-per-category", type=int, default=None)
    g.add_argument("--question-ids", default=None, help="comma-separated question ids")
    g.add_argument("--answers", default=None, help="write a Spec-Bench answer file (jsonl) here")
    g.add_argument("--warmup", type=int, default=0, help="discarded warm-up generations before timing (0 … 1000)")
    g.add_argument("--raw", action="store_true", help="no chat template")
    g.add_argument("--json", action="store_true",
                   help="print the result as JSON: one object (with --prompt-file: one line per prompt)")
    g.set_defaults(fn=cmd_generate)
    g.add_argument("--costs", default=None, help="a cost model from `specsweep calibrate --out` (not used when "
                   "measured on another machine or engine setup: measured again if the policy reads costs)")
    c = sub.add_parser("calibrate", help="measure a pair's cost model on the engine's step path; write it to --out")
    _add_generation_args(c)
    c.add_argument("--out", required=True, help="JSON file to write")
    c.add_argument("--context", type=int, default=256, help="cached tokens the probe runs at (default 256)")
    c.add_argument("--max-tokens", type=int, default=64, help="longest verified length probed (default 64)")
    c.add_argument("--repeats", type=int, default=3, help="probe repetitions, 1 … 1000 (default 3)")
    c.set_defaults(fn=cmd_calibrate)
    s = sub.add_parser("sweep", help="run a sweep config on a local or remote Ray cluster")
    add_sweep_flags(s)
    s.set_defaults(fn=cmd_sweep)
    r = sub.add_parser("report", help="print the paper-style tables of a sweep")
    r.add_argument("--experiment", default=None)
    r.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    r.add_argument("--output", default=None, help="with --experiment: the sweep whose output folder is DIR "
                                                  "(default: the latest sweep of the experiment)")
    r.add_argument("--parquet", default=None, help="a sweep's output folder (instead of MLflow)")
    r.add_argument("--format", default="md", choices=["md", "csv"])
    r.add_argument("--compare", default=None, help="a second sweep output folder to compare against")
    r.add_argument("folder", nargs="?", default=None, help="a sweep's output folder (same as --parquet DIR)")
    r.add_argument("--specbench", action="store_true", help="Spec-Bench evaluation/speed.py's speedup and mean accepted "
                   "tokens beside ours, from DIR/answers (loads the target tokenizer)")
    r.add_argument("--costs", default=None, help="roofline:GPU[:Q]: add the what-if (batch, context) → γ table "
                   "under a roofline cost model (gamma_table-roofline-GPU.csv)")
    r.set_defaults(fn=cmd_report)
    rp = sub.add_parser("replay", help="replay policies on a sweep's stored traces (no model loaded)")
    rp.add_argument("output", help="the output folder of a sweep run with mode: replay or both")
    rp.add_argument("--policies", required=True, help="YAML file: policies: [...] and optionally gammas: [...]")
    rp.add_argument("--costs", default=None, help="another sweep's actors.json, or a cost model from `specsweep "
                                                   "calibrate --out`: predict times with it (what-if); roofline:GPU[:Q] "
                                                   "(h100, h200, a100-80, a100-40, l4): predicted from config.json")
    rp.add_argument("--format", default="md", choices=["md", "csv"])
    rp.set_defaults(fn=cmd_replay)
    add_distill_parser(sub)
    add_plan_parser(sub)
    add_recommend_parser(sub)
    add_tune_parser(sub)
    pl = sub.add_parser("policies", help="list policies and their parameters")
    pl.set_defaults(fn=cmd_policies)
    for command in sub.choices.values():
        command.add_argument("--verbose", action="store_true",
                             help="also show third-party warnings, log lines and progress bars (and, for sweep, the per-γ tables)")
    return p


def main(argv=None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        a = parser().parse_args(argv)       # a bad flag is one line too (jobs/inputs.py's OneLineParser)
    except SpecsweepError as e:
        print(f"specsweep: error: {e}", file=sys.stderr)
        return 2
    quiet_third_party(a.verbose)
    try:
        if getattr(a, "seed", None) is not None:
            check_seed(a.seed, "--seed")
        return a.fn(a)
    except SpecsweepError as e:
        print(f"specsweep: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("specsweep: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
