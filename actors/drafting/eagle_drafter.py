"""The ``eagle`` drafter: an EAGLE feature head (``actors/drafting/eagle_head.py``) behind the drafter seam.

Positions. Head position i consumes (f_i, t_{i+1}) — the target's final hidden state at token
i and the next token — and its output g_i gives the draft distribution of t_{i+2}. With N
committed tokens the target's cache holds t_0 … t_{N−2}, so the engine has seen f_0 … f_{N−2}
(prefill, then each verify forward: ``see_features``, no extra target forward). A step:

1. **catch up**: head positions up to N−2 are (re)fed with the *true* features f and tokens t
   (positions computed earlier from predicted features are cropped first); g_{N−2} gives x_1;
2. **draft**: position N−2+j consumes (g_{N−3+j}, x_j), its own predicted feature, and gives x_{j+1};
3. after verification the engine hands over the target's features of the accepted positions and
   ``rollback`` forgets the rejected ones; the next catch-up replaces every predicted position.

So along the accepted path the head always conditions on the target's own features, and a draft
from a given committed prefix depends on that prefix alone (what replay relies on,
docs/replay.md). Trees expand level by level in the head's cache with a tree attention mask
(each node sees the committed prefix, its ancestors and itself; depth-based positions).
"""
from __future__ import annotations

import torch

from actors.core.acceptance import warp
from actors.drafting.batch_eagle import EagleRows
from actors.drafting.drafters import Drafter, pick_draft_token
from actors.drafting.eagle_head import HeadCache, causal_allowed, load_head, target_parts
from actors.runtime.runners import target_features
from actors.core.tree_step import Tree, draft_tree


