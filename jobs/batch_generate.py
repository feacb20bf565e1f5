"""``specsweep generate`` in batches: ``--prompt-file FILE --batch-size B`` (and ``--dataset … --batch-size B``).

Rules:
- every non-empty line of FILE is one prompt: a user message rendered with the pair's chat template
  exactly as ``--prompt`` is (``--raw``: no template); the prompts run in file order, in batches of B
  consecutive lines on the pair's engine (``actors/core/engine.py``) (a last batch smaller than B is normal);
- a per-row policy is built fresh for every row (``policies.registry.build``), a batch policy once per batch;
- the prompts run through the one turn loop of ``actors/loading/conversation.py`` (each prompt a one-turn question),
  so prompt i samples with its per-row seed rule, ``(--seed + i) · 1000`` (i: the prompt's index in the file):
  a prompt's draw does not depend on the batch around it or on B;
- ``--json``: one object per prompt, in file order, with the fields of a single ``generate --json``
  (:func:`generation_json`) plus ``batch_size``, ``batch`` (its batch's index), ``row`` (its row in that batch)
  and ``line`` (its line number in FILE). ``wall_time`` is the row's latency: from its batch's start
  (prefill included) to the row's last token. Otherwise one summary line per prompt and a total: tokens,
  seconds (Σ over batches of the batch's wall time), tok/s of the whole file and the mean accepted length
  over every row's steps;
- ``--dataset`` with ``--batch-size``: the questions' turns run turn by turn (turn t of every question that
  has one, in batches of B, after that question's own earlier answers) through the same loop: question i's
  turn t samples with seed ``(--seed + i) · 1000 + t``, as ``generate --dataset`` without ``--batch-size`` does;
  a summary line and, with ``--answers``, the Spec-Bench answer file;
- bad input is one line (``SpecsweepError``), before any model loads: an unreadable or empty file, B not an
  integer >= 1, ``--prompt-file`` beside ``--prompt`` or ``--dataset``, ``--answers`` without ``--dataset``,
  ``--batch-size`` with a single ``--prompt``, ``--engine static|compiled`` with B > 1 (those engines run one row
  at a time for now); a policy or drafter the batch engine cannot run is refused by
  it in one line after the pair loads, and so is a first-turn prompt that leaves no room for ``--max-new-tokens``
  (``Pair.check_length``), before the warm-up (which generates at most 16 tokens, never more than that flag).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from actors.loading.conversation import run_questions
from actors.loading.templates import render
from jobs.report.derived import summarize
from jobs.store.answers import answer_records
from jobs.store.output import record_written, write_texts
from policies.base import BatchPolicy
from policies.errors import SpecsweepError
from policies.registry import build


def generation_fields(g) -> dict:
    """The statistics a ``generate`` prints for one generation (NaN figures as None)."""
    m = summarize([g])
    defined = lambda v, nd: round(v, nd) if v == v else None          # noqa: E731 — NaN (undefined) → None
    return {"new_tokens": g.new_tokens, "wall_time": round(g.wall_time, 4),
            "throughput": defined(m["throughput"], 2),
            "target_calls": g.target_calls, "decoding_steps": g.decoding_steps,
            "mean_accepted_length": defined(m["mean_accepted_length"], 3),
            "acceptance_rate": defined(m["acceptance_rate"], 4)}


def write_answer_file(path: Path, records: list[dict]) -> Path:
    """``--answers``' lines written to ``path`` whole or not at all, through a hidden temporary twin that
    ``tempfile.mkstemp`` names in the same folder (``write_texts``: synced, renamed over ``path``, the folder synced;
    removed on an error), so no other file there, a user's ``X.tmp`` beside ``X.jsonl`` included, is touched."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record_written(path)
    write_texts({path: "".join(json.dumps(r) + "\n" for r in records)})
    return path


def run_label(policy, gamma: int, draft) -> str:
    """``policy=… γ0=… draft=…`` of a generate summary; γ0 "–" for a policy that drafts nothing (``ar``)."""
    return f"policy={policy!r} γ0={gamma if policy.needs_draft else '–'} draft={draft}"


