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

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from actors.acceptance import warp
from actors.kv import crop_to, cached_length, new_cache
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


def token_stats(probs: torch.Tensor, token: int) -> tuple[float, float, float]:
    """(q(x), max q, H(q) in nats) of one draft distribution ``probs`` [vocab], with one host sync."""
    p = probs.float()
    h = -(p * torch.log(p.clamp_min(1e-30))).sum()
    vals = torch.stack([p[token], p.max(), h]).tolist()
    return vals[0], vals[1], vals[2]


class ModelDrafter(Drafter):
    name = "model"

    def __init__(self, model):
        self.model = model
        self.device = model.device
        self.cache = None

    def reset(self) -> None:
        self.cache = new_cache(self.model)

    @torch.no_grad()
    def _next_logits(self, ids: Sequence[int]) -> torch.Tensor:
        inp = torch.tensor([list(ids)], device=self.device)
        out = self.model(input_ids=inp, past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        return out.logits[0, -1]

    @torch.no_grad()
    def propose(self, tokens, k_max, ask, sampling, generator, stop_ids) -> Proposal:
        prop = Proposal()
        feed = list(tokens[cached_length(self.cache):])
        while True:
            logits = self._next_logits(feed)
            if sampling is None:                       # greedy: propose argmax, report softmax probability
                probs = torch.softmax(logits.float(), -1)
                token = int(probs.argmax())
                q_row = None
            else:
                probs = warp(logits, sampling["temperature"], sampling["top_p"])
                token = int(torch.multinomial(probs, 1, generator=generator))
                q_row = probs
            q_tok, q_max, h = token_stats(probs, token)
            if not _decide(ask, prop, token, q_tok, q_max, q_row, k_max, stop_ids, sampled=sampling is not None,
                           entropy=h):
                return prop
            feed = [token]

    def rollback(self, valid: int) -> None:
        crop_to(self.cache, valid)


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


def timed(fn, sync):
    t = time.perf_counter()
    out = fn()
    sync()
    return out, time.perf_counter() - t
