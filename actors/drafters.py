"""Drafters propose tokens; the policy decides how many (see ``policies/base.py``).

``ModelDrafter`` runs any HF causal LM that shares the target's tokenizer, keeping
its own KV cache: each call feeds only what the draft has not seen yet, and
``rollback`` crops it to the accepted prefix, so accepted tokens are never
recomputed. ``NgramDrafter`` is model-free prompt lookup: it proposes the
continuation of the most recent earlier occurrence of the last n tokens of
prompt + output (longest n first, ``n_max`` down to ``n_min``); its q is a point
mass on each proposal.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from actors.acceptance import warp
from actors.runners import EagerRunner
from policies.base import DISCARD, MORE, STOP


@dataclass
class Proposal:
    tokens: list[int] = field(default_factory=list)        # to verify
    q_rows: list = field(default_factory=list)             # draft distribution per token (None = point mass)
    q_tokens: list[float] = field(default_factory=list)    # q(x_i) per token
    q_max: list[float] = field(default_factory=list)       # max q at each token's position
    entropy: list[float] = field(default_factory=list)     # H(q) in nats at each token's position
    proposed: int = 0                                      # proposals made, a discarded one included


class Drafter:
    name = "drafter"
    model = None

    def reset(self) -> None:
        pass

    def propose(self, tokens: Sequence[int], k_max: int, ask: Callable, sampling: dict | None,
                generator: torch.Generator | None, stop_ids: frozenset) -> Proposal:
        raise NotImplementedError

    def rollback(self, valid: int) -> None:
        pass


def _decide(ask, prop: Proposal, token: int, q_tok: float, q_max: float, q_row, k_max: int, stop_ids,
            sampled: bool = False, entropy: float = 0.0) -> bool:
    """Record proposal i and ask the policy; True = keep drafting.

    A DISCARD is honoured only for deterministic proposals (greedy or n-gram). A
    *sampled* draft token cannot be dropped because of its own probability: the
    emitted distribution at that position would then depend on q(x_i) and stop being
    p (rejection sampling sums over every x_i). Under sampling it is verified (STOP).
    """
    prop.proposed += 1
    verdict = ask(prop.proposed, token, q_tok, q_max, entropy)
    if verdict == DISCARD and sampled:
        verdict = STOP
    if verdict == DISCARD:
        return False
    prop.tokens.append(token)
    prop.q_rows.append(q_row)
    prop.q_tokens.append(q_tok)
    prop.q_max.append(q_max)
    prop.entropy.append(entropy)
    if verdict == STOP or len(prop.tokens) >= k_max or token in stop_ids:
        return False
    if verdict != MORE:
        raise ValueError(f"policy answered {verdict!r} after a draft; expected more, stop or discard")
    return True


def pick_draft_token(logits: torch.Tensor, sampling: dict | None, generator: torch.Generator | None):
    """Choose the draft token from ``logits`` [vocab] and read (x, q(x), max q, H(q)) with one host sync.

    Greedy: x = argmax, q = softmax(logits). Sampling: q = the warped distribution
    (temperature, top-p) and x ~ q. H(q) is the natural-log entropy. Returns
    ``(x, q(x), max q, H(q), q_row)``, ``q_row`` the distribution when sampled (None when greedy).
    """
    if sampling is None:
        probs = torch.softmax(logits.float(), -1)
        token = probs.argmax()
        q_row = None
    else:
        probs = warp(logits, sampling["temperature"], sampling["top_p"])
        token = torch.multinomial(probs, 1, generator=generator)[0]
        q_row = probs
    x, q_tok, q_max, ent = _stats(probs, token).tolist()
    return int(x), q_tok, q_max, ent, q_row


def _stats(probs: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
    """[x, q(x), max q, H(q)] as one float64 tensor on the device (H in nats)."""
    h = -(probs * torch.log(probs.clamp_min(1e-30))).sum()
    return torch.stack([token.double(), probs[token].double(), probs.max().double(), h.double()])


def token_stats(probs: torch.Tensor, token: int) -> tuple[float, float, float]:
    """(q(x), max q, H(q)) of distribution ``probs`` [vocab] for a given token, one host sync."""
    _, q_tok, q_max, ent = _stats(probs.float(), torch.tensor(token, device=probs.device)).tolist()
    return q_tok, q_max, ent


class ModelDrafter(Drafter):
    """A draft LM behind a runner (``actors/runners.py``): feeds only what its cache lacks, one token per proposal."""

    name = "model"

    def __init__(self, model, runner=None):
        self.model = model
        self.device = model.device
        self.runner = runner if runner is not None else EagerRunner(model)
        self._main = self.runner

    def use_eager(self, eager: bool) -> None:
        """Tree steps edit a DynamicCache directly: switch to an eager runner for them."""
        if not eager:
            self.runner = self._main
        elif not isinstance(self.runner, EagerRunner):
            self._eager = getattr(self, "_eager", None) or EagerRunner(self.model)
            self.runner = self._eager

    @property
    def cache(self):
        return self.runner.cache

    def prepare(self) -> None:
        self.runner.prepare(2)     # a step feeds the draft one token, or two after a fully accepted draft

    def reset(self) -> None:
        self.runner.reset()

    @torch.no_grad()
    def propose(self, tokens, k_max, ask, sampling, generator, stop_ids) -> Proposal:
        prop = Proposal()
        feed = list(tokens[self.runner.length:])
        while True:
            logits = self.runner.forward(feed, last_only=True)[-1]
            token, q_tok, q_max, h, q_row = pick_draft_token(logits, sampling, generator)
            if not _decide(ask, prop, token, q_tok, q_max, q_row, k_max, stop_ids, sampled=sampling is not None,
                           entropy=h):
                return prop
            feed = [token]

    def rollback(self, valid: int) -> None:
        self.runner.rollback(valid)


class NgramDrafter(Drafter):
    """Prompt lookup (Saxena 2023; transformers' ``prompt_lookup_num_tokens``)."""

    name = "ngram"

    def __init__(self, n_max: int = 3, n_min: int = 1):
        if not (1 <= n_min <= n_max):
            raise ValueError(f"ngram sizes need 1 <= n_min <= n_max, got n_min={n_min}, n_max={n_max}")
        self.n_max, self.n_min = n_max, n_min

    def continuation(self, tokens: Sequence[int], k: int) -> list[int]:
        """k tokens following the most recent earlier match of the longest suffix n-gram (none if no match)."""
        seq = list(tokens)
        L = len(seq)
        for n in range(min(self.n_max, L - 1), self.n_min - 1, -1):
            tail = seq[L - n:]
            for start in range(L - n - 1, -1, -1):     # most recent earlier occurrence first
                if seq[start:start + n] == tail:
                    # copy forward from the match; a copy that runs into the tail keeps copying
                    # its own output (as in LZ77), so a repeating pattern continues to k tokens
                    for j in range(start + n, start + n + k):
                        seq.append(seq[j])
                    return seq[L:]
        return []

    def propose(self, tokens, k_max, ask, sampling, generator, stop_ids) -> Proposal:
        prop = Proposal()
        for token in self.continuation(tokens, k_max):
            if not _decide(ask, prop, token, 1.0, 1.0, None, k_max, stop_ids):
                break
        return prop

