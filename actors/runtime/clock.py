"""The one clock every cost in specsweep is read from: the engine's step phases, and so ``specsweep calibrate`` and the
batch cost surface, which both time the engine's own steps (``actors/costs/probe.py``).

Rule: wall-clock seconds (``time.perf_counter``), the device synchronized first when it is a CUDA device, so a reading
is taken after every kernel queued before it has finished (kernels run asynchronously to the host).
"""
from __future__ import annotations

import time

import torch


def device_clock(device) -> float:
    """Seconds on the wall clock, ``device`` synchronized first on CUDA."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()
