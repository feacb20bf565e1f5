"""An EAGLE head's cache for a batch of rows (B > 1): one head forward per draft level for every drafting row.

``actors/drafting/eagle_drafter.py``'s ``EagleDrafter`` runs one row on its own head cache and hands a batch of rows to
:class:`EagleRows`. The rule per row is the same: head position i reads
the target's feature f_i and token t_{i+1}, and a step first *catches up* — positions up to N − 2
re-fed from true features, predicted positions dropped — then drafts on its own predicted
features. Here every row lives in one head cache ``[B, kv_heads, slots, head_dim]`` with the
gap-masked layout of ``actors/runtime/batch_runner.py``: ``pos[b, s]`` is the head position in slot s of
row b and ``valid[b, s]`` whether row b may attend to it. A level appends the same number of
slots to every row (the catch-up rows feed several, a drafting row one, the others padding);
dropping predicted positions only masks their slots, and :func:`~actors.runtime.batch_runner.packed_order`
compacts the cache when masked slots outnumber valid ones.

Each row's drafts depend on its own committed prefix and features alone (its own generator under
sampling), so a row drafts what it drafts in a batch of one, up to floating-point differences of
padded batch forwards.
"""
from __future__ import annotations

from typing import Sequence

import torch

from actors.runtime.batch_runner import packed_order
from actors.drafting.drafters import pick_draft_token
from actors.drafting.eagle_head import HeadCache


