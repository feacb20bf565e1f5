"""A sweep's tasks: pair × question × block of configs, and which configs run live or are replayed.

A config is (policy name, parameters, initial γ). In ``mode: live`` every config runs
live. In ``mode: replay`` every config that replay reproduces exactly
(:func:`actors.tracing.replay.check_batch_replayable`: greedy decoding, a sequence policy
or a batch policy, no clock reading) is replayed from the ``ar`` run's trace, and a
``validate`` fraction of the configs also runs live — at least one γ per replayable
policy, the rest drawn with the sweep seed — so every report can show replay against
live. Configs that cannot be replayed run live, and the plan says so in one line each.
In ``mode: both`` every config runs live and every replayable one is also replayed.
Batch tasks (B > 1) take the same partition: their batch ``ar`` run is traced row by
row and the batch is replayed (``actors/replay_task.py``).
"""
from __future__ import annotations

import json
import math
import random

from actors.plan.memory_plan import check_fits, pair_plan, plan_batch
from jobs.config import SweepConfig
from policies.errors import SpecsweepError
from policies.registry import build

Config = tuple   # (name, params, gamma)


def replay_partition(cfg: SweepConfig) -> tuple[list[Config], list[Config], list[str]]:
    """(configs to replay, configs to run live, one line per config family that cannot be replayed)."""
    from actors.tracing.replay import check_batch_replayable  # heavy: torch

    configs = [(name, params, g) for name, params in cfg.policies for g in cfg.gammas]
    if cfg.mode == "live":
        return [], configs, []
    temperature = float(cfg.generation.get("temperature", 0.0))
    replayable, notes = [], []
    for name, params, g in configs:
        try:
            check_batch_replayable(build((name, params), g), temperature)
            replayable.append((name, params, g))
        except SpecsweepError as e:
            line = f"runs live: {e}"
            if line not in notes:
                notes.append(line)
    if cfg.mode == "both":
        return replayable, configs, notes
    live = [c for c in configs if c not in replayable] + validation_sample(cfg, replayable)
    return replayable, [c for c in configs if c in live], notes


def validation_sample(cfg: SweepConfig, replayable: list[Config]) -> list[Config]:
    """The replayable configs also run live: ⌈validate · n⌉ of them (0 when validate = 0), at least one per
    policy, drawn with the sweep seed."""
    if cfg.validate_fraction <= 0 or not replayable:
        return []
    rng = random.Random(f"validate|{cfg.seed}")
    by_policy: dict[str, list[Config]] = {}
    for c in replayable:
        by_policy.setdefault(json.dumps([c[0], c[1]], sort_keys=True), []).append(c)
    chosen = [rng.choice(cs) for cs in by_policy.values()]
    rest = [c for c in replayable if c not in chosen]
    extra = max(0, math.ceil(cfg.validate_fraction * len(replayable)) - len(chosen))
    chosen += rng.sample(rest, min(extra, len(rest)))
    return chosen


def plan_tasks(cfg: SweepConfig, questions) -> list[dict]:
    """One task per pair × question × block of ``block_size`` configs (0 = all configs in one task); for each batch
    size B > 1 in ``batch_sizes`` also one task per pair × block of B questions (decoded together) × config block.
    Outside ``mode: live`` every task lists its block's ``live`` and ``replay`` configs (:func:`replay_partition`,
    the same at every batch size)."""
    to_replay, live, _ = replay_partition(cfg)
    configs = [(name, params, g) for name, params in cfg.policies for g in cfg.gammas]
    block = cfg.block_size or len(configs)
    tasks = []

    def split(task: dict) -> dict:
        """``task`` with its block's live and replayed configs, outside ``mode: live``."""
        if cfg.mode != "live":
            task["live"] = [c for c in task["configs"] if c in live]
            task["replay"] = [c for c in task["configs"] if c in to_replay]
        return task

    for p in cfg.pairs:
        for B in (b for b in cfg.batch_sizes if b > 1):
            for start in range(0, len(questions), B):
                qs = questions[start:start + B]
                for b in range(0, len(configs), block):
                    task = {"task_key": f"{p.label}|B{B}|q{qs[0].question_id}+{len(qs)}|b{b // block}",
                            "pair": p.label, "batch_size": B,
                            "question": {"question_id": qs[0].question_id, "category": qs[0].category,
                                         "turns": list(qs[0].turns)},      # the block's first, for failed rows
                            "questions": [{"question_id": q.question_id, "category": q.category,
                                           "turns": list(q.turns)} for q in qs],
                            "configs": configs[b:b + block], "repeats": cfg.repeats, "seed": cfg.seed,
                            "generation": cfg.generation}
                    tasks.append(split(task))
        if 1 not in cfg.batch_sizes:
            continue
        for q in questions:
            for b in range(0, len(configs), block):
                chunk = configs[b:b + block]
                task = {"task_key": f"{p.label}|q{q.question_id}|b{b // block}", "pair": p.label,
                        "question": {"question_id": q.question_id, "category": q.category, "turns": list(q.turns)},
                        "configs": chunk, "repeats": cfg.repeats, "seed": cfg.seed, "generation": cfg.generation}
                tasks.append(split(task))
    return tasks


