"""``PairActor``: one target/draft pair pinned to one device, serving sweep tasks.

Models load once per actor, the cost curve is measured once (``actors/calibrate.py``)
and warm-up generations are discarded, as Spec-Bench does: ``warmup`` runs of ``ar``
when the actor starts, and ``warmup`` runs of each policy the first time the actor
meets it, so the method under test is warm before it is timed. A task is one
question (all its turns) × a block of configs, timed in this order: ``ar`` first, the
configs shuffled with the sweep seed (a fixed order would favour whichever config
always runs in the same slot), ``ar`` again last. The two ``ar`` runs are recorded as
such (``ar_timing`` = first / last): the first is the baseline of every ratio, the pair
of them is the ar/ar noise control (``jobs/metrics.py``). The answer is a
``pyarrow.Table`` in ``actors/schema.py``'s schema. A config that raises becomes ``status="failed"`` rows
with the reason; the rest of the task goes on. The same code runs on GPU and CPU.
"""
from __future__ import annotations

import json
import os
import random
import socket
import time
import traceback
from typing import NamedTuple

import pyarrow as pa

from actors.models import peak_gpu_memory
from actors.pair import Pair, PairConfig
from actors.conversation import run_question
from actors.schema import config_key, to_table
from actors.templates import default_template
from policies.registry import build


def versions() -> str:
    import torch
    import transformers

    return json.dumps({"torch": torch.__version__, "transformers": transformers.__version__, "specsweep": "0.1.0"})


class PairActor:
    def __init__(self, pair: dict, label: str, *, calibrate: dict | None = None, warmup_question: dict | None = None,
                 warmup: int = 3, generation: dict | None = None, threads: int | None = None):
        if threads:
            import torch

            torch.set_num_threads(int(threads))
        self.label = label
        self.cfg = PairConfig(**pair)
        self.pair = Pair(self.cfg)
        self.template = self.cfg.template or default_template(self.cfg.target, self.pair.tokenizer)
        self.costs = self.pair.calibrate(**(calibrate or {})) if self.pair.drafter is not None else None
        self.name = f"{label}@{socket.gethostname()}:{os.getpid()}"
        self.versions = versions()
        self.policies: dict[str, object] = {}      # one instance per config: persist=true carries state across generations
        self.warmup = warmup
        self.warmup_question = _question(warmup_question) if warmup_question else None
        self.warm_tokens = min(32, (generation or {}).get("max_new_tokens", 32))
        self.warmed: set[str] = set()
        self._warm_up("ar", {}, 0)

    def _warm_up(self, name: str, params: dict, gamma: int) -> None:
        """``warmup`` discarded runs of the warm-up question with a throwaway instance of this policy,
        the first time the actor meets the policy (its draft path, tree code and caches get warm)."""
        key = f"{name}:{json.dumps(params, sort_keys=True)}"
        if not self.warmup or self.warmup_question is None or key in self.warmed:
            return
        self.warmed.add(key)
        for _ in range(self.warmup):
            run_question(self.pair, self.warmup_question.turns, build((name, params), max(gamma, 1)),
                         template=self.template, max_new_tokens=self.warm_tokens)

    def info(self) -> dict:
        return {"actor": self.name, "device": self.pair.device, "template": self.template,
                "engine": self.pair.engine.engine, "peak_gpu_memory": peak_gpu_memory(),
                "costs": self.costs.to_dict() if self.costs else None, "rank_acceptance": self.pair.rank_acceptance,
                "versions": self.versions, "pid": os.getpid()}

    def _policy(self, name: str, params: dict, gamma: int):
        key = config_key(self.label, f"{name}:{json.dumps(params, sort_keys=True)}", gamma)
        if key not in self.policies:
            self.policies[key] = build((name, params), max(gamma, 1))
        return self.policies[key]

    def run_task(self, task: dict) -> pa.Table:
        """task: task_key, question, configs [(name, params, gamma)], repeats, seed, generation."""
        q = _question(task["question"])
        gen = task["generation"]
        rows: list[dict] = []
        for rep in range(task["repeats"]):
            configs = [tuple(c) for c in task["configs"]]
            random.Random(f"{task['seed']}|{task['task_key']}|{rep}").shuffle(configs)
            timed = [("ar", {}, 0, "first")] + [(*c, "") for c in configs] + [("ar", {}, 0, "last")]
            for name, params, gamma, ar_timing in timed:
                base = {**self._base_row(task, q, name, params, gamma, rep, gen), "ar_timing": ar_timing}
                try:
                    self._warm_up(name, params, gamma)
                    policy = self._policy(name, params, gamma)
                    turns = run_question(self.pair, q.turns, policy, template=self.template, seed=task["seed"] + rep, **gen)
                    done = time.time()
                except Exception as e:  # recorded, never silently lost
                    msg = f"{type(e).__name__}: {e}".strip()[:500]
                    rows.append({**base, "turn": 0, "status": "failed", "error": msg + " | " + _where(e)})
                    continue
                for t, turn in enumerate(turns):
                    g = turn.generation
                    rows.append({**base, "turn": t, "new_tokens": g.new_tokens, "wall_time": g.wall_time, "tstamp": done,
                                 "prefill_time": g.prefill_time, "draft_time": sum(s.draft_time for s in g.steps),
                                 "verify_time": sum(s.verify_time for s in g.steps), "decoding_steps": g.decoding_steps,
                                 "target_calls": g.target_calls, "accept_lengths": g.accept_lengths,
                                 "drafted": g.drafted, "accepted": g.accepted, "gammas": g.gammas, "text": turn.text,
                                 "token_ids": g.token_ids, "prompt_ids": turn.prompt_ids,
                                 "peak_gpu_bytes": sum(peak_gpu_memory().values()),
                                 "status": "ok", "error": ""})
        return to_table(rows)

    def _base_row(self, task, q, name, params, gamma, rep, gen) -> dict:
        spec = policy_spec(name, params)
        return {"task_key": task["task_key"], "config_key": config_key(self.label, spec, gamma), "pair": self.label,
                "engine": self.pair.engine.engine,
                "target": self.cfg.target, "draft": str(self.cfg.draft), "policy": name, "policy_spec": spec,
                "params": json.dumps(params, sort_keys=True), "gamma": gamma, "repeat": rep, "seed": task["seed"] + rep,
                "temperature": float(gen.get("temperature", 0.0)), "question_id": q.question_id, "category": q.category,
                "device": self.pair.device, "actor": self.name, "versions": self.versions}


def policy_spec(name: str, params: dict) -> str:
    """Canonical ``name:k=v,...`` label of a config: the parameters that differ from the defaults, sorted
    (the full set is in the ``params`` column)."""
    from policies.registry import REGISTRY

    defaults = {k: p.default for k, p in REGISTRY[name][1].items()}
    diff = {k: v for k, v in params.items() if defaults.get(k, object()) != v}
    if not diff:
        return name
    return name + ":" + ",".join(f"{k}={diff[k]}" for k in sorted(diff))


class TaskQuestion(NamedTuple):
    """A question as a task carries it (plain data: actors never import the dataset layer)."""

    question_id: int
    category: str
    turns: tuple[str, ...]


def _question(d: dict) -> TaskQuestion:
    return TaskQuestion(int(d["question_id"]), d["category"], tuple(d["turns"]))


def _where(e: Exception) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    return f"{tb[-1].filename.split('/')[-1]}:{tb[-1].lineno}" if tb else ""
