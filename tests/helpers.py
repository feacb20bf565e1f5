"""Helpers shared by several test modules (not a test module itself)."""
from __future__ import annotations

import contextlib
import io
import socket

import torch

from actors.loading.tiny_pair import llama, perturbed, sharpen
from actors.tracing.oracle_bound import SchedulePolicy, ScheduleExhausted
from actors.tracing.replay import replay
from policies import GenerationContext, Step
from policies.errors import SpecsweepError
from policies.costs import CostModel

def free_ports(n: int = 1) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1: every socket stays bound until all are chosen, so the kernel
    cannot hand the same port out twice (two one-at-a-time picks can collide)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


# ---------------------------------------------------------------- a pair whose draft is often rejected
PROMPT = [1, 2, 3, 1, 2]


def sampling_pair(arch=llama, vocab=5):
    """A 1-layer target over ``vocab`` tokens and a draft peaked where the target is not: many rejections."""
    target = sharpen(arch(vocab=vocab, layers=1, hidden=16, seed=11), 2.0)
    return target, sharpen(perturbed(target, 1.0, seed=12), 3.0)


# ---------------------------------------------------------------- scripted policy runs
COSTS = CostModel.measured(t_draft=0.01, t_verify={1: 0.1, 2: 0.1, 4: 0.1, 8: 0.12, 16: 0.2})


def ctx(**kw):
    return GenerationContext(costs=COSTS, **kw)


def out(k, n, q=None, k_max=None):
    return Step(k_max=k if k_max is None else k_max, drafted=k, accepted=n, emitted=n + 1, q_tokens=q or [0.9] * k,
                draft_time=0.01 * k, verify_time=0.1)


def run(policy, outcomes, context=None):
    """k_max before each scripted outcome, then after the last."""
    policy.reset(context or ctx())
    seen = []
    for o in outcomes:
        seen.append(policy.max_draft())
        policy.update(o)
    seen.append(policy.max_draft())
    return seen


# ---------------------------------------------------------------- result rows
def row(policy, spec, gamma, qid, cat, turn, new, wall, al, acc=None, dr=None):
    return {"pair": "p", "policy": policy, "policy_spec": spec, "gamma": gamma, "repeat": 0, "question_id": qid,
            "category": cat, "turn": turn, "new_tokens": new, "wall_time": wall, "accept_lengths": al,
            "accepted": acc or [a - 1 for a in al], "drafted": dr or [0 if policy == "ar" else 3] * len(al), "status": "ok"}


def q_rows(policy, gamma, tok_s, al=None, timing="", pair="p", task=None):
    """One single-turn question per entry of ``tok_s`` (question ids 1, 2, …), 10 tokens each."""
    out = []
    for qid, r in enumerate(tok_s, 1):
        d = row(policy, policy, gamma, qid, "qa", 0, 10, 10 / r, (al or {}).get(qid, [1] * 10))
        out.append({**d, "pair": pair, "ar_timing": timing, "task_key": task or f"{pair}|{qid}"})
    return out


def brute_force(trace, model, options, prefix=()) -> list[tuple[float, list]]:
    """(replayed wall time, plan) of every plan that starts with ``prefix`` and finishes the turn, found by extending
    plans by each of ``options`` until done."""
    done, stack = [], [list(prefix)]
    while stack:
        plan = stack.pop()
        try:
            g = replay(trace, SchedulePolicy(plan), cost_model=model)
        except ScheduleExhausted:
            stack += [plan + [o] for o in options]
            continue
        except SpecsweepError:       # asked the trace for more proposals than it recorded: not a schedule
            continue
        done.append((g.wall_time, plan))
    return done


def run_cli(*args) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``jobs.cli.main`` run in this process."""
    from jobs.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


class NoStaticLM(torch.nn.Module):
    """A causal LM whose forward refuses the static cache's arguments (``cache_position``, ``position_ids``)."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.config = inner, inner.config

    @property
    def device(self):
        return self.inner.device

    def forward(self, input_ids, use_cache=True, logits_to_keep=0, **kw):
        from actors.runtime.hf_api import CACHE_ARG, cache_arg

        cache = kw.pop(CACHE_ARG, None)
        if kw:
            raise TypeError(f"unexpected arguments {sorted(kw)}")
        return self.inner(input_ids=input_ids, **cache_arg(cache), use_cache=use_cache, logits_to_keep=logits_to_keep)
