"""Token trees (SpecInfer, Miao et al. 2024; Sequoia, Chen et al. 2024): drafting a tree and its verification forward.

The step itself is ``actors/core/step.py``'s ``tree_step``, over rows.

Drafting (``draft_tree``): the independent draft model grows the tree one depth at a time;
all nodes of a depth that get children are fed in **one** draft forward with a 4-D tree
attention mask (each node sees the committed prefix and its own ancestors) and
depth-based position ids. Static shapes take, at each parent, the rank-1…k candidates
(greedy: the k most likely; sampling: k drawn without replacement by the Gumbel-top-k
trick). Dynamic shapes (EAGLE-2 / GT) expand the ``topk`` best frontier nodes by
cumulative draft probability and finally keep the best N candidates; their children are the top-k of
the draft distribution under sampling too (EAGLE-2's ``topK_genrate``), so the tree is a function of
the committed tokens and each child is verified as a point-mass draft (``q_rows[parent] = None``; the
rule in ``actors/core/acceptance.py``).

Verification: the target scores ``[last token] + nodes`` of every row in one forward with
the same kind of mask (``actors/runtime/row_runners.py``, ``actors/runtime/batch_runner.py``); the accept rule (greedy path walk, or multi-candidate rejection
sampling) is ``actors/core/acceptance.py``'s.

Only the accepted path's KV entries are kept, in both models (``keep_positions``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from actors.core.acceptance import warp
from actors.runtime.hf_api import cache_arg
from actors.runtime.kv import cached_length, tree_mask


@dataclass
class Tree:
    """A drafted token tree in insertion order: tokens, parents, depths and cumulative draft probabilities, plus the
    draft distribution at each expanded parent, children in drawing order and each node's draft-cache slot."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)   # -1 = child of the last committed token
    depths: list[int] = field(default_factory=list)    # 1 for the root's children
    cum: list[float] = field(default_factory=list)      # cumulative draft probability along the path
    q_rows: dict = field(default_factory=dict)          # parent index (-1 = root) -> draft distribution there
    children: dict = field(default_factory=dict)        # parent index -> child indices in drawing order
    draft_slot: dict = field(default_factory=dict)      # node index -> position in the draft's KV cache

    def __len__(self):
        return len(self.tokens)

    def add(self, token: int, parent: int, cum: float) -> int:
        self.tokens.append(int(token))
        self.parents.append(parent)
        self.depths.append(1 if parent < 0 else self.depths[parent] + 1)
        self.cum.append(cum)
        self.children.setdefault(parent, []).append(len(self.tokens) - 1)
        return len(self.tokens) - 1



def _ancestors_in_cache(tree: Tree, node: int) -> list[int]:
    out = []
    j = tree.parents[node]
    while j >= 0:
        out.append(tree.draft_slot[j])
        j = tree.parents[j]
    return out


@torch.no_grad()
def _draft_dists(model, cache, tree: Tree, nodes: list[int], tokens: list[int], sampling) -> list[torch.Tensor]:
    """Draft distributions at ``nodes`` (-1 = root), each [vocab]. Root: feed the uncached committed tail causally."""
    device = model.device
    if nodes == [-1]:
        feed = list(tokens[cached_length(cache):])
        logits = model(input_ids=torch.tensor([feed], device=device), **cache_arg(cache), use_cache=True,
                       logits_to_keep=1).logits[0, -1:]
    else:
        prefix = len(tokens)  # committed tokens are all in the draft cache now
        fed_before = cached_length(cache) - prefix
        extra = {i: _ancestors_in_cache(tree, n) for i, n in enumerate(nodes)}
        dtype = next(p for p in model.parameters()).dtype
        dtype = dtype if dtype.is_floating_point else torch.float32
        mask = tree_mask(prefix, [-1] * len(nodes), extra, dtype, device, fed_before)
        pos = torch.tensor([[prefix - 1 + tree.depths[n] for n in nodes]], device=device)
        start = cached_length(cache)
        logits = model(input_ids=torch.tensor([[tree.tokens[n] for n in nodes]], device=device),
                       **cache_arg(cache), use_cache=True, attention_mask=mask, position_ids=pos,
                       cache_position=torch.arange(start, start + len(nodes), device=device)).logits[0]
        for i, n in enumerate(nodes):
            tree.draft_slot[n] = start + i
    if sampling is None:
        return [torch.softmax(row.float(), -1) for row in logits]
    return [warp(row, sampling["temperature"], sampling["top_p"]) for row in logits]