def generation_json(g, text: str, *, target: str, draft, policy, gamma: int, costs) -> dict:
    """The JSON object of one ``generate --json``: settings, token ids, text, statistics, per-step lists, costs."""
    return {"target": target, "draft": draft, "policy": repr(policy), "gamma": gamma,
            "token_ids": g.token_ids, "text": text, **generation_fields(g), "accept_lengths": g.accept_lengths,
            "drafted": g.drafted, "accepted": g.accepted, "k_max": g.k_max,
            "costs": costs.to_dict() if costs else None}


def batch_size_of(a) -> int | None:
    """``--batch-size`` as an integer >= 1 (None when not given); one line otherwise."""
    text = getattr(a, "batch_size", None)
    if text is None:
        return None
    try:
        size = int(str(text).strip())
    except ValueError:
        size = 0
    if size < 1:
        raise SpecsweepError(f"--batch-size must be an integer >= 1, got {text!r}")
    return size


def read_prompt_file(path: str) -> list[tuple[int, str]]:
    """(line number, text) of every non-empty line of ``path``; one line when it cannot be read or has none.
    Lines end at "\n" only (a trailing "\r" dropped): U+2028, form feeds and the like stay inside their prompt."""
    try:
        lines = [ln[:-1] if ln.endswith("\r") else ln for ln in Path(path).read_bytes().decode("utf-8").split("\n")]
    except (OSError, UnicodeDecodeError) as e:
        raise SpecsweepError(f"--prompt-file {path}: cannot read it ({type(e).__name__})") from None
    prompts = [(i, line) for i, line in enumerate(lines, 1) if line.strip()]
    if not prompts:
        raise SpecsweepError(f"--prompt-file {path} has no non-empty line: write one prompt per line")
    return prompts


def check_batch_flags(a) -> list[tuple[int, str]] | None:
    """Check the batch flags before any model loads (module docstring); the prompt file's prompts, or None
    when ``--prompt-file`` was not given."""
    size = batch_size_of(a)
    path = getattr(a, "prompt_file", None)
    if path is None:
        if size is not None and not a.dataset:
            raise SpecsweepError("--batch-size batches the lines of --prompt-file FILE or the questions of --dataset; "
                                 "a single --prompt runs alone")
        if getattr(a, "answers", None) and not a.dataset:
            raise SpecsweepError("--answers writes a dataset's answer file: use it with --dataset, not --prompt")
    elif a.prompt is not None or a.dataset:
        raise SpecsweepError("--prompt-file reads every prompt from FILE: drop --prompt and --dataset")
    elif a.answers:
        raise SpecsweepError("--answers writes a dataset's answer file: use it with --dataset, not --prompt-file")
    return read_prompt_file(path) if path is not None else None


def _policies(a, n: int):
    """One batch policy for the batch, or ``n`` fresh per-row policies."""
    first = build(a.policy, a.gamma)
    return first if isinstance(first, BatchPolicy) else [first] + [build(a.policy, a.gamma) for _ in range(n - 1)]


