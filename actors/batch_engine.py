"""The batched engine: B prompts decoded together, one target forward and one draft forward per level each step.

Each row keeps the live engine's invariant (``actors/engine.py``): the target's cache holds every
committed token of the row but the last. A step feeds every row ``[last token, its drafts…]``
in one forward (rows padded to the longest, ``actors/batch_runner.py``), accepts per row with the
rules of ``actors/acceptance.py`` and crops each row to what it accepted. Finished rows leave the
batch at once. Each row's greedy output is its target-only output and each row's samples follow
the target's distribution (every row samples from its own generator), whatever the batch around it.

Per-row policies keep their own state; a batch-level policy (``policies/batch.py``) decides for
all rows. Trees: each row's own drafter grows its tree, one target forward verifies every row's
tree with a per-row tree mask (``BatchRunner.forward_tree``). An EAGLE head (``actors/batch_eagle.py``;
each row's own head for trees) is handed every row's target features from the forwards above.
"""
from __future__ import annotations

import time
from typing import Sequence

import torch

from actors.acceptance import accept_greedy, accept_sampling, accept_tree_greedy, accept_tree_sampling, warp
from actors.batch_drafters import BatchModelDrafter, BatchNgramDrafter
from actors.batch_eagle import BatchEagleDrafter
from actors.batch_runner import BatchRunner
from actors.drafters import ModelDrafter, NgramDrafter
from actors.eagle_drafter import EagleDrafter
from actors.engine import LiveClock, SpecEngine
from actors.step import Generation, Row, batch_chain_step, batch_tree_step, decode_batch
from policies.base import BatchPolicy, GenerationContext, Policy, SequencePolicy, TreePolicy
from policies.errors import SpecsweepError
from policies.registry import check_generation


class BatchVerifier:
    """Every row's answer from one target forward over ``[last token, drafts…]`` per row. ``sink(b, start, hidden)``
    hands row b's target features to an EAGLE head (None: the drafter reads none)."""

    def __init__(self, runner: BatchRunner, sampling: dict | None, generators, clock, sink=None):
        self.runner, self.sampling, self.generators, self._clock = runner, sampling, generators, clock
        self.sink = sink
        self.forward_time = 0.0

    def check_batch(self, rows: Sequence[Row], drafts, q_rows) -> list[tuple[int, int]]:
        """(n accepted, next token) per row."""
        t = self._clock()
        logits = self.runner.forward([[r.tokens[-1], *d] for r, d in zip(rows, drafts)])    # B × [k_b + 1, V]
        self.forward_time = self._clock() - t
        if self.sink is not None:
            for b, r in enumerate(rows):
                self.sink(b, len(r.tokens) - 1, self.runner.features[b])
        if self.sampling is None:
            return [accept_greedy(lg.argmax(-1).tolist(), d) for lg, d in zip(logits, drafts)]
        T, p = self.sampling["temperature"], self.sampling["top_p"]
        return [accept_sampling(warp(lg, T, p), q, d, g) for lg, q, d, g in zip(logits, q_rows, drafts, self.generators)]

    def keep_batch(self, rows: Sequence[Row]) -> None:
        """Each row's cache keeps its committed tokens but the last."""
        for b, r in enumerate(rows):
            self.runner.rollback(b, len(r.tokens) - 1)

    def check_trees(self, rows: Sequence[Row], trees) -> list[tuple[list[int], int]]:
        """(accepted path, next token) per row, every row's tree verified in one target forward."""
        t = self._clock()
        logits = self.runner.forward_tree([[r.tokens[-1], *tr.tokens] for r, tr in zip(rows, trees)],
                                          [[-1] + [p + 1 for p in tr.parents] for tr in trees])
        self.forward_time = self._clock() - t
        self._bases = [len(r.tokens) for r in rows]
        if self.sampling is None:
            return [accept_tree_greedy(lg.argmax(-1).tolist(), tr.tokens, tr.children) for lg, tr in zip(logits, trees)]
        T, p = self.sampling["temperature"], self.sampling["top_p"]
        return [accept_tree_sampling(warp(lg, T, p), tr.tokens, tr.children, tr.q_rows, g)
                for lg, tr, g in zip(logits, trees, self.generators)]

    def keep_tree(self, b: int, row: Row, path: Sequence[int]) -> None:
        """Row b keeps its root and accepted path; its cache then holds its committed tokens but the last."""
        keep = [0] + [1 + i for i in path]
        self.runner.keep_fed(b, keep, len(row.tokens) - 1)
        if self.sink is not None:
            self.sink(b, self._bases[b] - 1, self.runner.features[b][keep])


