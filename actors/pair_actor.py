"""``PairActor``: one target/draft pair pinned to one device, serving sweep tasks.

Models load once per actor, the cost model is measured once (``actors/costs/calibrate.py``)
and warm-up generations are discarded, as Spec-Bench does: ``warmup`` runs of ``ar``
when the actor starts, and ``warmup`` runs of each policy the first time the actor
meets it, so the method under test is warm before it is timed. A task is one
question (all its turns) × a block of configs; ``task_warmup`` untimed ``ar`` runs of its own questions come first
(timed cold, a question's first ``ar`` ran its prefill slower than the closing one, so the baseline of every ratio
was slow — docs/uncertainty.md), then the timed order: ``ar`` first, the
live configs shuffled with the sweep seed (a fixed order would favour whichever config
always runs in the same slot), ``ar`` again last. The two ``ar`` runs are recorded as
such (``ar_timing`` = first / last): the first is the baseline of every ratio, the pair
of them is the ar/ar noise control (``jobs/report/metrics.py``). Configs the task lists under
``replay`` are replayed from traces recorded along the first ``ar`` run
(``actors/replay_task.py``; rows with ``mode="replay"``); a batch task (B questions decoded together) traces
one row per question along its batch ``ar`` run and replays the batch turn by turn.

Request order. A drafter with a memory of earlier responses (``suffix``: ``Drafter.hold`` / ``remember`` /
``forget``) is held for the actor's life, so warm-up and calibration teach it nothing, and every config of a task
drafts from the same memory: the responses of the questions this actor answered in earlier tasks, in the order it
ran them, without the task's own questions (a later config block or batch size of a question forgets its answer for
the task: no config drafts from an answer to its own question). After a task, its first ``ar`` run's responses
(question by question, turn by turn) are learnt, as the most recent. A resumed sweep's actor first learns the
finished tasks' responses in the order they finished (``learnt``, from the output folder), so the rest of the sweep
drafts from the memory an uninterrupted run would have had. Replay reproduces a task exactly: its rollouts
are recorded from that same memory. ``request_order`` lists the task keys in the order they ran; each trace's
``meta`` carries ``request`` (its task's place in that order) and ``memory`` (the question ids in the memory, oldest
first). The answer is
``{"rows": pyarrow.Table in actors/loading/schema.py's schema, "traces": pyarrow.Table or None}``.
A config that raises becomes ``status="failed"`` rows with the reason; the rest of the
task goes on. The same code runs on GPU and CPU.
"""
from __future__ import annotations

import json
import os
import random
import socket
import time
import traceback
from typing import NamedTuple

import torch

from actors.costs.batch_costs import measure_batch_costs
from actors.loading.conversation import run_questions
from actors.loading.models import peak_gpu_memory
from actors.pair import Pair, PairConfig
from actors.costs.quiet import VERBOSE_ENV, quiet_third_party
from actors.tracing import oracle_bound
from actors.replay_task import FIT_GAMMAS, fit_runs, replay_turns, trace_turns
from actors.tracing.traces import traces_to_table
from actors.loading.schema import batch_label, config_key, to_table
from actors.loading.templates import default_template
from policies.base import BatchPolicy
from policies.registry import REGISTRY, build

# kept steps per width and repeat of a sweep's batch cost surface: at 2 (the function's default) two runs of the
# same sweep on the 2-core CPU fitted T_B(1) at B = 4 12 % apart (58.1 vs 65.0 ms; live ar steps ~58 ms), enough to
# move the γ table's B = 4 prediction from 0.84× to 1.02×; 6 triples the samples behind each knot
SURFACE_STEPS = 6


def versions() -> str:
    """JSON of the torch, transformers and specsweep versions, logged with every row."""
    import transformers  # heavy: transformers

    return json.dumps({"torch": torch.__version__, "transformers": transformers.__version__, "specsweep": "0.1.0"})


