"""``ema-steps`` — SGLang's adaptive speculative steps.

Source: SGLang, ``python/sglang/srt/speculative/adaptive_spec_params.py``, class
``AdaptiveStepSlot`` (methods ``update`` and ``_recompute_params``), with the defaults
of its ``DEFAULT_ADAPTIVE_CONFIG`` entry for batch size 1.

Rule (γ = SGLang's ``speculative_num_steps``, the number of drafted tokens):

* Candidates C = sorted unique ``candidates`` (default 1/3/5/7). γ starts at the
  initial γ if it is a candidate, else at C[len(C) // 2] (5 for the default).
  The EMA starts at γ − 1.
* After each step with n accepted drafts: if γ > 0, ema ← (1 − α)·ema + α·n. The
  step counter b increases by one. γ is re-decided only when b > ``warmup`` and
  (b − ``warmup``) is a multiple of ``interval``:
    - γ = 0 (drafting off): move to the next candidate (if the EMA is negative it is
      set to that candidate − 1).
    - otherwise step **down** while ema ≤ (prev − 0.5 + down_hysteresis), where prev
      is the next lower candidate (0.5 + down_hysteresis when prev = 0);
    - if it did not move down, step **up** while ema > (γ − 0.5 + up_hysteresis);
    - ``ceiling_coeff`` > 0: a target that is not above the old γ is lowered to the
      largest candidate ≤ max(1, ⌈ema · ceiling_coeff⌉) (off by default).
* Defaults (batch size 1): α = 0.2, interval = 5, warmup = 10, up_hysteresis = 0,
  down_hysteresis = −0.25, ceiling_coeff = 0.

Scope, stated once: SGLang keeps this state for the life of the server; here it
restarts with each generation unless ``persist=true`` (then the first generation
starts it and later generations continue from where the previous one ended).
A candidate 0 is allowed (k_max = 0 is a plain target step), as in SGLang.
"""
from __future__ import annotations

import math

from policies.bandit import parse_ints
from policies.base import GenerationContext, SequencePolicy, Step
from policies.errors import SpecsweepError


class EmaSteps(SequencePolicy):
    """SGLang's adaptive speculative steps (``AdaptiveStepSlot``): ema ← (1 − α)·ema + α·n after each step; every
    ``interval`` steps after ``warmup``, γ steps down the candidate list while ema ≤ prev − 0.5 + down_hysteresis, else
    up while ema > γ − 0.5 + up_hysteresis; the state restarts each generation unless ``persist``."""

    name = "ema-steps"

    def __init__(self, gamma: int = 4, candidates: str = "1/3/5/7", alpha: float = 0.2, interval: int = 5,
                 warmup: int = 10, up_hysteresis: float = 0.0, down_hysteresis: float = -0.25,
                 ceiling_coeff: float = 0.0, persist: bool = False):
        self.cands = parse_ints(candidates, 0)
        if self.cands is None:
            raise SpecsweepError(f"ema-steps: candidates={candidates!r} must be integers >= 0 separated by '/'")
        self.initial = gamma
        self.alpha, self.interval, self.warmup = alpha, interval, warmup
        self.up_hysteresis, self.down_hysteresis, self.ceiling_coeff = up_hysteresis, down_hysteresis, ceiling_coeff
        self.persist = persist
        self.k_min, self.cap = self.cands[0], self.cands[-1]
        self.started = False
        self._start()

    def _start(self) -> None:
        self.steps = self.initial if self.initial in self.cands else self.cands[len(self.cands) // 2]
        self.ema = float(self.steps - 1)
        self.count = 0

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        if not (self.persist and self.started):
            self._start()
        self.started = True

    def max_draft(self) -> int:
        return self.steps

    def update(self, o: Step) -> None:
        if self.steps > 0:
            self.ema = (1.0 - self.alpha) * self.ema + self.alpha * o.accepted
        self.count += 1
        if self.count <= self.warmup or (self.count - self.warmup) % self.interval != 0:
            return
        self.steps = self._recompute()

    def _recompute(self) -> int:
        c = self.cands
        old = self.steps
        i = c.index(old)
        if old == 0:
            i = min(i + 1, len(c) - 1)
            if c[i] > 0 and self.ema < 0:
                self.ema = float(c[i] - 1)
            return c[i]
        start = i
        while i > 0:
            prev = c[i - 1]
            drop = (0.5 if prev == 0 else prev - 0.5) + self.down_hysteresis
            if self.ema <= drop:
                i -= 1
            else:
                break
        if i == start:
            while i < len(c) - 1 and self.ema > c[i] - 0.5 + self.up_hysteresis:
                i += 1
        if self.ceiling_coeff > 0:
            ceiling = max(1, math.ceil(self.ema * self.ceiling_coeff))
            if ceiling < c[i] <= old:
                while i > 0 and c[i] > ceiling:
                    i -= 1
        return c[i]

    def params(self) -> dict:
        return {"candidates": "/".join(map(str, self.cands)), "alpha": self.alpha, "interval": self.interval,
                "warmup": self.warmup, "up_hysteresis": self.up_hysteresis, "down_hysteresis": self.down_hysteresis,
                "ceiling_coeff": self.ceiling_coeff, "persist": self.persist}
