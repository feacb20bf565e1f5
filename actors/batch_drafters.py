"""Drafters for a batch of rows: one draft forward per level for every row still drafting.

The batch drafter seam (what ``actors/step.py``'s ``batch_chain_step`` asks of it):

* ``reset(rows, sampling, generators, stop_ids)`` starts a batch; ``generators[b]`` is row b's
  ``torch.Generator`` under sampling (each row samples from its own);
* ``begin(seqs, caps)`` starts a step: ``seqs[b]`` is row b's committed tokens, ``caps[b]`` its cap;
* ``next(active)`` drafts one more token for each row in ``active`` and returns, per row, the
  pick ``(x, q(x), max q, H(q), q_row)`` of ``actors/drafters.py::pick_draft_token`` — or None
  when the row has nothing to propose (n-gram without a match);
* ``rollback(row, valid)`` keeps row ``row``'s first ``valid`` committed tokens;
* ``keep_rows(rows)`` drops finished rows (the rest renumbered in the given order).

Greedy picks are each row's own argmax; sampled picks draw from each row's own generator, so a
row's drafts do not depend on which other rows share its batch.
"""
from __future__ import annotations

from typing import Sequence

import torch

from actors.batch_runner import BatchRunner
from actors.drafters import NgramDrafter, pick_draft_token


class BatchModelDrafter:
    """A draft LM over a :class:`~actors.batch_runner.BatchRunner`: each level feeds each drafting row what its
    cache lacks (the step's catch-up first, then one token)."""

    name = "model"

    def __init__(self, model, pad_id: int = 0):
        self.model = model
        self.runner = BatchRunner(model, pad_id)

    def reset(self, rows: int, sampling=None, generators=None, stop_ids=frozenset()) -> None:
        """Start a batch of ``rows`` rows (module docstring)."""
        self.sampling, self.generators, self.stop_ids = sampling, generators, frozenset(stop_ids)
        self.runner.reset(rows)

    def begin(self, seqs: Sequence[Sequence[int]], caps: Sequence[int]) -> None:
        """Start a step after each row's committed ``seqs[b]``."""
        self.seqs = [list(s) for s in seqs]

    @torch.no_grad()
    def next(self, active: Sequence[int]) -> dict[int, tuple | None]:
        """One draft forward for the ``active`` rows; their picks."""
        act = set(active)
        feeds = [self.seqs[b][self.runner.lengths[b]:] if b in act else [] for b in range(self.runner.rows)]
        logits = self.runner.forward(feeds, last_only=True)
        picks = {}
        for b in active:
            gen = self.generators[b] if self.generators is not None else None
            picks[b] = pick_draft_token(logits[b][-1], self.sampling, gen)
            self.seqs[b].append(picks[b][0])
        return picks

    def rollback(self, row: int, valid: int) -> None:
        """Row ``row`` keeps its first ``valid`` committed tokens."""
        self.runner.rollback(row, valid)

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Drop finished rows."""
        self.runner.keep_rows(rows)


class BatchNgramDrafter:
    """Prompt lookup per row (``actors/drafters.py::NgramDrafter``): the row's continuation, served a level at a time."""

    name = "ngram"

    def __init__(self, n_max: int = 3, n_min: int = 1):
        self.lookup = NgramDrafter(n_max, n_min)

    def reset(self, rows: int, sampling=None, generators=None, stop_ids=frozenset()) -> None:
        """Start a batch (n-gram proposals are point masses: sampling settings do not change them)."""
        self.stop_ids = frozenset(stop_ids)

    def begin(self, seqs: Sequence[Sequence[int]], caps: Sequence[int]) -> None:
        """Each drafting row's continuation of up to its cap tokens."""
        self.queue = [self.lookup.continuation(s, c) if c > 0 else [] for s, c in zip(seqs, caps)]
        self.level = 0

    def next(self, active: Sequence[int]) -> dict[int, tuple | None]:
        """The next token of each active row's continuation (None past its end); q is a point mass."""
        picks = {b: ((self.queue[b][self.level], 1.0, 1.0, 0.0, None) if self.level < len(self.queue[b]) else None)
                 for b in active}
        self.level += 1
        return picks

    def rollback(self, row: int, valid: int) -> None:
        """Nothing cached."""

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Nothing cached."""