def describe_plan(cfg: SweepConfig, questions, tasks) -> str:
    """What ``--dry-run`` prints: sizes, pairs, policies, what runs live and what is replayed, a time bound."""
    turns = sum(len(q.turns) for q in questions)
    configs = len(cfg.policies) * len(cfg.gammas)
    to_replay, live, notes = replay_partition(cfg)
    per_pair_tasks = len(tasks) // max(1, len(cfg.pairs))
    blocks = -(-configs // (cfg.block_size or configs or 1))      # config blocks: each times ar first and last
    live_gens = len(cfg.pairs) * len(cfg.batch_sizes) * turns * (len(live) + 2 * blocks) * cfg.repeats
    tokens = live_gens * cfg.generation["max_new_tokens"]
    lines = [f"sweep {cfg.name!r}: {len(cfg.pairs)} pair(s), {len(questions)} question(s) ({turns} turn(s)), "
             f"{len(cfg.policies)} policies × {len(cfg.gammas)} initial γ = {configs} configs (+ ar), "
             f"{cfg.repeats} repeat(s); mode {cfg.mode}",
             f"tasks: {len(tasks)} ({per_pair_tasks} per pair); live generations: {live_gens} (ar first and last "
             f"included); at most {tokens} new tokens generated live"]
    if cfg.mode != "live":
        lines.append(f"replayed: {len(to_replay)} configs from one traced ar run per question; live: {len(live)} "
                     f"configs (validation fraction {cfg.validate_fraction:g}; rollout length "
                     f"{cfg.rollout_length or 'the whole budget'})")
        lines += [f"  {n}" for n in notes]
    for i, p in enumerate(cfg.pairs):
        lines.append(f"  pair {p.label}: target={p.target} draft={p.draft} dtype={p.dtype} quant={p.quantization} "
                     f"actors={p.actors} num_gpus={p.num_gpus}")
        if p.num_gpus >= 1:          # the memory plan (actors/plan/memory_plan.py); a pair that fits no GPU is refused
            plan = pair_plan(p, plan_batch(cfg))
            check_fits(plan, f"config pairs[{i}]")
            fits = ", ".join(k for k, ok in plan.fits.items() if ok)
            lines.append(f"    memory: {plan.per_gpu_bytes / 1e9:.1f} GB on GPU 0 at batch {plan.batch}; fits {fits} "
                         "(`specsweep plan` for detail)")
    for name, params in cfg.policies:
        lines.append(f"  policy {name} {json.dumps(params)}")
    lines.append(f"  gammas {cfg.gammas}")
    if cfg.batch_sizes != [1]:
        how = ("live" if cfg.mode == "live" else
               f"{'replayed and validated live' if cfg.mode == 'replay' else 'live and replayed'} as at B = 1, from "
               "one traced batch ar run per block")
        lines.append(f"  batch sizes {cfg.batch_sizes} (B > 1: blocks of B questions decoded together, {how})")
    # a rough guide, not a bound: max_new_tokens per live generation at a plain-decoding rate of a small target
    # (SmolLM2-135M: ~100 ms/token on a 2-core CPU, docs/benchmarks.md; 25 ms/token taken for a GPU pair)
    actors = sum(p.actors for p in cfg.pairs)
    gpu = all(p.num_gpus >= 1 for p in cfg.pairs)
    ms = 25 if gpu else 100
    est = tokens * ms / 1000 / max(1, actors)
    lines.append(f"rough decoding time: {tokens} tokens × {ms} ms/token (a small target on {'a GPU' if gpu else 'a CPU'}) "
                 f"/ {actors} actor(s) ≈ {_duration(est)}, plus model loading, calibration and replay; a larger "
                 "target decodes slower (not a bound)")
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    """``"40 s"`` under two minutes, ``"12 min"`` above."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