def _batch_engine(pair, policy, size: int, prompt_lengths):
    """The pair's batch engine; for a batch policy that reads costs, the batch cost surface is measured first
    (sizes 2, 4, … up to B, at the prompts' median length; B = 1 is the calibrated single-row model) unless the cost model already holds one."""
    from actors.costs.batch_costs import measure_batch_costs  # heavy: torch

    costs = pair.costs
    if isinstance(policy, BatchPolicy) and policy.needs_costs and costs is not None and not costs.batch and size > 1:
        sizes = sorted(({size} | {1 << k for k in range(8) if 1 << k < size}) - {1})     # B = 1: the single-row model
        context = sorted(prompt_lengths)[len(prompt_lengths) // 2]
        print(f"specsweep: measuring the batch cost surface at B = {sizes} (context {context})", file=sys.stderr)
        costs.batch = measure_batch_costs(pair.engine, sizes=sizes, context=context,
                                          progress=lambda what: print(f"specsweep: {what}", file=sys.stderr))
    return pair.engine


def _batch_seconds(turns) -> float:
    """Σ over batches of the batch's wall time (its slowest row)."""
    slowest: dict[int, float] = {}
    for turn in turns:
        slowest[turn.batch] = max(slowest.get(turn.batch, 0.0), turn.generation.wall_time)
    return sum(slowest.values())


def generate_file(a, pair, policy, template: str, prompts: list[tuple[int, str]], target: str, draft) -> int:
    """Generate every prompt of the file in batches of ``--batch-size`` and print the rows (module docstring)."""
    size = batch_size_of(a) or 1
    ids = [render(template, pair.tokenizer, [{"role": "user", "content": text}]) for _, text in prompts]
    for p in ids:
        pair.check_length(len(p), a.max_new_tokens)
    engine = _batch_engine(pair, policy, size, [len(p) for p in ids])
    settings = dict(temperature=a.temperature, top_p=a.top_p)
    for _ in range(a.warmup):
        engine.generate_batch(ids[:size], _policies(a, len(ids[:size])), max_new_tokens=min(16, a.max_new_tokens),
                              **settings)
    turns = [q[0] for q in run_questions(pair, [[text] for _, text in prompts], lambda n: _policies(a, n),
                                         template=template, max_new_tokens=a.max_new_tokens, seed=a.seed,
                                         batch_size=size, **settings)]
    gens = [turn.generation for turn in turns]
    for (line, _), turn in zip(prompts, turns):
        g = turn.generation
        text = pair.tokenizer.decode(g.token_ids, skip_special_tokens=True)
        if a.json:
            print(json.dumps({**generation_json(g, text, target=target, draft=draft, policy=policy, gamma=a.gamma,
                                                costs=pair.costs),
                              "batch_size": size, "batch": turn.batch, "row": turn.row, "line": line}), flush=True)
        else:
            f = generation_fields(g)
            short = " ".join(text.split())
            print(f"[line {line} · batch {turn.batch} row {turn.row}] {f['new_tokens']} tokens · {f['wall_time']} s · "
                  f"MAL {f['mean_accepted_length']}: {short[:70] + ('…' if len(short) > 70 else '')}", flush=True)
    if not a.json:
        tokens = sum(g.new_tokens for g in gens)
        seconds = _batch_seconds(turns)
        mal = summarize(gens)["mean_accepted_length"]
        print(f"--- {len(gens)} prompts in {-(-len(gens) // size)} batches of {size}: {tokens} tokens in "
              f"{seconds:.2f} s = {tokens / seconds if seconds > 0 else float('nan'):.2f} tok/s (whole file) · "
              f"mean accepted length {mal:.3f} · {run_label(policy, a.gamma, draft)}")
    return 0


def generate_dataset(a, pair, policy, template: str, questions, target: str, draft) -> int:
    """Answer dataset questions turn by turn, each turn's rows in batches of ``--batch-size`` (module docstring)."""
    size = batch_size_of(a)
    first = [render(template, pair.tokenizer, [{"role": "user", "content": q.turns[0]}]) for q in questions]
    for p in first:                                 # before the warm-up runs them
        pair.check_length(len(p), a.max_new_tokens)
    engine = _batch_engine(pair, policy, size, [len(p) for p in first])
    settings = dict(temperature=a.temperature, top_p=a.top_p)
    for _ in range(a.warmup):
        engine.generate_batch(first[:size], _policies(a, len(first[:size])), max_new_tokens=min(16, a.max_new_tokens),
                              **settings)
    per_q = run_questions(pair, [q.turns for q in questions], lambda n: _policies(a, n), template=template,
                          max_new_tokens=a.max_new_tokens, seed=a.seed, batch_size=size, check_length=True, **settings)
    rows = [{"question_id": q.question_id, "category": q.category, "turn": t, "text": turn.text,
             "decoding_steps": turn.generation.decoding_steps, "new_tokens": turn.generation.new_tokens,
             "wall_time": turn.generation.wall_time, "accept_lengths": turn.generation.accept_lengths}
            for q, turns in zip(questions, per_q) for t, turn in enumerate(turns)]
    flat = [turn.generation for turns in per_q for turn in turns]
    seconds = _batch_seconds([turn for turns in per_q for turn in turns])
    tokens = sum(g.new_tokens for g in flat)
    print(f"{len(questions)} questions, {len(flat)} turns in batches of {size}: {tokens} tokens in {seconds:.2f} s = "
          f"{tokens / seconds if seconds > 0 else float('nan'):.2f} tok/s (whole batches), mean accepted length "
          f"{summarize(flat)['mean_accepted_length']:.3f} ({run_label(policy, a.gamma, draft)})")
    if a.answers:
        write_answer_file(Path(a.answers), answer_records(pd.DataFrame(rows), f"{target}-{policy.name}-g{a.gamma}"))
        print(f"answers written to {a.answers}")
    return 0
