"""Left-padded batches for ``model.generate`` in distill's generation phases (answers, own texts)."""
from __future__ import annotations

import torch


def left_padded(prompts: list[list[int]], pad: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, attention_mask)`` [B, W], W the longest prompt: each row's pad slots first, so every row's next token
    is generated at the same column."""
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
    return ids, mask
