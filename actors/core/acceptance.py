"""Turning logits into distributions and the accept/reject rules.

Sampling rule (Leviathan et al. 2023, Thm. 1; Chen et al. 2023, Alg. 2
"Speculative Decoding" steps 3–5): drafted token x_i, drawn from q_i, is accepted
with probability min(1, p_i(x_i) / q_i(x_i)); at the first rejection that position
is resampled from norm(max(0, p_i − q_i)); if all k are accepted a bonus token is
drawn from p_{k+1}. The emitted tokens are then distributed exactly as the target's.
A model-free drafter's q is a point mass on its proposal (``None`` below).

Greedy rule: accept while x_i equals argmax p_i; then emit argmax p_{n+1}.

Trees (SpecInfer, Miao et al. 2024; Sequoia, Chen et al. 2024): greedy accepts the longest
root path whose every token is the target's argmax at its parent, then emits the argmax
after it. Sampling uses multi-candidate rejection for children drawn without replacement
(Sequoia, Alg. "sampling without replacement"): at a node with target distribution p and
draft distribution q, try the children in drawing order — accept child x with probability
min(1, p(x)/q(x)); on rejection p ← norm(max(0, p − q)) and q ← q with x removed,
renormalised; if no child is accepted, sample from p. The emitted tokens follow the
target's distribution exactly. Deterministic children (a model-free drafter: no q recorded at the
node) are point masses tried in order: child x is accepted with probability p(x), and on rejection
p ← norm(p with x removed) (SpecInfer's multi-step rule with one point mass per candidate).

Dynamic trees (EAGLE-2, GT(d)) pick their children deterministically — the top-k of the draft
distribution, ranked and pruned by cumulative draft probability — so no child is a draw from q and
the rule above, with q, would be biased by the pruning. Each such child is a point-mass draft
q = δ_x, and the same recursive rule reads: accept child x with probability min(1, p(x)/1) = p(x);
on rejection p ← norm(max(0, p − δ_x)) = p with x zeroed, renormalised; the next child is its own
point mass (EAGLE-2's ``evaluate_posterior`` in ``eagle/model/utils.py``: ``qx = 1.0``, then
``gtp[xi] = 0; gtp = gtp / gtp.sum()``). As the tree is a function of the committed tokens alone,
the emitted tokens again follow the target's distribution exactly. A node's ``q_rows`` entry
``None`` marks point-mass children.

Every accept/reject decision of the engine, the tree step and replay is made here.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import torch


def warp(logits: torch.Tensor, temperature: float, top_p: float = 1.0) -> torch.Tensor:
    """Sampling distribution: softmax(logits / T), optionally restricted to the top-p nucleus.

    The same warp is applied to the target and the draft, so the output follows the
    target's *warped* distribution — exactly what target-only sampling produces.
    """
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        before = sorted_p.cumsum(-1) - sorted_p          # mass strictly above each token
        sorted_p = sorted_p.masked_fill(before >= top_p, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def accept_greedy(target_argmax: Sequence[int], drafted: Sequence[int]) -> tuple[int, int]:
    """(n accepted, next token) for greedy decoding; ``target_argmax`` has k + 1 entries."""
    n = 0
    while n < len(drafted) and drafted[n] == target_argmax[n]:
        n += 1
    return n, int(target_argmax[n])


def residual(p: torch.Tensor, q: torch.Tensor | None, token: int) -> torch.Tensor:
    """norm(max(0, p − q)); a point-mass q removes only ``token``'s mass. A draft whose output is narrower than the
    target's (one tokenizer, embeddings padded to different sizes) puts q = 0 on the target's extra ids."""
    if q is None:
        r = p.clone()
        r[token] = 0.0
    else:
        if q.shape[-1] < p.shape[-1]:
            q = torch.nn.functional.pad(q, (0, p.shape[-1] - q.shape[-1]))
        r = (p - q).clamp_min(0.0)
    total = r.sum()
    if total <= 0:  # p == q exactly: rejection has probability 0, any choice is fine
        return p
    return r / total


def accept_sampling(p: torch.Tensor, q_rows: Sequence[torch.Tensor | None], drafted: Sequence[int],
                    generator: torch.Generator) -> tuple[int, int]:
    """(n accepted, next token) by speculative rejection sampling.

    ``p``: [k + 1, V] target distributions; ``q_rows[i]``: the draft distribution that
    proposed ``drafted[i]`` (``None`` = point mass).
    """
    k = len(drafted)
    if k:
        idx = torch.arange(k, device=p.device)
        tok = torch.as_tensor(list(drafted), device=p.device)
        p_tok = p[idx, tok]
        q_tok = torch.stack([torch.ones((), device=p.device) if q is None else q[t]
                             for q, t in zip(q_rows, drafted)])
        u = torch.rand(k, generator=generator, device=p.device)
        rejected = (u * q_tok > p_tok).tolist()   # accept iff u < p/q  <=>  u*q < p (q > 0 for a drafted token)
        for i in range(k):
            if rejected[i]:
                r = residual(p[i], q_rows[i], drafted[i])
                return i, int(torch.multinomial(r, 1, generator=generator))
    return k, int(torch.multinomial(p[k], 1, generator=generator))


def accept_tree_greedy(target_argmax: Sequence[int], tokens: Sequence[int],
                       children: Mapping[int, Sequence[int]]) -> tuple[list[int], int]:
    """(accepted node indices along the path, next token) for greedy decoding of a tree.

    ``target_argmax[i + 1]``: the target's argmax after node i (index 0: after the root, the last committed
    token); ``tokens[i]``: node i's token; ``children[i]``: node i's children (-1 = the root's).
    """
    path, cur = [], -1
    while True:
        want = int(target_argmax[cur + 1])
        nxt = next((c for c in children.get(cur, []) if tokens[c] == want), None)
        if nxt is None:
            return path, want
        path.append(nxt)
        cur = nxt


def accept_tree_sampling(p_rows: torch.Tensor, tokens: Sequence[int], children: Mapping[int, Sequence[int]],
                         q_rows: Mapping[int, torch.Tensor], generator: torch.Generator) -> tuple[list[int], int]:
    """(accepted node indices along the path, next token) by multi-candidate rejection sampling (module docstring).

    ``p_rows``: [1 + nodes, V] target distributions (row 0 after the root); ``q_rows[i]``: the draft distribution
    node i's children were drawn from without replacement (-1 = the root's), or ``None`` when they were chosen
    deterministically (each a point mass: dynamic trees); ``children[i]`` in drawing order.
    """
    path, cur = [], -1
    while True:
        p = p_rows[cur + 1]
        kids = children.get(cur, [])
        if not kids:
            return path, int(torch.multinomial(p, 1, generator=generator))
        q = q_rows.get(cur)
        q = None if q is None else q.clone()
        accepted = None
        for c in kids:
            x = tokens[c]
            u = float(torch.rand(1, generator=generator, device=p.device))
            q_x = 1.0 if q is None else float(q[x])       # a point-mass child: q(x) = 1
            if q_x > 0 and u * q_x < float(p[x]):
                accepted = c
                break
            p = residual(p, q, x)
            if q is None:
                continue
            q[x] = 0.0
            s = q.sum()
            if s <= 0:
                break
            q = q / s
        if accepted is None:
            return path, int(torch.multinomial(p, 1, generator=generator))
        path.append(accepted)
        cur = accepted
