"""A draft whose output head covers only the most frequent target tokens.

The wrapped model has ``len(kept_ids) + 1`` rows: row ``i < K`` is full-vocabulary
token ``kept_ids[i]`` and row ``K`` stands for every other token on input. Its
logits are scattered back to the full vocabulary with ``-inf`` elsewhere, so the
draft distribution q is an ordinary distribution over the target's vocabulary
that is zero outside ``kept_ids``; the accept/reject rule needs nothing more and
verification stays exact (a token the draft cannot propose is simply never
drafted; the residual max(0, p - q) equals p there).
"""
from __future__ import annotations

import torch
from torch import nn


class ReducedVocabLM(nn.Module):
    """A draft whose head covers only ``kept_ids`` (plus one catch-all input row), with logits scattered back to the
    full vocabulary and −inf elsewhere, so q is a full-vocabulary distribution that is zero outside ``kept_ids``."""

    def __init__(self, model: nn.Module, kept_ids, full_vocab_size: int):
        super().__init__()
        self.model = model
        self.config = model.config
        self.full_vocab_size = int(full_vocab_size)
        kept = torch.as_tensor(list(kept_ids), dtype=torch.long)
        to_reduced = torch.full((self.full_vocab_size,), len(kept), dtype=torch.long)
        to_reduced[kept] = torch.arange(len(kept))
        self.register_buffer("kept_ids", kept, persistent=False)
        self.register_buffer("to_reduced", to_reduced, persistent=False)

    @property
    def device(self):
        return self.kept_ids.device

    def forward(self, input_ids, **kwargs):
        out = self.model(input_ids=self.to_reduced[input_ids], **kwargs)
        small = out.logits[..., : len(self.kept_ids)]
        full = small.new_full((*small.shape[:-1], self.full_vocab_size), float("-inf"))
        full[..., self.kept_ids] = small
        out.logits = full
        return out
