"""bench/draft_steps.py's shared rule: one least-squares rule over every policy's drafting steps gives back the rule
that timed them, and a policy whose steps cost a constant more shows it in its residuals."""
import numpy as np
import pytest

from bench.draft_steps import residuals


def steps(offsets: dict[str, float]) -> list[tuple]:
    """(policy, generation, ℓ, caught up, tokens before, seconds) timed by 0.8 + 5.4·ℓ + 0.3·[caught] +
    0.4·ℓ·tokens/100 ms, plus the policy's offset."""
    rng = np.random.default_rng(0)
    out = []
    for g, spec in enumerate(s for s in offsets for _ in range(4)):
        for _ in range(12):
            m, caught, before = int(rng.integers(1, 5)), bool(rng.integers(0, 2)), int(rng.integers(0, 64))
            ms = 0.8 + 5.4 * m + 0.3 * caught + 0.4 * m * before / 100 + offsets[spec]
            out.append((spec, g, m, caught, before, ms / 1e3))
    return out


def test_the_shared_rule_is_given_back_and_a_dearer_policy_shows_in_its_residuals():
    coef, res = residuals(steps({"fixed": 0.0, "gt-batch": 0.0}))
    assert coef == pytest.approx([0.8, 5.4, 0.3, 0.4], abs=1e-9) and np.abs(res).max() < 1e-9
    rows = steps({"fixed": 0.3, "gt-batch": -0.3})
    _, res = residuals(rows)
    mean = {s: res[[r[0] == s for r in rows]].mean() for s in ("fixed", "gt-batch")}
    assert mean["fixed"] - mean["gt-batch"] == pytest.approx(0.6, abs=0.05)
