"""Replay inside a PairActor: one traced ``ar`` run per question, every replayable config from it.

A sweep in ``mode: replay`` (or ``both``) runs, per task (question × block of configs):

1. ``ar`` live and timed, as always, and along each of its turns the draft's rollouts
   (:func:`actors.rollouts.record_pair_trace`; the rollouts are outside the ``ar`` timing);
2. each replayable config by :func:`actors.replay.replay` on those traces — token ids,
   accept lengths, (k_max, drafted, accepted) per step exactly as a live run under greedy
   decoding; ``wall_time`` = the ``ar`` turn's measured prefill + the actor's cost model's
   predicted steps (:mod:`policies.cost_fit`);
3. the configs chosen for live validation (and those that cannot be replayed) live.

The actor has one cost model (``actors/calibrate.py``), measured when it starts on the engine's
step path; in a replay sweep it is fitted on the probe's runs together with live generations of
the warm-up question's first turn (:func:`fit_runs`: ``ar`` and ``fixed`` at every γ of
:data:`FIT_GAMMAS`, the paper's grid, so the verify table has a knot at each verified length up
to 25, under the sweep's ``max_new_tokens``). Policies and replay's clock read the same model.
"""
from __future__ import annotations

from typing import Sequence

from actors.conversation import run_question
from actors.replay import replay
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


def traced_ar(pair, user_turns: Sequence[str], *, template: str, max_new_tokens: int,
              rollout_length: int | None, key: str, meta: dict) -> tuple[list, list[Trace]]:
    """The ``ar`` turns of one question (timed as usual) and one trace per turn.

    ``meta``: facts stored with every trace (question id, category); the turn index is added.
    """
    traces: list[Trace] = []

    def record(t: int, ids: list, generation) -> None:
        trace = record_pair_trace(pair, ids, max_new_tokens=max_new_tokens, max_draft=rollout_length,
                                  key=f"{key}|t{t}", ar=generation)
        trace.meta.update(meta, turn=t)
        traces.append(trace)

    turns = run_question(pair, user_turns, TargetOnly(), template=template, max_new_tokens=max_new_tokens,
                         after_turn=record)
    return turns, traces


def replay_turns(pair, traces: Sequence[Trace], policy, cost_model: CostModel | None) -> list:
    """One replayed :class:`~actors.step.Generation` per traced turn, the policy's state carried across turns
    as a live conversation carries it."""
    return [replay(t, policy, costs=pair.costs, cost_model=cost_model,
                   rank_acceptance=pair.rank_acceptance) for t in traces]

