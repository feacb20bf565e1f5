"""``dv-threshold`` — Draft & Verify's self-tuning confidence stop.

Source: Zhang et al., "Draft & Verify: Lossless Large Language Model Acceleration via
Self-Speculative Decoding" (ACL 2024), public code ``decoding.py``,
function ``exact_self_speculative_generate`` (arguments ``th_stop_draft``,
``max_step_draft``, ``auto_th_stop_draft``, ``auto_parameters``).

Rule, per step:

* k_max = ``cap`` (the code's ``max_step_draft`` = 8); the initial γ is ignored.
* After proposal i, stop drafting when the draft's top probability max q < θ. That
  proposal is still verified (the code breaks after keeping it).
* After verification of k ≥ 1 drafts with n accepted (``adaptive=true``, updated
  every step as ``auto_parameters[0] = 1`` says):

      m  ← β1·m + (1 − β1)·(n / k)                 m starts at 0 each generation
      θ' = θ + ε                 if m < target
           θ                     if m ≥ target and k ≥ cap  (the draft hit its cap)
           θ − ε                 otherwise
      θ  ← β2·θ + (1 − β2)·θ'

  with the code's defaults θ0 = 0.8, β1 = 0.5, target = 0.9, ε = 0.01, β2 = 0.9.
  θ is not clipped (the code does not clip it either). A step with k = 0 (the engine
  had room for no draft) carries no acceptance information and leaves m and θ as
  they are.

What we read differently from the code, stated once: the code compares the top
probability of the raw softmax; ``q_max`` here is the top probability of the
distribution the draft proposes from (the same thing under greedy decoding; under
sampling it includes temperature and top-p).

:class:`AdaptiveThreshold` (the m/θ recursion) is shared with ``adaedl``.
"""
from __future__ import annotations

from policies.base import MORE, STOP, GenerationContext, SequencePolicy, Step


class AdaptiveThreshold:
    """Draft & Verify's threshold recursion (see the module docstring)."""

    def __init__(self, start: float, target: float, beta1: float, beta2: float, eps: float, cap: int,
                 adaptive: bool = True):
        self.start, self.target, self.beta1, self.beta2, self.eps, self.cap = start, target, beta1, beta2, eps, cap
        self.adaptive = adaptive
        self.reset()

    def reset(self) -> None:
        self.value = self.start
        self.m = 0.0

    def update(self, drafted: int, accepted: int) -> None:
        if not self.adaptive or drafted <= 0:
            return
        self.m = self.beta1 * self.m + (1.0 - self.beta1) * (accepted / drafted)
        if self.m < self.target:
            proposal = self.value + self.eps
        elif drafted >= self.cap:
            proposal = self.value
        else:
            proposal = self.value - self.eps
        self.value = self.beta2 * self.value + (1.0 - self.beta2) * proposal


class AdaptiveStop(SequencePolicy):
    """Draft up to ``cap`` tokens per step under a stopping threshold tuned by :class:`AdaptiveThreshold`;
    subclasses say when a proposal fails the threshold (``after_draft``)."""

    def __init__(self, start: float, target: float, cap: int, adaptive: bool, beta1: float, beta2: float,
                 eps: float):
        self.cap = cap
        self.gamma = cap
        self.th = AdaptiveThreshold(start, target, beta1, beta2, eps, cap, adaptive)

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        self.th.reset()

    def max_draft(self) -> int:
        return self.cap

    def update(self, o: Step) -> None:
        self.th.update(o.drafted, o.accepted)


class DVThreshold(AdaptiveStop):
    """Draft & Verify (Zhang et al. 2024, "Draft & Verify: Lossless Large Language Model Acceleration via
    Self-Speculative Decoding"): stop drafting after a proposal whose top draft probability max q < θ (that proposal is
    still verified), k_max = ``cap``; θ is tuned online to acceptance by :class:`AdaptiveThreshold`."""

    name = "dv-threshold"

    def __init__(self, gamma: int = 0, theta: float = 0.8, target: float = 0.9, cap: int = 8,
                 adaptive: bool = True, beta1: float = 0.5, beta2: float = 0.9, eps: float = 0.01):
        super().__init__(theta, target, cap, adaptive, beta1, beta2, eps)

    @property
    def theta(self) -> float:
        return self.th.value

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        return STOP if q_max < self.th.value else MORE

    def params(self) -> dict:
        t = self.th
        return {"theta": t.start, "target": t.target, "cap": self.cap, "adaptive": t.adaptive,
                "beta1": t.beta1, "beta2": t.beta2, "eps": t.eps}