class EagleRows:
    """The chain half of the drafter seam (``actors/drafting/drafters.py``) for B rows of one EAGLE head, plus
    ``see_features(row, start, hidden)``: row ``row``'s target features [m, h] at positions start … start + m − 1."""

    COMPACT_SLACK = 64      # compact when slots exceed 2 · the most valid slots of a row + this (tests set 0)

    def __init__(self, drafter):
        self.drafter = drafter            # the head, its drafting vocabulary and embeddings (one home: _logits)
        self.head = drafter.head
        self.dtype, self.device = drafter.dtype, drafter.device
        self.reset(0)

    def reset(self, rows: int, sampling=None, generators=None, stop_ids=frozenset()) -> None:
        """Start a batch of ``rows`` rows."""
        self.sampling, self.generators, self.stop_ids = sampling, generators, frozenset(stop_ids)
        self.cache = HeadCache()
        self.valid = torch.zeros(rows, 0, dtype=torch.bool, device=self.device)     # [B, slots]
        self.pos = torch.zeros(rows, 0, dtype=torch.long, device=self.device)       # [B, slots]
        width = self.drafter.feature_width
        self.feats = [torch.zeros(0, width, dtype=self.dtype, device=self.device) for _ in range(rows)]
        self.true_len = [0] * rows        # head positions of each row computed from true features
        self.g: list[torch.Tensor | None] = [None] * rows

    @property
    def rows(self) -> int:
        """Rows in the batch."""
        return len(self.feats)

    def see_features(self, row: int, start: int, hidden: torch.Tensor) -> None:
        """Row ``row``'s target features from a forward the engine ran (no extra target forward)."""
        held = self.feats[row].shape[0]
        if start > held:
            raise RuntimeError(f"batch eagle drafter: row {row} gets features from position {start}, holds {held}")
        self.feats[row] = torch.cat([self.feats[row][:start], hidden.detach().to(self.dtype)])

    def begin(self, seqs: Sequence[Sequence[int]], caps: Sequence[int]) -> None:
        """Start a step after each row's committed ``seqs[b]``."""
        self.seqs = [list(s) for s in seqs]
        self.level = 0

    @torch.no_grad()
    def next(self, active: Sequence[int]) -> dict[int, tuple | None]:
        """One head forward for the ``active`` rows (the catch-up at the first level); their picks."""
        picks: dict[int, tuple | None] = {}
        feeds = {}                        # row -> (features [T, h], tokens, head positions)
        for b in active:
            N = len(self.seqs[b])
            if self.level > 0:
                feeds[b] = (self.g[b][None], [self.seqs[b][-1]], [N - 2])
                continue
            if N < 2:                     # a one-token prompt: no target feature to draft from yet
                picks[b] = None
                continue
            if self.feats[b].shape[0] < N - 1:
                raise RuntimeError(f"batch eagle drafter: row {b} has {N} committed tokens and features of "
                                   f"{self.feats[b].shape[0]} positions")
            start = min(self.true_len[b], N - 2)
            self.valid[b] &= self.pos[b] < start                      # predicted positions leave
            feeds[b] = (self.feats[b][start:N - 1], self.seqs[b][start + 1:N], list(range(start, N - 1)))
            self.true_len[b] = N - 1
        self.level += 1
        if feeds:
            g = self._forward(feeds)
            for b, (_, ids, _) in feeds.items():
                self.g[b] = g[b, len(ids) - 1]
                gen = self.generators[b] if self.generators is not None else None
                picks[b] = pick_draft_token(self.drafter.draft_logits(self.g[b][None])[0], self.sampling, gen)
                self.seqs[b].append(picks[b][0])
        return picks

    def _forward(self, feeds: dict) -> torch.Tensor:
        """One head forward; row b feeds ``feeds[b]`` after its valid slots, the others padding. g [B, T, h]."""
        if self.valid.shape[1] > 2 * int(self.valid.sum(1).max()) + self.COMPACT_SLACK:
            self.compact()
        B, T = self.rows, max(len(ids) for _, ids, _ in feeds.values())
        h = next(iter(feeds.values()))[0].shape[-1]   # one level feeds target features (catch-up) or head outputs
        x = torch.zeros(B, T, h, dtype=self.dtype, device=self.device)
        ids = torch.zeros(B, T, dtype=torch.long, device=self.device)
        pos = torch.zeros(B, T, dtype=torch.long, device=self.device)
        new_valid = torch.zeros(B, T, dtype=torch.bool, device=self.device)
        for b, (f, t, p) in feeds.items():
            n = len(t)
            x[b, :n], new_valid[b, :n] = f, True
            ids[b, :n] = torch.as_tensor(t, device=self.device)
            pos[b, :n] = torch.as_tensor(p, device=self.device)
        past = self.valid.shape[1]
        allowed = torch.zeros(B, 1, T, past + T, dtype=torch.bool, device=self.device)
        allowed[:, 0, :, :past] = self.valid[:, None, :]
        allowed[:, 0, :, past:] = torch.tril(torch.ones(T, T, dtype=torch.bool, device=self.device)) & new_valid[:, None]
        diag = torch.arange(T, device=self.device)
        allowed[:, 0, diag, past + diag] = True           # a padding query sees itself (never an empty softmax)
        emb = self.drafter.embed(ids).to(self.dtype)
        g = self.head(x, emb, pos, allowed, self.cache)                                # [B, T, h]
        self.valid = torch.cat([self.valid, new_valid], 1)
        self.pos = torch.cat([self.pos, pos], 1)
        return g

    def rollback(self, row: int, valid: int) -> None:
        """Row ``row`` keeps its first ``valid`` committed tokens (its predicted slots go at the next catch-up)."""
        self.feats[row] = self.feats[row][:valid]
        self.true_len[row] = min(self.true_len[row], max(valid - 1, 0))

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Drop finished rows; the kept ones renumbered in the given order."""
        idx = torch.tensor(list(rows), dtype=torch.long, device=self.device)
        if self.cache.k is not None:
            self.cache.k, self.cache.v = self.cache.k[idx], self.cache.v[idx]
        self.valid, self.pos = self.valid[idx], self.pos[idx]
        self.feats = [self.feats[r] for r in rows]
        self.true_len = [self.true_len[r] for r in rows]
        self.g = [self.g[r] for r in rows]

    def compact(self) -> None:
        """Gather each row's valid slots to the right end of a shorter cache (left padding)."""
        order = packed_order(self.valid)                                     # [B, width]
        if self.cache.k is not None:
            B, heads, _, d = self.cache.k.shape
            gather = order[:, None, :, None].expand(B, heads, order.shape[1], d)
            self.cache.k = torch.gather(self.cache.k, 2, gather)
            self.cache.v = torch.gather(self.cache.v, 2, gather)
        self.valid = torch.gather(self.valid, 1, order)
        self.pos = torch.gather(self.pos, 1, order)
