"""The live engine: one target, one optional drafter, the speculative step of ``actors/core/step.py`` over B rows.

A single generation is a batch of one row: :meth:`SpecEngine.generate` is :meth:`SpecEngine.generate_batch`
at B = 1. Each row keeps this invariant at the start of every step: the target's KV cache holds every
committed token of the row but the last. A chain step feeds every row ``[last token, its drafts…]`` in one
target forward (k = 0 is a plain target step — ``ar`` runs this same loop), accepts per row with the rules
of ``actors/core/acceptance.py`` and crops each row to what it accepted; nothing accepted is ever recomputed.
Tree steps verify every row's tree in one forward with a per-row tree mask and keep the accepted path.
Finished rows leave the batch at once.

Every target forward goes through the rows seam (``actors/runtime/row_runners.py``): one row on the pair's engine
(eager ``DynamicCache``, or the static/compiled runners of ``actors/runtime/runners.py``), a batch on the gap-masked
cache of ``actors/runtime/batch_runner.py`` (eager) or the per-row static cache of ``actors/runtime/static_batch_runner.py``
(static, compiled). EOS and ``max_new_tokens`` are honoured exactly (``actors/core/step.py``'s
``Row``), so each row's output is token-for-token what the target alone would produce (greedy) or
distributed as it (sampling: every row samples from its own generator), whatever the batch around it.
Per-row policies keep their own state; a batch-level policy (``policies/batch.py``) decides for all rows.
"""
from __future__ import annotations

from typing import Sequence

import torch

from actors.core.acceptance import accept_greedy, accept_sampling, accept_tree_greedy, accept_tree_sampling, warp
from actors.runtime.clock import device_clock
from actors.runtime.row_runners import TargetRunners
from actors.core.step import Generation, Row, chain_step, decode, tree_step
from policies.base import BatchPolicy, GenerationContext, Policy, SequencePolicy, TreePolicy
from policies.errors import SpecsweepError
from policies.fixed import TargetOnly
from policies.registry import check_generation


class LiveClock:
    """Step times from the wall clock, the device synchronized at each reading."""

    def __init__(self, clock):
        self._clock = clock
        self._t = 0.0

    def start(self) -> None:
        self._t = self._clock()

    def drafted(self, bases, proposed, levels: int) -> float:
        """Seconds since the step began."""
        t, self._t = self._t, self._clock()
        return self._t - t

    def verified(self, bases, drafted, accepted, proposed, width: int) -> float:
        """Seconds since drafting ended."""
        t, self._t = self._t, self._clock()
        return self._t - t


class TargetVerifier:
    """Every row's answer from one target forward over ``[last token, drafts…]`` per row (chains) or each row's tree;
    the forward is timed alone (``forward_time``) so the cost model can tell it from acceptance. ``sink(b, start,
    hidden)`` hands row b's target features to an EAGLE head (None: the drafter reads none)."""

    def __init__(self, runner, sampling: dict | None, generators, clock, sink=None):
        self.runner, self.sampling, self.generators, self._clock = runner, sampling, generators, clock
        self.sink = sink
        self.forward_time = 0.0

    def check(self, rows: Sequence[Row], drafts, q_rows) -> list[tuple[int, int]]:
        """(n accepted, next token) per row."""
        t = self._clock()
        feeds = []
        for r, d in zip(rows, drafts):
            feeds.append([r.tokens[-1], *d])
        logits = self.runner.forward(feeds)    # B × [k_b + 1, V]
        self.forward_time = self._clock() - t
        if self.sink is not None:
            for b, r in enumerate(rows):
                self.sink(b, len(r.tokens) - 1, self.runner.features[b])
        if self.sampling is None:
            out = []
            for lg, d in zip(logits, drafts):
                out.append(accept_greedy(lg.argmax(-1).tolist(), d))
            return out
        T, p = self.sampling["temperature"], self.sampling["top_p"]
        return [accept_sampling(warp(lg, T, p), q, d, g) for lg, q, d, g in zip(logits, q_rows, drafts, self.generators)]

    def keep(self, rows: Sequence[Row]) -> None:
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


