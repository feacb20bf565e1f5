"""Suffix decoding (Oliaro et al., "SuffixDecoding: Extreme Speculative Decoding for Emerging AI Applications",
2024; vLLM's ``suffix`` method): a model-free drafter that matches the latest tokens of a row against its own
prompt + output and against a bounded cache of earlier responses, and proposes the most frequent continuation.

The structure. The paper keeps suffix trees (one per request, one global over cached responses). We keep the same
information in a simpler, bounded form: a :class:`ContextIndex` maps every context of 1 … ``depth`` tokens seen
in the indexed text to the counts of the token that followed it (and where it last did). This is a suffix tree
cut at depth ``depth + 1`` and flattened into a dict: a match of the longest suffix (≤ ``depth`` tokens) is one
lookup per length, the next token's empirical frequency is a count ratio, and forgetting an evicted response is
a decrement (a pointer-based tree would need node deletion for that). Memory is ``depth`` entries per indexed
token, bounded by ``depth`` × (the row's length + the cached responses' lengths).

Proposing. At each draft position the longest context (≤ ``depth`` tokens, drafted tokens included) that either
the row's index or the global cache has seen is matched; their counts for that context are added and the most
frequent next token wins (ties: the most recently seen). The draft stops at the step's cap (the policy's k), at
``spec_factor`` × the first match's length (the paper's adaptive draft length; vLLM ``suffix_decoding_max_spec_
factor``, default 1.0), when nothing matches, or when the path's empirical probability — the product of the
chosen tokens' frequencies — falls below ``min_prob`` (vLLM ``suffix_decoding_min_token_prob``, default 0.1).
The proposal is deterministic, so q is a point mass on each token (as for ``NgramDrafter``): verification under
sampling accepts x with probability p(x), and the output stays exactly the target's.

Trees (the paper's §4, "Speculation tree expansion" and "Speculation tree scoring"). :meth:`SuffixDrafter.propose_tree`
grows a speculation tree from the same match by greedy best-first expansion: every candidate node is scored by its
path's empirical probability (the product of count ratios C(child) / C(parent context), the paper's D(N)), the best
candidate joins next, and its own continuations (the longest context of prompt + output + its path) become
candidates. It stops at the node budget — the tree policy's budget, and at most ``spec_factor`` × the match length
(the paper's MAX_SPEC = α·p) — at the policy's depth, when the best score falls below ``min_prob``, or when nothing
matches. Children are tried best first. Each node is a deterministic proposal (a point mass), so verification
under sampling tries them in order, each accepted with probability p(x) under what is left of p
(``actors/core/acceptance.py``), and the output stays the target's; dynamic tree policies may run sampled on it.

Order matters. :meth:`SuffixDrafter.finished` records each finished response in the global cache (the engine
calls it, ``actors/core/engine.py``), so what a generation drafts depends on which generations finished before it on
the same drafter (and in which order). The cache keeps the latest ``cache_responses`` responses (vLLM
``suffix_decoding_max_cached_requests``); :meth:`SuffixDrafter.clear` empties it. :meth:`SuffixDrafter.hold`
stops the engine's hook from learning (a sweep actor holds it and learns each request's responses with
:meth:`SuffixDrafter.remember` after the request's task, so every config of a request drafts from the same cache:
``actors/pair_actor.py``).
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import Sequence

from actors.drafting.drafters import LookupDrafter
from actors.core.tree_step import Tree

DEPTH = 8                 # longest context matched
MIN_PROB = 0.1            # vLLM suffix_decoding_min_token_prob's default
SPEC_FACTOR = 1.0         # vLLM suffix_decoding_max_spec_factor's default
CACHE_RESPONSES = 256     # finished responses kept in the global cache


class ContextIndex:
    """{context tuple (1 … depth tokens): {next token: [count, last seen]}} over the texts added to it."""

    def __init__(self, depth: int = DEPTH):
        self.depth = depth
        self.table: dict[tuple, dict[int, list[int]]] = {}
        self.clock = 0           # increases with every indexed token: "last seen" for ties

    def add(self, tokens: Sequence[int], start: int = 1, sign: int = 1) -> None:
        """Index each token at positions ``start`` … of ``tokens`` after its 1 … depth preceding tokens
        (``sign`` −1 forgets them; forgetting moves no "last seen" stamp, so a continuation the forgotten text
        shared with newer texts does not become the newest)."""
        toks = list(tokens)
        for i in range(max(start, 1), len(toks)):
            if sign > 0:
                self.clock += 1
            nxt = toks[i]
            for n in range(1, min(self.depth, i) + 1):
                ctx = tuple(toks[i - n:i])
                counts = self.table.setdefault(ctx, {})
                entry = counts.setdefault(nxt, [0, 0])
                entry[0] += sign
                if sign > 0:
                    entry[1] = self.clock
                if entry[0] <= 0:
                    del counts[nxt]
                    if not counts:
                        del self.table[ctx]

    def get(self, ctx: tuple) -> dict[int, list[int]]:
        return self.table.get(ctx, {})


class SuffixDrafter(LookupDrafter):
    """Suffix decoding over each row's prompt + output and a global cache of finished responses (module doc)."""

    name = "suffix"
    supports_trees = True

    def __init__(self, depth: int = DEPTH, min_prob: float = MIN_PROB, spec_factor: float = SPEC_FACTOR,
                 cache_responses: int = CACHE_RESPONSES):
        if depth < 1 or not (0.0 <= min_prob <= 1.0) or spec_factor <= 0 or cache_responses < 0:
            raise ValueError(f"suffix drafter needs depth >= 1, 0 <= min_prob <= 1, spec_factor > 0 and "
                             f"cache_responses >= 0, got {depth}, {min_prob}, {spec_factor}, {cache_responses}")
        self.depth, self.min_prob, self.spec_factor = depth, min_prob, spec_factor
        self.cache_responses = cache_responses
        self.held = False
        self.clear()
        self.reset()

    def clear(self) -> None:
        """Empty the global cache of responses."""
        self.cache = ContextIndex(self.depth)
        self.responses: deque[list[int]] = deque()

    def twin(self) -> "SuffixDrafter":
        """A drafter of one row of a batch's trees: its own row index, this drafter's global cache (shared)."""
        other = SuffixDrafter(self.depth, self.min_prob, self.spec_factor, self.cache_responses)
        other.cache, other.responses, other.held = self.cache, self.responses, True
        return other

    def hold(self, on: bool = True) -> None:
        """While held, :meth:`finished` learns nothing (only :meth:`remember` does)."""
        self.held = bool(on)

    def finished(self, tokens: Sequence[int]) -> None:
        """The engine's hook: :meth:`remember` a finished response unless held."""
        if not self.held:
            self.remember(tokens)

    def remember(self, tokens: Sequence[int]) -> None:
        """Record a response (its generated tokens) in the global cache, evicting the oldest beyond
        ``cache_responses``."""
        if self.cache_responses == 0 or len(tokens) < 2:
            return
        self.responses.append([int(t) for t in tokens])
        self.cache.add(self.responses[-1])
        while len(self.responses) > self.cache_responses:
            self.cache.add(self.responses.popleft(), sign=-1)

    def forget(self, tokens: Sequence[int]) -> None:
        """Take a remembered response (its oldest copy) out of the cache; nothing when it is not there (evicted)."""
        tokens = [int(t) for t in tokens]
        for i, old in enumerate(self.responses):
            if old == tokens:
                del self.responses[i]
                self.cache.add(tokens, sign=-1)
                return

    def reset(self, rows: int = 1, sampling=None, generators=None, stop_ids=frozenset(), tree: bool = False) -> None:
        super().reset(rows, sampling, generators, stop_ids, tree)
        self.rows = [(ContextIndex(self.depth), []) for _ in range(rows)]   # (index, the tokens it covers)
        self.queue, self.level = [[] for _ in range(rows)], 0

    def _index(self, row: int, seq: Sequence[int]) -> ContextIndex:
        """Row ``row``'s index, brought up to ``seq`` (rebuilt when ``seq`` does not extend what it covers)."""
        index, seen = self.rows[row]
        seq = list(seq)
        if len(seq) < len(seen) or seq[:len(seen)] != seen:
            index, seen = ContextIndex(self.depth), []
        index.add(seq, start=len(seen))
        self.rows[row] = (index, seq)
        return index

    def _match(self, index: ContextIndex, seq: list[int]) -> tuple[int, dict[int, list[int]]]:
        """(length, {token: [count, last seen]}) of the longest suffix of ``seq`` seen by the row or the cache."""
        for n in range(min(self.depth, len(seq)), 0, -1):
            ctx = tuple(seq[-n:])
            local, shared = index.get(ctx), self.cache.get(ctx)
            if local or shared:
                if not local:
                    return n, shared                      # read only by the callers: no copy of a large table
                merged = {t: list(v) for t, v in shared.items()}
                for t, (c, last) in local.items():       # the row's own text is more recent than the cache
                    old = merged.get(t, [0, 0])
                    merged[t] = [old[0] + c, self.cache.clock + last]
                return n, merged
        return 0, {}

    def continuation(self, row: int, tokens: Sequence[int], k: int) -> list[int]:
        """Up to ``k`` tokens after ``tokens``: the most frequent continuation of the longest match (module doc)."""
        index = self._index(row, tokens)
        seq, out, prob, limit = list(tokens), [], 1.0, k
        while len(out) < limit:
            n, counts = self._match(index, seq)
            if not counts:
                break
            if not out:
                limit = min(k, max(1, int(self.spec_factor * n)))
            token, (count, _) = max(counts.items(), key=lambda kv: (kv[1][0], kv[1][1]))
            prob *= count / sum(c for c, _ in counts.values())
            if prob < self.min_prob:
                break
            out.append(token)
            seq.append(token)
        return out

    def row_continuation(self, row, tokens, k) -> list[int]:
        """Row ``row``'s continuation (every row's index follows its committed tokens)."""
        return self.continuation(row, tokens, k)

    def keep_rows(self, rows) -> None:
        self.rows = [self.rows[j] for j in rows]
        self.queue = [self.queue[j] for j in rows]

    def propose_tree(self, tokens, policy, max_depth: int) -> Tree:
        """The speculation tree after ``tokens`` (module doc, "Trees"), within ``policy``'s depth and node budget
        (:func:`tree_bounds`) and ``max_depth`` levels; nodes in depth order, children best first."""
        depth, budget = tree_bounds(policy, max_depth)
        index = self._index(0, tokens)
        seq = list(tokens)
        n, counts = self._match(index, seq)
        if depth < 1 or budget < 1 or not counts:
            return Tree()
        budget = min(budget, max(1, int(self.spec_factor * n)))
        heap, order = [], 0                       # (−score, −last seen, order, parent, path, token)

        def push(parent: int, path: tuple, base: float, kids: dict) -> None:
            nonlocal order
            total = sum(c for c, _ in kids.values())
            for token, (count, last) in kids.items():
                heapq.heappush(heap, (-base * count / total, -last, order, parent, path, token))
                order += 1

        push(-1, (), 1.0, counts)
        nodes: list[tuple[int, int, float, int]] = []       # (token, parent node, score, depth)
        while heap and len(nodes) < budget:
            neg, _, _, parent, path, token = heapq.heappop(heap)
            level = len(path) + 1
            if -neg < self.min_prob:
                break
            if policy.dynamic and not policy.keep_expanding(level, -neg):
                continue
            nodes.append((token, parent, -neg, level))
            if level < depth and token not in self.stop_ids:
                _, kids = self._match(index, seq + list(path) + [token])
                push(len(nodes) - 1, path + (token,), -neg, kids)
        return _depth_ordered(nodes)

    def keep_tree_path(self, committed, tree, path) -> None:
        """Nothing to crop: the row's index follows its committed tokens at the next step."""


def tree_bounds(policy, max_depth: int) -> tuple[int, int]:
    """(levels, nodes) a tree policy allows a model-free tree: a static shape's depth and size; a dynamic policy's
    levels while ``keep_expanding(level, 1)`` and its ``node_budget`` for them; at most ``max_depth`` levels."""
    if policy.dynamic:
        levels = 0
        while levels < max_depth and policy.keep_expanding(levels + 1, 1.0):
            levels += 1
        return levels, policy.node_budget(levels)
    shape = [node for node in policy.shape() if node.depth <= max_depth]
    return max((node.depth for node in shape), default=0), len(shape)


def _depth_ordered(nodes: list[tuple[int, int, float, int]]) -> Tree:
    """A :class:`~actors.core.tree_step.Tree` of best-first ``nodes`` (token, parent, score, depth), re-indexed level by
    level (children keep their best-first order)."""
    order = sorted(range(len(nodes)), key=lambda i: (nodes[i][3], i))
    tree, new_of = Tree(), {-1: -1}
    for i in order:
        token, parent, score, _ = nodes[i]
        new_of[i] = tree.add(token, new_of[parent], score)
    return tree
