"""``bandit`` — UCB over draft lengths, BanditSpec style.

Source: Hou et al., "BanditSpec: Adaptive Speculative Decoding via Bandit Algorithms"
(arXiv 2505.15141), algorithm UCBSpec: each speculative step plays one arm (a
speculation configuration — here a draft length γ), observes a reward, and picks
the next arm by an upper confidence bound. The per-arm bonus is the textbook UCB1
(Auer, Cesa-Bianchi and Fischer 2002).

Rule, per generation:

* Arms: the draft lengths in ``arms`` (default 1/2/3/4/6/8), sorted ascending.
* Warm-up: the first len(arms) steps play every arm once, in ascending order.
* Afterwards, with t = steps observed so far, n_a = plays of arm a and r̄_a its mean
  reward, play argmax_a r̄_a + bonus_a, the smallest γ winning ties:
    ``explore=ucb1`` (default)  bonus_a = √(c · ln t / n_a)
    ``explore=shared``          bonus_a = √(c · ln t / t) — the same for every arm.
  ``shared`` is for comparison with BanditSpec's public code, whose exploration term
  does not depend on the arm (as read for this policy; not re-checked here). A term
  equal for all arms never changes the argmax, so ``shared`` is greedy on the means
  after the warm-up.
* The played γ is k_max; drafting never stops early (the bandit chooses the length).
* Reward of a step: tokens per second, emitted / step time, scaled to [0, 1] as
  (emitted / time) · T_target / (max arm + 1) — the step's speed-up over a plain target
  step, divided by the largest number of tokens one step can emit. ``c = 2`` is
  UCB1's constant for rewards in [0, 1].
    ``reward=model`` (default): time = T_step(k) from the actor's cost model
    (``policies.costs.CostModel``: ``step_time``, ``t_target``; k = drafts verified). Deterministic, so replays reproduce it exactly.
    ``reward=clock``: time = the step's measured draft_time + verify_time (live only;
    a replay cannot reproduce clock noise).
  ``emitted`` is the step's count after EOS / ``max_new_tokens`` cuts; an outcome that
  does not record it (0) counts n + 1.
* All statistics restart with each generation.

The scale needs T_verify(1), so both reward sources read the actor's cost model.
"""
from __future__ import annotations

import math

from policies.base import GenerationContext, SequencePolicy, Step
from policies.errors import SpecsweepError


def parse_ints(text: str, minimum: int) -> list[int] | None:
    """"1/2/4" → [1, 2, 4] (sorted, unique); None unless every item is an int >= minimum."""
    try:
        vals = sorted({int(v) for v in str(text).split("/") if v.strip() != ""})
    except ValueError:
        return None
    if not vals or vals[0] < minimum:
        return None
    return vals


class Bandit(SequencePolicy):
    """UCBSpec (Hou et al. 2025, "BanditSpec: Adaptive Speculative Decoding via Bandit Algorithms") over draft lengths:
    after one warm-up play per arm, k_max = argmax_γ r̄_γ + √(c·ln t / n_γ) (UCB1, Auer et al. 2002; ``explore=shared``
    puts t for n_γ), reward = the step's tokens per second scaled to [0, 1]; statistics restart each generation."""

    name = "bandit"
    needs_costs = True

    def __init__(self, gamma: int = 0, arms: str = "1/2/3/4/6/8", c: float = 2.0, explore: str = "ucb1",
                 reward: str = "model"):
        self.arms_spec, self.c, self.explore, self.reward = arms, c, explore, reward
        self.arms = parse_ints(arms, 1)
        if self.arms is None:
            raise SpecsweepError(f"bandit: arms={arms!r} must be draft lengths >= 1 separated by '/'")
        self.cap = self.arms[-1]
        if reward == "clock":
            self.replay_blocker = "reward=clock reads the measured clock; replay it with reward=model"
        self._clear()

    def _clear(self) -> None:
        self.plays = [0] * len(self.arms)
        self.total = [0.0] * len(self.arms)
        self.t = 0
        self.current = 0

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        if ctx.costs is None:
            raise SpecsweepError("policy bandit needs the actor's cost calibration (run through an actor or --calibrate)")
        self.costs = ctx.costs
        self.scale = self.costs.t_target / (self.cap + 1)
        self._clear()

    def index(self) -> list[float]:
        """UCB index of every arm (after the warm-up)."""
        log_t = math.log(self.t)
        out = []
        for n, s in zip(self.plays, self.total):
            count = n if self.explore == "ucb1" else self.t
            out.append(s / n + math.sqrt(self.c * log_t / count))
        return out

    def _choose(self) -> int:
        if self.t < len(self.arms):
            return self.t
        idx = self.index()
        return max(range(len(idx)), key=lambda a: (idx[a], -a))

    def max_draft(self) -> int:
        return self.arms[self.current]

    def step_reward(self, o: Step) -> float:
        emitted = o.emitted if o.emitted > 0 else o.accepted + 1
        if self.reward == "clock":
            seconds = o.draft_time + o.verify_time
        else:
            seconds = self.costs.step_time(o.drafted)
        return emitted / seconds * self.scale if seconds > 0 else 0.0

    def update(self, o: Step) -> None:
        a = self.current
        self.plays[a] += 1
        self.total[a] += self.step_reward(o)
        self.t += 1
        self.current = self._choose()          # the arm the next step plays

    def params(self) -> dict:
        return {"arms": "/".join(map(str, self.arms)), "c": self.c, "explore": self.explore, "reward": self.reward}
