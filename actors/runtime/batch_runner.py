"""B rows of one causal LM in one KV cache: each row at its own position, one forward for all.

The cache is transformers' ``DynamicCache`` with keys ``[B, heads, slots, head_dim]``. A forward
appends the same number of *slots* to every row; which slots a row may attend to is kept here:

* ``pos[b, s]``   — the position id written into slot s of row b (rotary/learned positions use it);
* ``valid[b, s]`` — whether slot s holds one of row b's committed tokens.

Row b holds positions ``0 … length[b] − 1``, each in exactly one valid slot, in increasing slot
order (a write always lands after every slot it may see). A forward over rows fed different
numbers of tokens pads the short rows with masked slots; ``rollback(b, n)`` masks every slot of
row b at position ≥ n (rejected drafts), so no row ever recomputes what it accepted and no row
waits on another. The model gets the validity as its 2-D attention mask and per-row position ids,
so its causal mask (by slot) and the padding mask (by validity) together let each query see
exactly its own row's earlier tokens.

Trees (``forward_tree``): row b feeds its last committed token and its tree's nodes in one forward;
each node sits at position length + depth and sees its row's committed tokens and its own
ancestors (a 4-D mask per row); ``keep_fed`` then keeps the root and the accepted path's slots.

Masked slots accumulate; ``compact()`` (run when they outnumber the valid ones) gathers each
row's valid slots to the right end of a shorter cache, a left-padded layout. ``keep_rows`` drops
finished rows from the batch.
"""
from __future__ import annotations

from typing import Sequence

import torch

from actors.runtime.hf_api import FINAL, cache_arg, hidden_features
from actors.runtime.kv import new_cache