class PairActor:
    """One target/draft pair on one device serving sweep tasks: models load and calibrate once, warm-up runs are
    discarded (as Spec-Bench does), and each task times ``ar`` first, the shuffled live configs, ``ar`` last, then
    replays the ``replay`` configs from the first ``ar`` run's traces (see the module docstring)."""

    def __init__(self, pair: dict, label: str, *, calibrate: dict | None = None, warmup_question: dict | None = None,
                 warmup: int = 3, task_warmup: int = 0, generation: dict | None = None, threads: int | None = None,
                 replay: dict | None = None, learnt: list | None = None, sibling_cpus: float = 0.0,
                 progress=None):
        """``progress``: called with a line at each start phase (models, warm-up, cost model), or None."""
        t0 = time.perf_counter()
        say = progress or (lambda line: None)
        quiet_third_party(os.environ.get(VERBOSE_ENV) == "1")
        if threads:
            torch.set_num_threads(int(threads))
        self.label = label
        self.cfg = PairConfig(**pair)
        self.pair = Pair(self.cfg)
        say(f"{label}: models loaded in {time.perf_counter() - t0:.0f} s; warm-up runs")
        if self.pair.drafter is not None:          # a memory of responses learns per task only (module doc)
            self.pair.drafter.hold(True)
        self.request_order: list[str] = []        # task keys in the order they ran (module doc, "Request order")
        self.memory: dict[int, list] = {}          # question id -> its learnt responses, oldest first
        for key, question_ids, responses in learnt or ():      # a resumed sweep: what the finished tasks answered
            self._learn(key, question_ids, responses)
        self.template = self.cfg.template or default_template(self.cfg.target, self.pair.tokenizer)
        self.name = f"{label}@{socket.gethostname()}:{os.getpid()}"
        self.versions = versions()
        self.policies: dict[str, object] = {}      # one instance per config: persist=true carries state across generations
        self.warmup = warmup
        self.task_warmup = task_warmup
        self.warmup_question = _question(warmup_question) if warmup_question else None
        self.warm_tokens = min(32, (generation or {}).get("max_new_tokens", 32))
        self.warmed: set[str] = set()
        self._warm_up("ar", {}, 0)
        self.replay = dict(replay or {})           # rollout_length, fit_gammas; None: this actor only runs live
        if self.pair.drafter is not None:          # one cost model: the probe, plus the replay fit's runs
            say(f"{label}: measuring the cost model" + (" and the replay fit's runs" if replay is not None else ""))
            extra = (fit_runs(self.pair, self.warmup_question.turns, template=self.template,
                              max_new_tokens=(generation or {}).get("max_new_tokens", 128),
                              gammas=self.replay.get("fit_gammas", FIT_GAMMAS))
                     if replay is not None and self.warmup_question is not None else ())
            self.pair.calibrate(**(calibrate or {}), extra_runs=extra, sibling_load=sibling_cpus)
        self.calibration_context = int((calibrate or {}).get("context", 256))
        self.cost_model = self.pair.costs if replay is not None else None     # replay's clock
        say(f"{label}: ready in {time.perf_counter() - t0:.0f} s")

    def _warm_up(self, name: str, params: dict, gamma: int) -> None:
        """``warmup`` discarded runs of the warm-up question with a throwaway instance of this policy,
        the first time the actor meets the policy (its draft path, tree code and caches get warm)."""
        key = f"{name}:{json.dumps(params, sort_keys=True)}"
        if not self.warmup or self.warmup_question is None or key in self.warmed:
            return
        self.warmed.add(key)
        for _ in range(self.warmup):
            self._turns([self.warmup_question], build((name, params), max(gamma, 1)), (name, params, gamma), None,
                        {"max_new_tokens": self.warm_tokens})

    def _turns(self, questions, policy, config, seed: int | None, gen: dict) -> list:
        """Each question's turns under ``policy``, the questions decoded together as one batch per turn
        (``actors/loading/conversation.py``; one question is a batch of one) with :func:`_row_policies`. ``seed`` None: the
        engine's default (warm-up runs)."""
        seeded = {} if seed is None else {"seed": seed}
        if isinstance(policy, BatchPolicy) and policy.needs_costs:
            self._batch_costs(len(questions))
        return run_questions(self.pair, [q.turns for q in questions], _row_policies(policy, config, len(questions) == 1),
                             template=self.template, check_length=True, **seeded, **gen)     # too long: one line

    def info(self) -> dict:
        return {"actor": self.name, "device": self.pair.device, "template": self.template,
                "drafter": self.pair.cfg.drafter_kind,
                "engine": self.pair.engine.engine, "peak_gpu_memory": peak_gpu_memory(),
                "costs": self.pair.costs.to_dict() if self.pair.costs else None, "rank_acceptance": self.pair.rank_acceptance,
                "cost_model": self.cost_model.to_dict() if self.cost_model else None,
                "versions": self.versions, "pid": os.getpid(), "request_order": list(self.request_order)}

    def _policy(self, name: str, params: dict, gamma: int, mode: str = "live"):
        key = config_key(self.label, f"{name}:{json.dumps(params, sort_keys=True)}", gamma) + f"|{mode}"
        if key not in self.policies:
            self.policies[key] = build((name, params), max(gamma, 1))
        return self.policies[key]

    def run_task(self, task: dict) -> dict:
        """task: task_key, question (one) or questions (B of them, decoded together as one batch per turn), configs
        [(name, params, gamma)], repeats, seed, generation; optional ``live`` / ``replay``: the configs to run live /
        to replay (default: all live, none replayed). ``ar`` first, the configs shuffled with the sweep seed, ``ar``
        last; every row carries the batch size. A single question's task is a batch of one: its policy instance
        persists across tasks (``persist=true``) and its replayed rows add the oracle bound."""
        alone = "questions" not in task
        qs = [_question(d) for d in ([task["question"]] if alone else task["questions"])]
        gen = task["generation"]
        live = [tuple(c) for c in task.get("live", task["configs"])]
        to_replay = [tuple(c) for c in task.get("replay", ())]
        rows: list[dict] = []
        traces: list[list] = []
        learnt = None                               # the first ar run's responses (module doc, "Request order")
        own = [q.question_id for q in qs]
        self._forget(own)
        why = "the traced ar run failed; nothing to replay"
        for _ in range(self.task_warmup):           # untimed: the task's own questions run once before ar is timed
            try:
                self._turns(qs, build(("ar", {}), 1), ("ar", {}, 0), task["seed"], gen)
            except Exception:                        # the timed ar run that follows meets and records the same error
                break
        for rep in range(task["repeats"]):
            random.Random(f"{task['seed']}|{task['task_key']}|{rep}").shuffle(live)
            timed = [("ar", {}, 0, "first")] + [(*c, "") for c in live] + [("ar", {}, 0, "last")]
            for name, params, gamma, ar_timing in timed:
                bases = [{**self._base_row(task, q, name, params, gamma, rep, gen), "ar_timing": ar_timing} for q in qs]
                try:
                    self._warm_up(name, params, gamma)
                    policy = self._policy(name, params, gamma) if alone else build((name, params), max(gamma, 1))
                    per_q = self._turns(qs, policy, (name, params, gamma), task["seed"] + rep, gen)
                except Exception as e:  # recorded, never silently lost
                    rows += [self._failed(b, e) for b in bases]
                    continue
                done = time.time()
                rows += [self._row(b, t, turn.generation, turn.text, turn.prompt_ids, done)
                         for b, turns in zip(bases, per_q) for t, turn in enumerate(turns)]
                if ar_timing == "first" and to_replay and rep == 0:     # outside the timing: after the ar run
                    try:
                        traces = trace_turns(self.pair, per_q, max_new_tokens=gen["max_new_tokens"],
                                             rollout_length=self.replay.get("rollout_length"), key=task["task_key"],
                                             metas=[{"question_id": q.question_id, "category": q.category,
                                                     **({} if alone else {"batch_size": int(task["batch_size"])}),
                                                     "request": len(self.request_order),
                                                     "memory": [k for k in self.memory if k not in own]}
                                                    for q in qs], batched=not alone)
                    except Exception as e:  # the replayed rows carry it
                        why = f"tracing the ar run failed: {type(e).__name__}: {e}"
                if ar_timing == "first" and rep == 0:
                    learnt = [[turn.generation.token_ids for turn in turns] for turns in per_q]
            if rep == 0:        # a replay is exact and untimed: a repeat would copy it (repeats are for live noise)
                rows += self._replayed(task, qs, gen, rep, to_replay, traces, why, alone)
        self._learn(task["task_key"], own, learnt)
        flat = [t for row_traces in traces for t in row_traces]
        return {"rows": to_table(rows), "traces": traces_to_table(flat) if flat else None}

    def _forget(self, question_ids) -> None:
        """Before a task: its own questions' learnt responses leave the drafter's memory (module doc)."""
        for qid in question_ids:
            for tokens in self.memory.get(qid, ()):
                self.pair.drafter.forget(tokens)

    def _learn(self, key: str, question_ids, responses) -> None:
        """After a task: each question's responses of the first ``ar`` run (``responses`` None when it failed: the
        ones forgotten come back) are learnt as the most recent; the task joins ``request_order``."""
        self.request_order.append(key)
        if self.pair.drafter is None:
            return
        for i, qid in enumerate(question_ids):
            turns = responses[i] if responses is not None else self.memory.get(qid)
            self.memory.pop(qid, None)
            if turns is None:
                continue
            self.memory[qid] = [list(t) for t in turns]
            for tokens in self.memory[qid]:
                self.pair.drafter.remember(tokens)

    def _batch_costs(self, rows: int) -> None:
        """Before a batch policy that reads costs (``gt-batch`` with ``c=auto``) first runs at ``rows`` rows, and
        before anything is replayed at ``rows`` rows (replay's clock reads it): the batch cost surface at ``rows``
        (``actors/costs/batch_costs.py``: the engine's own steps at ``rows`` rows, timed by phase as ``calibrate``
        times one row), at the calibration context, added to the pair's cost model once per size
        (outside every timed generation). B = 1 is not measured: the surface's B = 1 member is the calibrated
        single-row model (``policies/costs.py``)."""
        costs = self.pair.costs
        if costs is None:
            return
        sizes = sorted({rows} - {1} - {int(b) for b in costs.batch})
        if sizes:
            costs.batch.update(measure_batch_costs(self.pair.engine, sizes=sizes, context=self.calibration_context,
                                                   steps=SURFACE_STEPS))

    def batch_surface(self, sizes) -> dict:
        """``info()`` after the batch cost surface is measured at every size in ``sizes`` it lacks (sizes > 1 and 1;
        :meth:`_batch_costs`): the sweep calls it once its tasks are done, so ``actors.json`` stores the surface."""
        for rows in sorted({int(b) for b in sizes if int(b) > 1}):
            self._batch_costs(rows)
        return self.info()

    def _replayed(self, task, qs, gen, rep, configs, traces, why: str, alone: bool) -> list[dict]:
        """Rows of the replayed configs (one per question and traced turn, ``actors/replay_task.py``'s
        :func:`replay_turns`: one question under the per-row cost clock, a batch under the batch cost surface at B),
        or one failed row per config; a single question's task (``alone``) also gets the oracle bound's rows."""
        rows = []
        for name, params, gamma in configs:
            bases = [{**self._base_row(task, q, name, params, gamma, rep, gen), "ar_timing": "", "mode": "replay",
                      "time_reliable": self.cost_model is not None and self.cost_model.reliable} for q in qs]
            try:
                if not traces:
                    raise RuntimeError(why)
                policy = (self._policy(name, params, gamma, "replay") if alone
                          else build((name, params), max(gamma, 1)))
                if len(qs) > 1 or isinstance(policy, BatchPolicy):
                    self._batch_costs(len(qs))
                per_q = replay_turns(self.pair, traces, _row_policies(policy, (name, params, gamma), len(qs) == 1),
                                     self.cost_model)
            except Exception as e:  # recorded, never silently lost
                rows.append(self._failed(bases[0], e))
                continue
            done = time.time()
            for base, q_traces, gens in zip(bases, traces, per_q):
                for t, (trace, g) in enumerate(zip(q_traces, gens)):
                    text = self.pair.tokenizer.decode(g.token_ids, skip_special_tokens=True).strip()
                    rows.append(self._row(base, t, g, text, trace.prompt_ids, done))
        if alone and configs and traces and self.cost_model is not None:   # the least time any chain reaches
            rows += self._bound_rows(task, qs[0], gen, rep, traces[0])
        return rows

    def _bound_rows(self, task, q, gen, rep, traces) -> list[dict]:
        """One ``oracle (bound)`` row per traced turn (``actors/tracing/oracle_bound.py``), under the same cost model."""
        base = {**self._base_row(task, q, "fixed", {}, 0, rep, gen), "policy": oracle_bound.NAME,
                "policy_spec": oracle_bound.LABEL, "params": "{}", "config_key": config_key(self.label, oracle_bound.LABEL, 0),
                "ar_timing": "", "mode": "replay", "time_reliable": self.cost_model.reliable}
        rows = []
        for t, trace in enumerate(traces):
            try:
                _, g = oracle_bound.replay_bound(trace, self.cost_model)
            except Exception as e:
                rows.append(self._failed({**base, "turn": t}, e))
                continue
            text = self.pair.tokenizer.decode(g.token_ids, skip_special_tokens=True).strip()
            rows.append(self._row(base, t, g, text, trace.prompt_ids, time.time()))
        return rows

    def _row(self, base: dict, t: int, g, text: str, prompt_ids, done: float) -> dict:
        return {**base, "turn": t, "new_tokens": g.new_tokens, "wall_time": g.wall_time, "tstamp": done,
                "prefill_time": g.prefill_time, "draft_time": sum(g.draft_times),
                "verify_time": sum(g.verify_times), "decoding_steps": g.decoding_steps,
                "target_calls": g.target_calls, "accept_lengths": g.accept_lengths,
                "drafted": g.drafted, "accepted": g.accepted, "k_max": g.k_max, "proposed": g.proposed,
                "draft_times": g.draft_times, "verify_times": g.verify_times, "pad_slots": g.pad_slots, "text": text,
                "token_ids": g.token_ids, "prompt_ids": list(prompt_ids),
                "peak_gpu_bytes": sum(peak_gpu_memory().values()), "status": "ok", "error": ""}

    @staticmethod
    def _failed(base: dict, e: Exception) -> dict:
        msg = f"{type(e).__name__}: {e}".strip()[:500]
        return {**base, "turn": 0, "status": "failed", "error": msg + " | " + _where(e)}

    def _base_row(self, task, q, name, params, gamma, rep, gen) -> dict:
        spec = policy_spec(name, params)
        batch = int(task.get("batch_size", 1))
        pair = batch_label(self.label, batch)
        return {"task_key": task["task_key"], "config_key": config_key(pair, spec, gamma), "pair": pair,
                "batch_size": batch,
                "engine": self.pair.engine.engine,
                "target": self.cfg.target, "draft": str(self.cfg.draft), "policy": name, "policy_spec": spec,
                "params": json.dumps(params, sort_keys=True), "gamma": gamma, "repeat": rep, "seed": task["seed"] + rep,
                "temperature": float(gen.get("temperature", 0.0)), "question_id": q.question_id, "category": q.category,
                "device": self.pair.device, "actor": self.name, "versions": self.versions, "mode": "live",
                "time_reliable": True, "template": self.template}


def policy_spec(name: str, params: dict) -> str:
    """Canonical ``name:k=v,...`` label of a config: the parameters that differ from the defaults, sorted
    (the full set is in the ``params`` column)."""
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


def _row_policies(policy, config, carried: bool):
    """``policies(n)`` of a run under ``config`` = (name, params, γ): a batch policy is ``policy`` itself (one
    instance for every turn); one question (``carried``) keeps ``policy`` across its turns, as a conversation
    carries it; a batch of questions gets a fresh per-row instance of ``config`` for every row of every turn."""
    name, params, gamma = config
    if isinstance(policy, BatchPolicy):
        return lambda n: policy
    if carried:
        return lambda n: [policy]
    return lambda n: [build((name, params), max(gamma, 1)) for _ in range(n)]


def _question(d: dict) -> TaskQuestion:
    return TaskQuestion(int(d["question_id"]), d["category"], tuple(d["turns"]))


def _where(e: Exception) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    return f"{tb[-1].filename.split('/')[-1]}:{tb[-1].lineno}" if tb else ""
