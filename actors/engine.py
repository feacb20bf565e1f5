"""The speculative decoding loop: draft → verify → accept.

Invariant at the start of every step: the target's KV cache holds every token but
the last one. A step feeds ``[last token, x_1 … x_k]`` to the target in one forward
(k = 0 is a plain target step — ``ar`` runs this same loop), accepts n of the k
drafts (``actors/acceptance.py``), appends n + 1 tokens, and crops both caches to
the accepted prefix; nothing accepted is ever recomputed.

EOS and ``max_new_tokens`` are honoured exactly: the engine never drafts past the
remaining budget, and emitted tokens are cut after the first EOS, so the output is
token-for-token what the target alone would produce (greedy) or distributed as it
(sampling).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import torch

from actors.acceptance import accept_greedy, accept_sampling, warp
from actors.drafters import Drafter, Proposal
from actors.runners import EagerRunner, make_runner
from actors.tree_step import keep_positions, verify_tree
from policies.base import GenerationContext, Policy, SequencePolicy, Step, TreePolicy
from policies.errors import SpecsweepError


@dataclass
class Generation:
    """One turn's output and record. Times in seconds; ``wall_time`` includes prefill."""

    token_ids: list[int]
    steps: list[Step] = field(default_factory=list)
    wall_time: float = 0.0
    prefill_time: float = 0.0
    finished_by_eos: bool = False

    @property
    def new_tokens(self) -> int:
        """Tokens generated."""
        return len(self.token_ids)

    @property
    def decoding_steps(self) -> int:
        """Target forwards after prefill (Spec-Bench's decoding steps)."""
        return len(self.steps)

    @property
    def target_calls(self) -> int:
        """Target forwards, prefill included."""
        return len(self.steps) + (1 if self.prefill_time > 0 else 0)

    @property
    def accept_lengths(self) -> list[int]:
        """Tokens emitted per target forward, bonus included (Spec-Bench's accept_lengths)."""
        return [s.emitted for s in self.steps]

    @property
    def drafted(self) -> list[int]:
        """Draft tokens verified per step (trees: nodes)."""
        return [s.drafted for s in self.steps]

    @property
    def accepted(self) -> list[int]:
        """Draft tokens accepted per step."""
        return [s.accepted for s in self.steps]

    @property
    def k_max(self) -> list[int]:
        """The per-step draft cap the policy chose (tree steps: the tree's depth)."""
        return [s.k_max for s in self.steps]


def emit(new: list[int], tokens: list[int], out: Generation, remaining: int, eos: frozenset) -> list[int]:
    """Append a step's tokens, cut after the first EOS and at ``max_new_tokens`` (shared with replay)."""
    for j, t in enumerate(new):
        if t in eos:
            new = new[: j + 1]
            out.finished_by_eos = True
            break
    new = new[:remaining]
    tokens += new
    out.token_ids += new
    return new