class BatchRunner:
    """One model, ``rows`` sequences, one gap-masked ``DynamicCache`` (module docstring)."""

    COMPACT_SLACK = 64      # compact when slots exceed 2 · the longest row + this (tests set 0: every forward)

    def __init__(self, model, pad_id: int = 0):
        self.model = model
        self.device = model.device
        self.pad_id = int(pad_id)
        self.keep_features = False      # an EAGLE head reads the target's hidden states of every forward
        self.feature_layers = FINAL     # which of them (``actors/runtime/hf_api.py::hidden_features``)
        self.features: list[torch.Tensor] = []
        self.reset(0)

    def prepare(self, max_input: int) -> None:
        """Nothing to capture: the eager cache runs every shape as it comes."""

    def reset(self, rows: int) -> None:
        """An empty cache for ``rows`` sequences."""
        self.cache = new_cache(self.model)
        self.lengths = [0] * rows                                             # committed positions held per row
        self.valid = torch.zeros(rows, 0, dtype=torch.bool, device=self.device)   # [B, slots]
        self.pos = torch.zeros(rows, 0, dtype=torch.long, device=self.device)     # [B, slots]

    @property
    def rows(self) -> int:
        """Sequences in the batch."""
        return len(self.lengths)

    @property
    def slots(self) -> int:
        """Slots per row in the cache, masked ones included."""
        return int(self.valid.shape[1])

    @torch.no_grad()
    def forward(self, feeds: Sequence[Sequence[int]], last_only: bool = False,
                logits: bool = True) -> list[torch.Tensor]:
        """Append ``feeds[b]`` after row b's ``length`` and return each row's logits, ``[len(feeds[b]), V]``
        (``[1, V]`` when ``last_only``; an empty feed returns ``[0, V]`` and changes nothing for that row; no logits at
        all, ``[]``, when not ``logits``: a prefill). The LM head runs only on the positions returned."""
        if len(feeds) != self.rows:
            raise ValueError(f"{len(feeds)} feeds for a batch of {self.rows} rows")
        if self.slots > 2 * max(self.lengths, default=0) + self.COMPACT_SLACK:
            self.compact()
        m = max(len(f) for f in feeds)
        if m == 0:
            return [torch.empty(0, 0, device=self.device) for _ in feeds]
        n_new = torch.tensor([len(f) for f in feeds], device=self.device)                    # [B]
        ids = torch.tensor([list(f) + [self.pad_id] * (m - len(f)) for f in feeds], device=self.device)   # [B, m]
        ar = torch.arange(m, device=self.device)
        new_valid = ar[None, :] < n_new[:, None]                                                # [B, m]
        new_pos = torch.tensor(self.lengths, device=self.device)[:, None] + ar[None, :]          # [B, m]
        self.valid = torch.cat([self.valid, new_valid], 1)
        self.pos = torch.cat([self.pos, new_pos], 1)
        # a padded query still sees its row's earlier tokens (never an empty softmax); its output is unused
        mask = self.valid.clone()
        mask[:, -m:] |= ~new_valid & (torch.tensor(self.lengths, device=self.device) == 0)[:, None]
        keep = {}
        if not logits:
            keep = {"logits_to_keep": 1}
        elif last_only:       # each row's last fed position: [B, 1]
            keep = {"logits_to_keep": (n_new - 1).clamp(min=0)[:, None]}
        out = self.model(input_ids=ids, attention_mask=mask.long(), position_ids=new_pos,
                         **cache_arg(self.cache), use_cache=True, **self._hidden(), **keep)
        for b, f in enumerate(feeds):
            self.lengths[b] += len(f)
        self._keep_features(out, feeds)
        if not logits:
            return []
        # [B, 1, V] (last_only) or [B, m, V]
        return [out.logits[b, :min(len(f), 1)] if last_only else out.logits[b, :len(f)] for b, f in enumerate(feeds)]

    def _hidden(self) -> dict:
        """The forward's extra argument when features are kept."""
        return {"output_hidden_states": True} if self.keep_features else {}

    def _keep_features(self, out, feeds) -> None:
        """``features[b]``: row b's hidden states at ``feature_layers`` [len(feeds[b]), width] from this forward (same
        forward, no extra)."""
        if self.keep_features:
            hidden = hidden_features(out.hidden_states, self.feature_layers)                    # [B, m, width]
            self.features = [hidden[b, :len(f)] for b, f in enumerate(feeds)]

    @torch.no_grad()
    def forward_tree(self, feeds: Sequence[Sequence[int]], parents: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """Row b feeds ``feeds[b]`` — its last committed token (index 0, the root) then tree nodes, parents first —
        with ``parents[b][i]`` the index in ``feeds[b]`` of node i's parent (-1 for the root); returns each row's
        logits ``[len(feeds[b]), V]``. The row's new slots stay until :meth:`keep_fed`."""
        if self.slots > 2 * max(self.lengths, default=0) + self.COMPACT_SLACK:
            self.compact()
        B, m, past = self.rows, max(len(f) for f in feeds), self.slots
        allowed = torch.zeros(B, m, past + m, dtype=torch.bool)
        allowed[:, :, :past] = self.valid.cpu()[:, None, :]
        depth = torch.zeros(B, m, dtype=torch.long)
        for b, par in enumerate(parents):
            for i, p in enumerate(par):
                depth[b, i] = depth[b, p] + 1 if p >= 0 else 0
                j = i
                while j >= 0:                       # a node sees itself and its ancestors
                    allowed[b, i, past + j] = True
                    j = par[j]
            allowed[b, len(par):, past] = True      # padding queries see the root only (never an empty softmax)
        dtype = next(self.model.parameters()).dtype
        dtype = dtype if dtype.is_floating_point else torch.float32
        mask = torch.zeros(B, 1, m, past + m, dtype=dtype)
        mask[~allowed[:, None]] = torch.finfo(dtype).min
        n_new = torch.tensor([len(f) for f in feeds])
        new_valid = (torch.arange(m)[None, :] < n_new[:, None]).to(self.device)
        start = torch.tensor(self.lengths)[:, None]                    # the root's position
        new_pos = (start + depth).to(self.device)
        ids = torch.tensor([list(f) + [self.pad_id] * (m - len(f)) for f in feeds], device=self.device)
        self.valid = torch.cat([self.valid, new_valid], 1)
        self.pos = torch.cat([self.pos, new_pos], 1)
        self._fed = (past, [len(f) for f in feeds])
        out = self.model(input_ids=ids, attention_mask=mask.to(self.device), position_ids=new_pos,
                         cache_position=torch.arange(past, past + m, device=self.device),
                         **cache_arg(self.cache), use_cache=True, **self._hidden())
        self._keep_features(out, feeds)
        return [out.logits[b, :len(f)] for b, f in enumerate(feeds)]

    def keep_fed(self, row: int, keep: Sequence[int], length: int) -> None:
        """After :meth:`forward_tree`: row ``row`` keeps the fed tokens at indices ``keep`` (the root and the accepted
        path, in order) and then holds positions ``0 … length − 1``."""
        start, counts = self._fed
        drop = torch.ones(counts[row], dtype=torch.bool, device=self.device)
        drop[list(keep)] = False
        self.valid[row, start:start + counts[row]] &= ~drop
        self.lengths[row] = length

    def rollback(self, row: int, length: int) -> None:
        """Row ``row`` keeps positions ``0 … length − 1``."""
        if length < self.lengths[row]:
            self.valid[row] &= self.pos[row] < length
            self.lengths[row] = length

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Drop every row not in ``rows`` (finished sequences leave the batch); the kept rows are renumbered
        0 … len(rows) − 1 in the given order."""
        idx = torch.tensor(list(rows), dtype=torch.long, device=self.device)
        for layer in self.cache.layers:
            if getattr(layer, "keys", None) is not None and layer.keys.numel():
                layer.keys, layer.values = layer.keys[idx], layer.values[idx]
        self.valid, self.pos = self.valid[idx], self.pos[idx]
        self.lengths = [self.lengths[r] for r in rows]

    def compact(self) -> None:
        """Gather each row's valid slots to the right end of a cache ``max(length)`` slots long (left padding)."""
        if max(self.lengths, default=0) == self.slots:
            return
        B = self.rows
        order = packed_order(self.valid)                                                    # [B, width]
        width = order.shape[1]
        for layer in self.cache.layers:
            if getattr(layer, "keys", None) is None or not layer.keys.numel():
                continue
            h, d = layer.keys.shape[1], layer.keys.shape[3]
            gather = order[:, None, :, None].expand(B, h, width, d)
            layer.keys = torch.gather(layer.keys, 2, gather)
            layer.values = torch.gather(layer.values, 2, gather)
        self.valid = torch.gather(self.valid, 1, order)
        self.pos = torch.gather(self.pos, 1, order)


def packed_order(valid: torch.Tensor) -> torch.Tensor:
    """[B, width] slot indices that gather each row's valid slots, in slot order, to the right end of ``width`` slots
    (left padding), ``width`` being the most valid slots of any row. Slot order is position order, so a stable sort
    of "invalid first" puts row b's valid slots, in order, last."""
    width = int(valid.sum(1).max()) if valid.numel() else 0
    return torch.sort(valid.to(torch.int8), dim=1, stable=True).indices[:, valid.shape[1] - width:]
