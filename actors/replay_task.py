"""Replay inside a PairActor: one traced ``ar`` run per question, every replayable config from it.

A sweep in ``mode: replay`` (or ``both``) runs, per task (question × block of configs):

1. ``ar`` live and timed, as always, and along each of its turns the draft's rollouts
   (:func:`trace_turns` → :func:`actors.rollouts.record_pair_trace`; the rollouts are outside the ``ar`` timing);
2. each replayable config by :func:`actors.tracing.replay.replay_batch` on those traces (one row) — token ids,
   accept lengths, (k_max, drafted, accepted) per step exactly as a live run under greedy
   decoding; ``wall_time`` = the ``ar`` turn's measured prefill + the actor's cost model's
   predicted steps (:mod:`policies.cost_fit`);
3. the configs chosen for live validation (and those that cannot be replayed) live.

A batch task (B questions decoded together) does the same with the batch ``ar`` run: one trace per
row and turn along it (the reference is what the batch ``ar`` emitted for that row), then every
replayable config by :func:`actors.tracing.replay.replay_batch`, turn by turn as the live batch runs
(:func:`replay_turns`).

The actor has one cost model (``actors/costs/calibrate.py``), measured when it starts on the engine's
step path; in a replay sweep it is fitted on the probe's runs together with live generations of
the warm-up question's first turn (:func:`fit_runs`: ``ar`` and ``fixed`` at every γ of
:data:`FIT_GAMMAS`, the paper's grid, so the verify table has a knot at each verified length up
to 25, under the sweep's ``max_new_tokens``). Policies and replay's clock read the same model.
"""
from __future__ import annotations

from typing import Sequence

from actors.loading.conversation import run_question
from actors.tracing.replay import replay_batch
from actors.rollouts import Trace, record_pair_trace
from policies.costs import CostModel
from policies.fixed import Fixed, TargetOnly

FIT_GAMMAS = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24)


def fit_runs(pair, user_turns: Sequence[str], *, template: str, max_new_tokens: int,
             gammas: Sequence[int] = FIT_GAMMAS) -> list[tuple[int, object]]:
    """Live runs [(prompt length, Generation), …] of one question's first turn (``ar`` + ``fixed`` at ``gammas``)
    for the actor's cost model."""
    runs = []
    for policy in [TargetOnly()] + [Fixed(g) for g in gammas]:
        for turn in run_question(pair, user_turns[:1], policy, template=template, max_new_tokens=max_new_tokens):
            runs.append((len(turn.prompt_ids), turn.generation))
    return runs


def trace_turn(pair, t: int, prompt_ids, generation, *, max_new_tokens: int, rollout_length: int | None, key: str,
               meta: dict) -> Trace:
    """The trace of turn ``t`` of an ``ar`` run: its output is the reference, the draft's rollouts are computed along
    it (outside every timing); keyed ``{key}|t{t}``, ``meta`` and the turn index stored with it."""
    trace = record_pair_trace(pair, prompt_ids, max_new_tokens=max_new_tokens, max_draft=rollout_length,
                              key=f"{key}|t{t}", ar=generation)
    trace.meta.update(meta, turn=t)
    return trace


def trace_turns(pair, batch_turns: Sequence[Sequence], *, max_new_tokens: int, rollout_length: int | None,
                key: str, metas: Sequence[dict], batched: bool = False) -> list[list[Trace]]:
    """One trace per row and turn of an ``ar`` run (``batch_turns[i]``: question i's turns, as
    ``actors.loading.conversation.run_questions`` gives them; outside every timing): each row's own output is its reference.
    A question run alone has its traces keyed ``{key}|t{t}``; in a batch task (``batched``), row i's are keyed
    ``{key}|r{i}|t{t}`` and carry the row. Each carries ``metas[i]``."""
    if not batched:
        return [[trace_turn(pair, t, turn.prompt_ids, turn.generation, max_new_tokens=max_new_tokens,
                            rollout_length=rollout_length, key=key, meta=metas[0])
                 for t, turn in enumerate(batch_turns[0])]]
    return [[trace_turn(pair, t, turn.prompt_ids, turn.generation, max_new_tokens=max_new_tokens,
                        rollout_length=rollout_length, key=f"{key}|r{i}", meta={**meta, "row": i})
             for t, turn in enumerate(turns)]
            for i, (turns, meta) in enumerate(zip(batch_turns, metas))]


def replay_turns(pair, traces: Sequence[Sequence[Trace]], policies, cost_model: CostModel | None) -> list:
    """Questions decoded together, replayed as ``actors.loading.conversation.run_questions`` runs them live: turn t is
    one batch of the questions that have a turn t (``traces[i][t]``), ``policies(n)`` gives the policy of a batch
    of n rows (a batch policy, or n per-row policies; one question's instance is carried across its turns as a live
    conversation carries it). One list of :class:`~actors.core.step.Generation` per question,
    one per turn."""
    out: list[list] = [[] for _ in traces]
    for t in range(max(len(q) for q in traces)):
        rows = [i for i, q in enumerate(traces) if t < len(q)]
        policy = policies(len(rows))
        gens = replay_batch([traces[i][t] for i in rows], policy, costs=pair.costs, cost_model=cost_model,
                            rank_acceptance=pair.rank_acceptance)
        for i, g in zip(rows, gens):
            out[i].append(g)
    return out