class SpecEngine:
    """Runs generations of one target with one (optional) drafter, one row or a batch of rows.

    ``eos_token_ids``: tokens that end a generation. ``costs``: the actor's cost model, handed to policies
    through :class:`GenerationContext`. ``engine``: how the target keeps its KV cache (``actors/runtime/row_runners.py``).
    """

    def __init__(self, target, drafter=None, eos_token_ids: Sequence[int] = (), costs=None,
                 engine: str = "eager", capacity: int = 4096, max_draft: int = 24, inductor: bool | None = None,
                 pad_id: int = 0):
        self.target = target
        self.drafter = drafter
        self.eos = frozenset(int(t) for t in eos_token_ids if t is not None)
        self.costs = costs
        self.rank_acceptance = None   # per-rank acceptance for static trees (actors/costs/calibrate.py)
        self.device = target.device
        self.runners = TargetRunners(target, engine, capacity, inductor, pad_id)
        self.engine = self.runners.engine
        self.features = drafter is not None and drafter.needs_features   # an EAGLE head reads the target's features
        self.runners.keep_features = self.features
        if self.features:                    # which target layers the head reads (``actors/runtime/hf_api.py::hidden_features``)
            self.runners.feature_layers = tuple(drafter.feature_layers)
        if drafter is not None:
            drafter.use_engine(self.engine, capacity, inductor)     # the engine the target resolved to
        self.max_draft = max_draft    # the largest draft the compiled engine captures a graph for
        self._prepared = 0

    @property
    def runner(self):
        """The one-row runner of the pair's engine (``actors/runtime/runners.py``)."""
        return self.runners.one

    def prepare(self, max_draft: int | None = None) -> None:
        """Compile/capture the target for verified lengths up to ``max_draft + 1`` and the draft's one-token step.

        Runs once per actor before anything is timed (a no-op for the eager engine).
        """
        max_draft = self.max_draft if max_draft is None else max_draft
        if max_draft + 1 <= self._prepared:
            return
        self.runners.prepare(max_draft + 1)
        if self.drafter is not None:
            self.drafter.prepare()
        self._prepared = max_draft + 1

    def _clock(self) -> float:
        """``actors/runtime/clock.py``'s clock on the engine's device."""
        return device_clock(self.device)

    @torch.no_grad()
    def generate(self, prompt_ids: Sequence[int], policy: Policy, *, max_new_tokens: int = 128,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int = 0,
                 reference: Sequence[int] | None = None, max_steps: int | None = None) -> Generation:
        """Generate up to ``max_new_tokens`` after ``prompt_ids`` with ``policy``: a batch of one row. Greedy when
        ``temperature`` is 0, else sampled (temperature, top-p) from a generator seeded with ``seed``.
        ``reference``: the target-only greedy output for ``oracle`` (computed here, untimed, when not given).
        ``max_steps``: stop after this many speculative steps (the cost probe, ``actors/costs/calibrate.py``)."""
        if not prompt_ids:
            raise SpecsweepError("prompt is empty: give at least one token")
        policies = policy if isinstance(policy, BatchPolicy) else [policy]
        return self.generate_batch([prompt_ids], policies, max_new_tokens=max_new_tokens, temperature=temperature,
                                   top_p=top_p, seeds=[seed], references=[reference], max_steps=max_steps)[0]

    @torch.no_grad()
    def generate_batch(self, prompts: Sequence[Sequence[int]], policy: BatchPolicy | Sequence[Policy], *,
                       max_new_tokens: int = 128, temperature: float = 0.0, top_p: float = 1.0,
                       seeds: Sequence[int] | int = 0, references=None, max_steps: int | None = None) -> list[Generation]:
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
            raise SpecsweepError("a batch runs one kind of policy: chain policies, tree policies or a batch policy "
                                 f"(policies/base.py), not {policies[0]!r}")
        drafting = any(p.needs_draft for p in policies)
        if drafting and self.drafter is None:
            raise SpecsweepError(f"policy {(batch_policy or policies[0]).name} needs a draft: pass --draft MODEL "
                                 "or --draft ngram")
        if trees and not self.drafter.supports_trees:
            raise SpecsweepError(f"tree policy {policies[0].name} needs a draft model or an EAGLE head (not "
                                 f"{self.drafter.name})")
        greedy = temperature == 0
        sampling = None if greedy else {"temperature": float(temperature), "top_p": float(top_p)}
        B = len(prompts)
        seeds = [int(seeds) + i for i in range(B)] if isinstance(seeds, int) else [int(s) for s in seeds]
        gens = None if greedy else [torch.Generator(device=self.device).manual_seed(s) for s in seeds]
        references = list(references) if references is not None else [None] * B
        ctxs = []
        for p, prompt, ref in zip(policies, prompts, references):
            if p.needs_reference:
                if not greedy:
                    raise SpecsweepError(f"policy {p.name} is defined for greedy decoding only (temperature 0)")
                ref = self.reference(prompt, max_new_tokens) if ref is None else ref
            ctxs.append(GenerationContext(costs=self.costs, reference=ref, greedy=greedy,
                                          rank_acceptance=self.rank_acceptance))
            p.reset(ctxs[-1])
        if batch_policy is not None:
            batch_policy.reset(GenerationContext(costs=self.costs, greedy=greedy))
        self.prepare()
        runner = self.runners.for_rows(B, tree=trees)
        rows = [Row(tokens=[int(t) for t in p], budget=max_new_tokens, eos=self.eos) for p in prompts]
        return self._decode(rows, policies, ctxs, batch_policy, runner, sampling, gens, trees, drafting, max_steps)

    def _decode(self, rows, policies, ctxs, batch_policy, runner, sampling, gens, trees, drafting, max_steps):
        """Prefill every row, then run steps until every row is done (``actors/core/step.py``'s ``decode``)."""
        live_gens = list(gens) if gens is not None else None    # the running rows' generators, edited in place
        row_drafters = []                                         # trees: one tree drafter per row
        if trees:
            row_drafters = [self.drafter] if len(rows) == 1 else [self.drafter.twin() for _ in rows]
            for i, d in enumerate(row_drafters):
                d.reset(1, sampling, [gens[i]] if gens is not None else None, self.eos, tree=True)
        elif drafting:
            self.drafter.reset(len(rows), sampling, live_gens, self.eos)
        sink = None
        if drafting and self.features:       # an EAGLE head: each row's target features
            sink = (lambda b, start, h: row_drafters[b].see_features(0, start, h)) if trees else self.drafter.see_features
        t_start = self._clock()
        if any(len(r.tokens) > 1 for r in rows):
            runner.forward([r.tokens[:-1] for r in rows], logits=False)
            if sink is not None:
                for b, r in enumerate(rows):
                    if len(r.tokens) > 1:
                        sink(b, 0, runner.features[b])
            prefill = self._clock() - t_start
            for r in rows:
                r.out.prefill_time = prefill              # every row waited for it (its wall time includes it)
                r.out.prefilled = len(r.tokens) > 1
        verifier = TargetVerifier(runner, sampling, live_gens, self._clock, sink)
        clock = LiveClock(self._clock)
        sampled = sampling is not None

        if trees:
            def step(batch_rows, batch_policies):
                """One tree step of the rows still running."""
                return tree_step(batch_rows, batch_policies, row_drafters, verifier, clock)
        else:
            drafter = self.drafter

            def step(batch_rows, batch_policies):
                """One chain step of the rows still running."""
                return chain_step(batch_rows, batch_policies, drafter, verifier, clock, batch_policy, sampled)

        def leave(kept):
            """Finished rows leave the caches and the generator list."""
            runner.keep_rows(kept)
            row_drafters[:] = [row_drafters[j] for j in kept] if trees else []
            if drafting and not trees:
                self.drafter.keep_rows(kept)
            if live_gens is not None:
                live_gens[:] = [live_gens[j] for j in kept]

        def done(i):
            """Row i's latency ends now."""
            rows[i].out.wall_time = self._clock() - t_start

        decode(rows, policies, ctxs, step, leave, done, batch_policy, max_steps)
        if self.drafter is not None and max_steps is None:   # responses (not probes) are learnt, in row order
            for r in rows:
                self.drafter.finished(r.out.token_ids)
        return [r.out for r in rows]

    @torch.no_grad()
    def reference(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        """The target-only greedy continuation (what ``oracle`` knows in advance)."""
        return SpecEngine(self.target, None, self.eos).generate(prompt_ids, TargetOnly(),
                                                               max_new_tokens=max_new_tokens).token_ids