def batch_drafter_for(drafter):
    """The batch form of a single-row drafter (``actors/drafters.py``); one line naming what cannot batch."""
    if drafter is None:
        return None
    if isinstance(drafter, NgramDrafter):
        return BatchNgramDrafter(drafter.n_max, drafter.n_min)
    if isinstance(drafter, ModelDrafter):
        return BatchModelDrafter(drafter.model)
    if isinstance(drafter, EagleDrafter):
        return BatchEagleDrafter(drafter)
    raise SpecsweepError(f"the {drafter.name} drafter runs at batch size 1 only; batches draft with a draft model, "
                         "an EAGLE head or ngram")


class BatchEngine:
    """Decodes a batch of prompts with one target and one optional drafter (module docstring)."""

    def __init__(self, target, drafter=None, eos_token_ids: Sequence[int] = (), costs=None, pad_id: int = 0):
        self.target, self.single_drafter = target, drafter
        try:
            self.drafter, self._no_batch_drafter = batch_drafter_for(drafter), None
        except SpecsweepError as e:          # refused when a policy drafts, not when ``ar`` runs
            self.drafter, self._no_batch_drafter = None, e
        self.eos = frozenset(int(t) for t in eos_token_ids if t is not None)
        self.costs = costs
        self.device = target.device
        self.runner = BatchRunner(target, pad_id)
        self.runner.keep_features = drafter is not None and drafter.needs_features
        self.rank_acceptance = None   # per-rank acceptance for static trees with accept=auto (actors/calibrate.py)

    @classmethod
    def like(cls, engine: SpecEngine) -> "BatchEngine":
        """The batch engine of a single-row engine's pair (same target, drafter, stop ids and costs)."""
        batch = cls(engine.target, engine.drafter, tuple(engine.eos), engine.costs)
        batch.rank_acceptance = engine.rank_acceptance
        return batch

    def _clock(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    @torch.no_grad()
    def generate_batch(self, prompts: Sequence[Sequence[int]], policy: BatchPolicy | Sequence[Policy], *,
                       max_new_tokens: int = 128, temperature: float = 0.0, top_p: float = 1.0,
                       seeds: Sequence[int] | int = 0) -> list[Generation]:
        """One :class:`Generation` per prompt, in order. ``policy``: a batch-level policy, or one per-row policy
        per prompt (fresh instances). Row i samples from a generator seeded with ``seeds[i]`` (an int s gives
        s + i). ``wall_time`` of a row runs from the batch's start to the row's last token."""
        if not prompts or any(len(p) == 0 for p in prompts):
            raise SpecsweepError("every prompt of a batch needs at least one token")
        check_generation({"max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p})
        batch_policy = policy if isinstance(policy, BatchPolicy) else None
        policies = [batch_policy.row_policy() for _ in prompts] if batch_policy else list(policy)
        if len(policies) != len(prompts):
            raise SpecsweepError(f"{len(policies)} policies for {len(prompts)} prompts: give one per prompt")
        trees = all(isinstance(p, TreePolicy) for p in policies)
        if not trees and not all(isinstance(p, SequencePolicy) for p in policies):
            raise SpecsweepError("a batch runs one kind of policy: chain policies, tree policies or a batch policy")
        if trees and not (self.single_drafter is not None and self.single_drafter.supports_trees):
            raise SpecsweepError(f"tree policy {policies[0].name} in a batch needs a draft model or an EAGLE head (not "
                                 f"{self.single_drafter.name if self.single_drafter is not None else 'none'})")
        if trees and temperature != 0 and any(p.dynamic for p in policies):
            raise SpecsweepError(f"dynamic tree policy {policies[0].name} is greedy-only: use sequoia or gt-static for "
                                 "sampling")
        drafting = any(p.needs_draft for p in policies)
        if drafting and self._no_batch_drafter is not None:
            raise self._no_batch_drafter
        if drafting and self.drafter is None:
            raise SpecsweepError(f"policy {(batch_policy or policies[0]).name} needs a draft: pass --draft MODEL "
                                 "or --draft ngram")
        greedy = temperature == 0
        sampling = None if greedy else {"temperature": float(temperature), "top_p": float(top_p)}
        seeds = [int(seeds) + i for i in range(len(prompts))] if isinstance(seeds, int) else [int(s) for s in seeds]
        gens = None if greedy else [torch.Generator(device=self.device).manual_seed(s) for s in seeds]
        single = SpecEngine(self.target, None, tuple(self.eos))
        ctxs = []
        for p, prompt in zip(policies, prompts):
            ref = None
            if p.needs_reference:
                if not greedy:
                    raise SpecsweepError(f"policy {p.name} is defined for greedy decoding only (temperature 0)")
                ref = single.reference(prompt, max_new_tokens)
            ctxs.append(GenerationContext(costs=self.costs, reference=ref, greedy=greedy,
                                          rank_acceptance=self.rank_acceptance))
            p.reset(ctxs[-1])
        if batch_policy is not None:
            batch_policy.reset(GenerationContext(costs=self.costs, greedy=greedy))

        rows = [Row(tokens=[int(t) for t in p], budget=max_new_tokens, eos=self.eos) for p in prompts]
        self.runner.reset(len(rows))
        live_gens = list(gens) if gens is not None else None    # the running rows' generators, edited in place
        row_drafters = []                                         # trees: one single-row tree drafter per row
        if trees:
            for i in range(len(rows)):
                d = self.single_drafter.twin()
                d.reset(sampling, gens[i] if gens is not None else None, self.eos, tree=True)
                row_drafters.append(d)
        elif drafting:
            self.drafter.reset(len(rows), sampling, live_gens, self.eos)
        sink = None
        if drafting and self.runner.keep_features:       # an EAGLE head: each row's target features
            sink = (lambda b, start, h: row_drafters[b].see_features(start, h)) if trees else self.drafter.see_features
        t_start = self._clock()
        self.runner.forward([r.tokens[:-1] for r in rows], logits=False)
        if sink is not None:
            for b, r in enumerate(rows):
                if len(r.tokens) > 1:
                    sink(b, 0, self.runner.features[b])
        prefill = self._clock() - t_start
        for r in rows:
            r.out.prefill_time = prefill
        verifier = BatchVerifier(self.runner, sampling, live_gens, self._clock, sink)
        clock = LiveClock(self._clock)

        def step(batch_rows, batch_policies):
            """One batch step of the rows still running."""
            if trees:
                return batch_tree_step(batch_rows, batch_policies, row_drafters, verifier, clock)
            return batch_chain_step(batch_rows, batch_policies, self.drafter, verifier, clock, batch_policy,
                                    sampled=not greedy)

        def leave(kept):
            """Finished rows leave the caches and the generator list."""
            self.runner.keep_rows(kept)
            row_drafters[:] = [row_drafters[j] for j in kept] if trees else []
            if drafting and not trees:
                self.drafter.keep_rows(kept)
            if live_gens is not None:
                live_gens[:] = [live_gens[j] for j in kept]

        def done(i):
            """Row i's latency ends now."""
            rows[i].out.wall_time = self._clock() - t_start

        decode_batch(rows, policies, ctxs, step, leave, done, batch_policy)
        return [r.out for r in rows]