class SpecEngine:
    """Runs generations of one target with one (optional) drafter.

    ``eos_token_ids``: tokens that end a generation. ``costs``: the actor's cost curve,
    handed to policies through :class:`GenerationContext`.
    """

    def __init__(self, target, drafter: Drafter | None = None, eos_token_ids: Sequence[int] = (), costs=None,
                 engine: str = "eager", capacity: int = 4096, max_draft: int = 24, inductor: bool | None = None):
        self.target = target
        self.drafter = drafter
        self.eos = frozenset(int(t) for t in eos_token_ids if t is not None)
        self.costs = costs
        self.rank_acceptance = None   # per-rank acceptance for static trees (actors/calibrate.py)
        self.device = target.device
        self._cuda = self.device.type == "cuda"
        self.runner = make_runner(target, engine, capacity, inductor)
        self.engine = self.runner.engine
        self._eager_runner = self.runner if isinstance(self.runner, EagerRunner) else None
        if drafter is not None:
            drafter.use_engine(engine, capacity, inductor)
        self.max_draft = max_draft    # the largest draft the compiled engine captures a graph for
        self._prepared = 0

    def prepare(self, max_draft: int | None = None) -> None:
        """Compile/capture the target for verified lengths up to ``max_draft + 1`` and the draft's one-token step.

        Runs once per actor before anything is timed (a no-op for the eager engine).
        """
        max_draft = self.max_draft if max_draft is None else max_draft
        if max_draft + 1 <= self._prepared:
            return
        self.runner.prepare(max_draft + 1)
        if self.drafter is not None:
            self.drafter.prepare()
        self._prepared = max_draft + 1

    def _sync(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.device)

    def _clock(self) -> float:
        self._sync()
        return time.perf_counter()

    @torch.no_grad()
    def generate(self, prompt_ids: Sequence[int], policy: Policy, *, max_new_tokens: int = 128,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int = 0,
                 reference: Sequence[int] | None = None) -> Generation:
        """Generate up to ``max_new_tokens`` after ``prompt_ids`` with ``policy``; greedy when ``temperature`` is 0,
        else sampled (temperature, top-p) from a generator seeded with ``seed``. ``reference``: the target-only
        greedy output for ``oracle`` (computed here, untimed, when not given)."""
        if not prompt_ids:
            raise SpecsweepError("prompt is empty: give at least one token")
        if max_new_tokens < 1:
            raise SpecsweepError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if temperature < 0:
            raise SpecsweepError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
        if not (0 < top_p <= 1):
            raise SpecsweepError(f"top_p must be in (0, 1], got {top_p}")
        if policy.needs_draft and self.drafter is None:
            raise SpecsweepError(f"policy {policy.name} needs a draft: pass --draft MODEL or --draft ngram")
        greedy = temperature == 0
        sampling = None if greedy else {"temperature": float(temperature), "top_p": float(top_p)}
        if not isinstance(policy, (SequencePolicy, TreePolicy)):
            raise SpecsweepError(f"{policy!r} is neither a SequencePolicy nor a TreePolicy (policies/base.py)")
        if policy.needs_reference:
            if not greedy:
                raise SpecsweepError(f"policy {policy.name} is defined for greedy decoding only (temperature 0)")
            if reference is None:
                reference = self.reference(prompt_ids, max_new_tokens)
        gen = torch.Generator(device=self.device).manual_seed(int(seed)) if not greedy else None
        ctx = GenerationContext(costs=self.costs, reference=reference, greedy=greedy,
                                rank_acceptance=self.rank_acceptance)
        policy.reset(ctx)

        is_tree = isinstance(policy, TreePolicy)
        if is_tree and not greedy and policy.dynamic:
            raise SpecsweepError(f"dynamic tree policy {policy.name} is greedy-only: its node selection depends on "
                                 "the sampled drafts; use sequoia or gt-static for sampling")
        if is_tree and not self.drafter.supports_trees:
            raise SpecsweepError(f"tree policy {policy.name} needs a draft model (not {self.drafter.name})")
        self.prepare()
        runner = self._runner_for(is_tree)

        tokens = list(int(t) for t in prompt_ids)
        out = Generation(token_ids=[])
        runner.reset()
        t_start = self._clock()
        if len(tokens) > 1:
            runner.forward(tokens[:-1], last_only=True)
            out.prefill_time = self._clock() - t_start
        if self.drafter is not None and policy.needs_draft:
            self.drafter.reset(sampling, gen, self.eos, tree=is_tree)

        while len(out.token_ids) < max_new_tokens and not out.finished_by_eos:
            ctx.generated = len(out.token_ids)
            remaining = max_new_tokens - len(out.token_ids)
            if is_tree:
                step = self._tree_step(tokens, out, runner.cache, policy, remaining, sampling, gen)
                out.steps.append(step)
                policy.update(step)
                continue
            k_max = int(policy.max_draft())
            if k_max < 0:
                raise RuntimeError(f"policy {policy!r} asked for {k_max} drafts; must be >= 0")
            cap = min(k_max, remaining - 1) if policy.needs_draft else 0
            t0 = self._clock()
            prop = self.drafter.propose(tokens, cap, policy.after_draft) if cap > 0 else Proposal()
            t1 = self._clock()
            k = len(prop.tokens)
            logits = runner.forward([tokens[-1], *prop.tokens])     # [k + 1, vocab]
            if greedy:
                n, nxt = accept_greedy(logits.argmax(-1).tolist(), prop.tokens)
            else:
                n, nxt = accept_sampling(warp(logits, temperature, top_p), prop.q_rows, prop.tokens, gen)
            base = len(tokens)
            new = self._emit(prop.tokens[:n] + [nxt], tokens, out, remaining)
            runner.rollback(len(tokens) - 1)
            if k:
                self.drafter.rollback(base + n)
            t2 = self._clock()
            step = Step(k_max=k_max, drafted=k, accepted=n, emitted=len(new), q_tokens=prop.q_tokens,
                        q_max=prop.q_max, entropy=prop.entropy, draft_time=t1 - t0, verify_time=t2 - t1,
                        proposed=prop.proposed)
            out.steps.append(step)
            policy.update(step)
        out.wall_time = self._clock() - t_start
        return out

    def _runner_for(self, is_tree: bool):
        """Tree steps edit a DynamicCache in place (``actors/tree_step.py``): they always run eagerly."""
        if not is_tree:
            return self.runner
        if self._eager_runner is None:
            self._eager_runner = EagerRunner(self.target)
        return self._eager_runner

    def _emit(self, new: list[int], tokens: list[int], out: Generation, remaining: int) -> list[int]:
        return emit(new, tokens, out, remaining, self.eos)

    def _tree_step(self, tokens, out, cache, policy, remaining, sampling, gen) -> Step:
        """Draft a tree, verify it in one target forward, keep the accepted path (``actors/tree_step.py``)."""
        t0 = self._clock()
        tree = self.drafter.propose_tree(tokens, policy, remaining - 1)
        t1 = self._clock()
        path, nxt = verify_tree(self.target, cache, tokens, tree, sampling, gen)
        base = len(tokens)
        new = self._emit([tree.tokens[i] for i in path] + [nxt], tokens, out, remaining)
        keep_positions(cache, list(range(base)) + [base + i for i in path])          # root + accepted path
        self.drafter.keep_tree_path(base, tree, path)
        t2 = self._clock()
        depth = max(tree.depths, default=0)
        return Step(k_max=depth, drafted=len(tree), accepted=len(path), emitted=len(new),
                    q_tokens=[tree.cum[i] for i in path], draft_time=t1 - t0, verify_time=t2 - t1,
                    tree_nodes=len(tree), tree_depth=depth)

    @torch.no_grad()
    def reference(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        """The target-only greedy continuation (what ``oracle`` knows in advance)."""
        from policies.fixed import TargetOnly

        return SpecEngine(self.target, None, self.eos).generate(prompt_ids, TargetOnly(),
                                                               max_new_tokens=max_new_tokens).token_ids