class EagleDrafter(Drafter):
    """Drafts with an EAGLE head on the target's features; ``kept``: the drafting vocabulary subset (None = all).
    One row keeps its head cache here; a batch of rows keeps one gap-masked head cache (``actors/drafting/batch_eagle.py``)."""

    name = "eagle"
    supports_trees = True
    needs_features = True

    def __init__(self, head, target, kept: list[int] | None = None):
        self.head = head
        _, lm = target_parts(target)
        self.embed = head.embed_tokens if head.embed_tokens is not None else target.get_input_embeddings()
        self.vocab = lm.weight.shape[0]
        self.device = lm.weight.device
        self._kept_ids = kept
        # draft logits = out_norm(g) @ w.T over the target ids ``kept`` (None: the whole vocabulary, in order)
        self.kept, self.w, self.out_norm = self._drafting_head(lm, kept)
        self.dtype = self.w.dtype
        self.feature_width = self._feature_width()      # the width of one target feature (``see_features``)
        self.target = target
        self._buf = torch.zeros(0, self.feature_width, dtype=self.dtype, device=self.device)
        self.reset()

    def _drafting_head(self, lm, kept):
        """(target ids of the drafting rows or None, their weights [V', h], the norm before them or None): EAGLE-1/2
        drafts with the target's own LM head, on the rows of the drafting subset ``kept``."""
        ids = torch.tensor(sorted(kept), device=lm.weight.device) if kept else None
        w = lm.weight.detach()
        return ids, (w[ids] if ids is not None else w), None

    def _feature_width(self) -> int:
        """EAGLE-1/2 reads the target's final hidden state: the LM head's input width."""
        return self.w.shape[1]

    @classmethod
    def from_folder(cls, folder, target) -> "EagleDrafter":
        head, kept = load_head(folder, target)
        return cls(head, target, kept)

    def twin(self) -> "EagleDrafter":
        """The same head with state of its own (a batch's per-row tree drafters)."""
        return type(self)(self.head, self.target, self._kept_ids)

    def reset(self, rows: int = 1, sampling=None, generators=None, stop_ids=frozenset(), tree: bool = False) -> None:
        super().reset(rows, sampling, generators, stop_ids, tree)
        self._rows = None          # B > 1: the rows' head cache (``actors/drafting/batch_eagle.py``); one row: the fields below
        if rows > 1:
            self._rows = EagleRows(self)
            self._rows.reset(rows, sampling, generators, stop_ids)
        self.cache = HeadCache()
        self.true_len = 0          # head positions computed from the target's true features
        self.n_feat = 0            # target features held: positions 0 … n_feat − 1
        self._g: dict[int, torch.Tensor] = {}

    # ------------------------------------------------------------ features from the target
    def see_features(self, row: int, start: int, hidden: torch.Tensor) -> None:
        """Row ``row``'s target features [m, feature_width] of positions start … start + m − 1 (from a forward the
        engine ran: the final hidden states for EAGLE-1/2, the concatenated auxiliary layers for EAGLE-3)."""
        if self._rows is not None:
            self._rows.see_features(row, start, hidden)
            return
        m = hidden.shape[0]
        if start > self.n_feat:
            raise RuntimeError(f"eagle drafter: features from position {start} but only {self.n_feat} held")
        if start + m > self._buf.shape[0]:
            grown = torch.zeros(max(2 * self._buf.shape[0], start + m, 256), self._buf.shape[1],
                                dtype=self._buf.dtype, device=self.device)
            grown[: self.n_feat] = self._buf[: self.n_feat]
            self._buf = grown
        self._buf[start:start + m] = hidden.detach().to(self._buf.dtype)
        self.n_feat = start + m

    def rollback(self, row: int, valid: int) -> None:
        if self._rows is not None:
            self._rows.rollback(row, valid)
            return
        self.n_feat = min(self.n_feat, valid)
        self.true_len = min(self.true_len, max(valid - 1, 0))

    # ------------------------------------------------------------ the head
    def draft_logits(self, g: torch.Tensor) -> torch.Tensor:
        """Full-vocabulary logits [n, V] of predicted features g [n, h] (−inf outside the drafting subset or, for an
        EAGLE-3 head, outside the target ids of its draft vocabulary)."""
        small = (self.out_norm(g) if self.out_norm is not None else g) @ self.w.T
        if self.kept is None:
            return small
        full = small.new_full((g.shape[0], self.vocab), float("-inf"))
        full[:, self.kept] = small
        return full

    def _dist(self, logits: torch.Tensor) -> torch.Tensor:
        if self.sampling is None:
            return torch.softmax(logits.float(), -1)
        return warp(logits, self.sampling["temperature"], self.sampling["top_p"])

    def _emb(self, ids) -> torch.Tensor:
        return self.embed(torch.as_tensor(ids, device=self.device)).to(self._buf.dtype)

    @torch.no_grad()
    def _catch_up(self, tokens) -> torch.Tensor:
        """Feed head positions up to N − 2 from true features; returns g_{N−2} [h]."""
        N = len(tokens)
        if self.n_feat < N - 1:
            raise RuntimeError(f"eagle drafter: {N} committed tokens need features of {N - 1} positions, "
                               f"{self.n_feat} held")
        start = min(self.true_len, N - 2)
        self.cache.crop(start)
        T = N - 1 - start
        pos = torch.arange(start, N - 1, device=self.device)[None]
        g = self.head(self._buf[start:N - 1][None], self._emb(list(tokens[start + 1:N]))[None], pos,
                      causal_allowed(T, start, self.device), self.cache)
        self.true_len = N - 1
        return g[0, -1]

    @torch.no_grad()
    def _feed(self, feats, ids, positions, allowed) -> torch.Tensor:
        """One head forward over predicted features ``feats`` [n, h]; returns g [n, h] (appended to the cache)."""
        pos = torch.as_tensor(positions, device=self.device)[None]
        return self.head(feats[None], self._emb(ids)[None], pos, allowed, self.cache)[0]

    # ------------------------------------------------------------ the seam
    def keep_rows(self, rows) -> None:
        if self._rows is not None:
            self._rows.keep_rows(rows)

    def begin(self, seqs, caps) -> None:
        if self._rows is not None:
            self._rows.begin(seqs, caps)
            return
        self.seq, self.level = list(seqs[0]), 0

    @torch.no_grad()
    def next(self, active) -> dict:
        """One head forward: the catch-up at the first level (g_{N−2} gives x_1), then one predicted position."""
        if self._rows is not None:
            return self._rows.next(active)
        if self.level == 0:
            if len(self.seq) < 2:  # no target feature yet (a one-token prompt): nothing to draft from
                return {0: None}
            g = self._catch_up(self.seq)
        else:
            allowed = torch.ones(1, 1, 1, len(self.cache) + 1, dtype=torch.bool, device=self.device)
            g = self._feed(self._last[None], [self.seq[-1]], [len(self.seq) - 2], allowed)[0]
        self.level += 1
        self._last = g
        pick = pick_draft_token(self.draft_logits(g[None])[0], self.sampling, self.generator)
        self.seq.append(pick[0])
        return {0: pick}

    def propose_tree(self, tokens, policy, max_depth):
        """The policy's tree (``actors.core.tree_step.draft_tree``) grown in the head's cache."""
        N = len(tokens)
        if N < 2:
            return Tree()
        return draft_tree(lambda tree, nodes: self._tree_dists(tokens, tree, nodes), policy, max_depth,
                          self.sampling, self.generator, self.stop_ids)

    @torch.no_grad()
    def _tree_dists(self, tokens, tree: Tree, nodes: list[int]) -> list[torch.Tensor]:
        N = len(tokens)
        if nodes == [-1]:
            self._g = {-1: self._catch_up(tokens)}
            return [self._dist(self.draft_logits(self._g[-1][None])[0])]
        cached = len(self.cache)
        n = len(nodes)
        allowed = torch.zeros(1, 1, n, cached + n, dtype=torch.bool, device=self.device)
        allowed[..., : self.true_len] = True                      # the committed prefix
        for i, node in enumerate(nodes):
            allowed[0, 0, i, cached + i] = True
            j = tree.parents[node]
            while j >= 0:                                         # ancestors fed in earlier levels
                allowed[0, 0, i, tree.draft_slot[j]] = True
                j = tree.parents[j]
        feats = torch.stack([self._g[tree.parents[node]] for node in nodes])
        g = self._feed(feats, [tree.tokens[node] for node in nodes], [N - 2 + tree.depths[node] for node in nodes],
                       allowed)
        for i, node in enumerate(nodes):
            tree.draft_slot[node] = cached + i
            self._g[node] = g[i]
        logits = self.draft_logits(g)
        return [self._dist(row) for row in logits]

    @torch.no_grad()
    def teacher_forced_logits(self, target, seq) -> torch.Tensor:
        """Draft logits [len(seq) − 1, V] whose row i predicts seq[i + 1] from true features (row 0, which no head
        position predicts, is zeros): the head's first proposal at every prefix, for per-rank acceptance."""
        L = len(seq)
        hidden = target_features(target, seq[:-2], self.feature_layers)             # f_0 … f_{L−3}
        pos = torch.arange(L - 2, device=self.device)[None]
        g = self.head(hidden[None].to(self._buf.dtype), self._emb(list(seq[1:-1]))[None], pos,
                      causal_allowed(L - 2, 0, self.device), None)[0]
        return torch.cat([torch.zeros(1, self.vocab, device=self.device, dtype=g.dtype), self.draft_logits(g)])

    def keep_tree_path(self, committed, tree, path) -> None:
        """Tree slots hold predicted features: the next catch-up crops them and re-feeds the accepted path with the
        target's own features (``see_features`` brought them)."""
        self._g = {}
