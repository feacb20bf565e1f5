"""The rows seam between the engine and a model's KV cache: every target forward of a generation goes through it.

A *rows runner* holds B sequences (rows) of one causal LM and answers, for every B:

* ``reset(rows)`` — an empty cache for ``rows`` rows; ``lengths[b]``: the positions row b holds;
* ``forward(feeds, last_only=False, logits=True)`` — append ``feeds[b]`` after row b's positions (a chain feed:
  ``[last token, drafts…]``, or a prefill) and return each row's logits ``[len(feeds[b]), V]`` (``[1, V]`` when
  ``last_only``; none at all when not ``logits``);
* ``forward_tree(feeds, parents)`` — row b feeds its last committed token then its tree's nodes, ``parents[b][i]``
  the index of node i's parent (-1 for the root), each node at its depth's position seeing its row's committed
  tokens and its own ancestors; ``keep_fed(row, keep, length)`` then keeps the root and the accepted path;
* ``rollback(row, length)`` — row ``row`` keeps positions ``0 … length − 1``;
* ``keep_rows(rows)`` — drop finished rows (the rest renumbered), compacting the cache as it goes;
* with ``keep_features`` set, ``features[b]``: row b's hidden states of the last forward at ``feature_layers``
  (indices into transformers' ``output_hidden_states`` tuple, concatenated; default ``(-1,)``, the final hidden
  state: ``actors/runtime/hf_api.py::hidden_features``) — an EAGLE head reads them; the same forward, never an extra one.

Three implementations: :class:`~actors.runtime.batch_runner.BatchRunner`, the gap-masked ``DynamicCache`` (eager, any B);
:class:`~actors.runtime.static_batch_runner.StaticBatchRunner`, the per-row position-indexed static cache (``static``,
``compiled`` with CUDA graphs per (rows, input length) bucket; any B, chains and trees); and :class:`OneRow`, one
chain row on a plain single-sequence runner of ``actors/runtime/runners.py`` — transformers' ``DynamicCache`` (eager: no gap
mask, no position ids to build) or the single-row static cache and its graphs. :class:`TargetRunners` picks one per
generation.
"""
from __future__ import annotations

from typing import Sequence

import torch

from actors.runtime.batch_runner import BatchRunner
from actors.runtime.hf_api import FINAL, cache_arg, hidden_features
from actors.runtime.runners import EagerRunner, make_runner
from actors.runtime.static_batch_runner import StaticBatchRunner
from actors.runtime.kv import keep_positions, tree_mask
from policies.errors import SpecsweepError


class OneRow:
    """The rows seam over one single-sequence runner (``runner``: eager or static/compiled): a batch of one row."""

    rows = 1

    def __init__(self, runner):
        self.runner = runner
        self.engine = runner.engine
        self.keep_features = False
        self.feature_layers = FINAL
        self.features: list[torch.Tensor] = []

    @property
    def lengths(self) -> list[int]:
        return [self.runner.length]

    def reset(self, rows: int = 1) -> None:
        if rows != 1:
            raise ValueError(f"a one-row runner holds 1 row, not {rows}")
        self.runner.keep_features = self.keep_features
        self.runner.feature_layers = self.feature_layers
        self.runner.reset()

    def prepare(self, max_input: int) -> None:
        self.runner.prepare(max_input)

    def forward(self, feeds: Sequence[Sequence[int]], last_only: bool = False, logits: bool = True) -> list:
        out = self.runner.forward(feeds[0], last_only=last_only or not logits)
        if self.keep_features:
            self.features = [self.runner.features]
        return [out] if logits else []

    @torch.no_grad()
    def forward_tree(self, feeds: Sequence[Sequence[int]], parents: Sequence[Sequence[int]]) -> list:
        if not isinstance(self.runner, EagerRunner):
            raise SpecsweepError(f"token trees run on the eager cache, not the {self.engine} one")
        model, ids, par = self.runner.model, list(feeds[0]), list(parents[0])
        L = self.runner.length
        depth = []
        for p in par:
            depth.append(depth[p] + 1 if p >= 0 else 0)
        dtype = next(model.parameters()).dtype
        dtype = dtype if dtype.is_floating_point else torch.float32
        device = self.runner.device
        out = model(input_ids=torch.tensor([ids], device=device), **cache_arg(self.runner.cache), use_cache=True,
                    attention_mask=tree_mask(L, par, None, dtype, device),
                    position_ids=torch.tensor([[L + d for d in depth]], device=device),
                    cache_position=torch.arange(L, L + len(ids), device=device),
                    **({"output_hidden_states": True} if self.keep_features else {}))
        self._fed = L
        if self.keep_features:
            self.features = [hidden_features(out.hidden_states, self.feature_layers)[0]]
        return [out.logits[0]]

    def keep_fed(self, row: int, keep: Sequence[int], length: int) -> None:
        keep_positions(self.runner.cache, list(range(self._fed)) + [self._fed + i for i in keep])

    def rollback(self, row: int, length: int) -> None:
        self.runner.rollback(length)

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Nothing to compact: the row stays until the next reset."""


class TargetRunners:
    """A model's rows runners for one engine kind. Eager: one row on ``EagerRunner`` (no gap mask to build; its trees
    too), a batch on the gap-masked ``DynamicCache`` (``actors/runtime/batch_runner.py``). Static/compiled: one chain row on
    ``StaticRunner`` (``actors/runtime/runners.py``), a batch or a tree on the per-row static cache
    (``actors/runtime/static_batch_runner.py``), compiled into CUDA graphs per (rows, input length) bucket."""

    def __init__(self, model, engine: str = "eager", capacity: int = 4096, inductor: bool | None = None,
                 pad_id: int = 0):
        self.model, self.pad_id, self.capacity, self.inductor = model, int(pad_id), int(capacity), inductor
        self.one = make_runner(model, engine, capacity, inductor)
        self.engine = self.one.engine
        self._one = OneRow(self.one)
        self._batch = None
        self.keep_features = False
        self.feature_layers = FINAL
        self._max_input = 1

    def prepare(self, max_input: int) -> None:
        """Capture/compile inputs of up to ``max_input`` tokens (the batch runner at its next reset)."""
        self._max_input = max(self._max_input, int(max_input))
        self.one.keep_features, self.one.feature_layers = self.keep_features, self.feature_layers   # fixed in graphs
        self.one.prepare(max_input)
        if self._batch is not None:
            self._batch.prepare(max_input)

    def for_rows(self, rows: int, tree: bool = False):
        """An emptied rows runner for a generation of ``rows`` rows (chains, or trees when ``tree``)."""
        if rows == 1 and (not tree or self.engine == "eager"):
            runner = self._one
        else:
            if self._batch is None:
                self._batch = rows_runner(self.model, self.engine, self.capacity, self.inductor, self.pad_id)
                self._batch.prepare(self._max_input)
            runner = self._batch
        runner.keep_features = self.keep_features
        runner.feature_layers = self.feature_layers
        runner.reset(rows)
        return runner


def rows_runner(model, engine: str, capacity: int = 4096, inductor: bool | None = None, pad_id: int = 0):
    """A runner for any number of rows on ``engine``: the gap-masked eager cache, or the per-row static cache
    (compiled when ``engine`` is ``compiled``)."""
    if engine == "eager":
        return BatchRunner(model, pad_id)
    return StaticBatchRunner(model, capacity, compiled=engine == "compiled", inductor=inductor, pad_id=pad_id)
