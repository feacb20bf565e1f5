"""``PairActor``: one target/draft pair pinned to one device, serving sweep tasks.

Models load once per actor, the cost curve is measured once (``actors/calibrate.py``)
and a few warm-up generations are discarded, as Spec-Bench does. A task is one
question (all its turns) × a block of configs, with the ``ar`` baseline first, so
every ratio is measured on one device; the answer is a ``pyarrow.Table`` in
``jobs/schema.py``'s schema. A config that raises becomes ``status="failed"`` rows
with the reason; the rest of the task goes on. The same code runs on GPU and CPU.
"""
from __future__ import annotations

import json
import os
import socket
import traceback

import pyarrow as pa

from actors.pair import Pair, PairConfig
from jobs.conversation import run_question
from jobs.dataset import Question
from jobs.schema import config_key, to_table
from jobs.templates import default_template
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
        if warmup and warmup_question:
            q = _question(warmup_question)
            ar = build("ar")
            for _ in range(warmup):
                run_question(self.pair, q, ar, template=self.template, max_new_tokens=min(32, (generation or {}).get(
                    "max_new_tokens", 32)))

    def info(self) -> dict:
        return {"actor": self.name, "device": self.pair.device, "template": self.template,
                "costs": self.costs.to_dict() if self.costs else None, "rank_acceptance": self.pair.rank_acceptance, "versions": self.versions, "pid": os.getpid()}

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
            for name, params, gamma in [("ar", {}, 0)] + [tuple(c) for c in task["configs"]]:
                base = self._base_row(task, q, name, params, gamma, rep, gen)
                try:
                    policy = self._policy(name, params, gamma)
                    turns = run_question(self.pair, q, policy, template=self.template, seed=task["seed"] + rep, **gen)
                except Exception as e:  # recorded, never silently lost
                    msg = f"{type(e).__name__}: {e}".strip()[:500]
                    rows.append({**base, "turn": 0, "status": "failed", "error": msg + " | " + _where(e)})
                    continue
                for t, turn in enumerate(turns):
                    g = turn.generation
                    rows.append({**base, "turn": t, "new_tokens": g.new_tokens, "wall_time": g.wall_time,
                                 "prefill_time": g.prefill_time, "draft_time": sum(s.draft_time for s in g.steps),
                                 "verify_time": sum(s.verify_time for s in g.steps), "decoding_steps": g.decoding_steps,
                                 "target_calls": g.target_calls, "accept_lengths": g.accept_lengths,
                                 "drafted": g.drafted, "accepted": g.accepted, "gammas": g.gammas, "text": turn.text,
                                 "token_ids": g.token_ids, "prompt_ids": turn.prompt_ids,
                                 "status": "ok", "error": ""})
        return to_table(rows)

    def _base_row(self, task, q, name, params, gamma, rep, gen) -> dict:
        spec = policy_spec(name, params)
        return {"task_key": task["task_key"], "config_key": config_key(self.label, spec, gamma), "pair": self.label,
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


def _question(d: dict) -> Question:
    return Question(int(d["question_id"]), d["category"], tuple(d["turns"]))


def _where(e: Exception) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    return f"{tb[-1].filename.split('/')[-1]}:{tb[-1].lineno}" if tb else ""