def _candidates(q: torch.Tensor, k: int, sampling, generator) -> list[int]:
    """Greedy: the k most likely tokens. Sampling: k tokens drawn without replacement (Gumbel-top-k)."""
    k = min(k, int((q > 0).sum()))
    if k <= 0:
        return []
    if sampling is None:
        return q.topk(k).indices.tolist()
    u = torch.rand(q.shape, generator=generator, device=q.device).clamp_(1e-20, 1.0)
    keys = torch.log(q.clamp_min(1e-38)) - torch.log(-torch.log(u))
    keys[q <= 0] = float("-inf")
    return keys.topk(k).indices.tolist()


def model_dists(model, cache, tokens: list[int], sampling):
    """``dists(tree, nodes)`` for :func:`draft_tree` from an independent draft ``model`` over its KV ``cache``, which
    holds a prefix of the committed ``tokens``; the nodes' KV entries are appended to it."""
    return lambda tree, nodes: _draft_dists(model, cache, tree, nodes, tokens, sampling)


@torch.no_grad()
def draft_tree(dists, policy, max_depth: int, sampling, generator, stop_ids) -> Tree:
    """Grow ``policy``'s tree (at most ``max_depth`` levels). ``dists(tree, nodes)`` gives the draft distribution
    after each of ``nodes`` (-1 = the last committed token), feeding those nodes to the drafter in one forward
    and recording each node's cache slot in ``tree.draft_slot``."""
    tree = Tree()
    if max_depth < 1:
        return tree
    if not policy.dynamic:
        shape = [n for n in policy.shape() if n.depth <= max_depth]
        by_parent: dict[int, int] = {}
        for n in shape:
            by_parent[n.parent] = by_parent.get(n.parent, 0) + 1
        index = {}                                   # shape index -> tree index
        level = [-1]
        while level:
            wanted = [s for s in level if by_parent.get(s, 0) and (s == -1 or tree.tokens[index[s]] not in stop_ids)]
            if not wanted:
                break
            nodes = [-1] if wanted == [-1] else [index[s] for s in wanted]
            qs = dists(tree, nodes)
            nxt = []
            for s, q in zip(wanted, qs):
                t_parent = -1 if s == -1 else index[s]
                tree.q_rows[t_parent] = q
                kids = [i for i, n in enumerate(shape) if n.parent == s]
                cands = _candidates(q, len(kids), sampling, generator)
                base = 1.0 if t_parent < 0 else tree.cum[t_parent]
                for kid, tok in zip(kids, cands):
                    index[kid] = tree.add(tok, t_parent, base * float(q[tok]))
                    nxt.append(kid)
            level = nxt
        return tree
    # dynamic (EAGLE-2 style): expand the best `topk` frontier nodes of each level
    frontier = [-1]
    level = 0
    while frontier and level < max_depth:
        qs = dists(tree, frontier)
        new = []
        for parent, q in zip(frontier, qs):
            tree.q_rows[parent] = None                # deterministic children: point masses (module docstring)
            base = 1.0 if parent < 0 else tree.cum[parent]
            for tok in _candidates(q, policy.topk, None, None):
                new.append(tree.add(tok, parent, base * float(q[tok])))
        level += 1
        best = max((tree.cum[i] for i in new), default=0.0)
        if not policy.keep_expanding(level, best):
            for i in new:                             # this level does not join the tree
                tree.cum[i] = -1.0
            break
        ranked = sorted(new, key=lambda i: -tree.cum[i])
        frontier = [i for i in ranked[: policy.topk] if tree.tokens[i] not in stop_ids]
        if not policy.keep_expanding(level + 1, 1.0):   # no next level can join: skip its draft forward
            break
    levels = max([tree.depths[i] for i in range(len(tree)) if tree.cum[i] >= 0], default=0)
    return _keep_best(tree, policy.node_budget(levels))


def _keep_best(tree: Tree, n: int) -> Tree:
    """The n candidates with the highest cumulative probability (ancestor-closed), re-indexed."""
    order = sorted((i for i in range(len(tree)) if tree.cum[i] >= 0), key=lambda i: (-tree.cum[i], tree.depths[i], i))
    keep = set()
    for i in order:
        if len(keep) >= n:
            break
        if tree.parents[i] < 0 or tree.parents[i] in keep:
            keep.add(i)
    kept = sorted(keep, key=lambda i: (tree.depths[i], i))
    out = Tree()
    new_of = {-1: -1}
    for i in kept:
        new_of[i] = out.add(tree.tokens[i], new_of[tree.parents[i]], tree.cum[i])
        if i in tree.draft_slot:
            out.draft_slot[new_of[i]] = tree.draft_slot[i]
    for p, q in tree.q_rows.items():
        if p in new_of:
            out.q_rows[new_of[p]] = q
    # children order must follow drawing order for sampling; greedy order is by probability either way
    for p in list(out.children):
        out.children[p].sort(key=lambda c: kept[c])
    return out
