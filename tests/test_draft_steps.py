"""bench/draft_steps.py's shared rule: one least-squares rule over every policy's drafting steps gives back the rule
that timed them, a policy whose steps cost a constant more shows it in its residuals, and the run order rotates the
policies so drift over time slows each alike."""
import numpy as np
import pytest

from bench.draft_steps import residuals, schedule


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


def test_every_block_runs_each_policy_once_and_each_policy_leads_in_turn():
    runs = schedule(4, ["fixed", "gt-batch", "tetris"], 3)
    assert len(runs) == 36
    blocks = {}
    for block, q, spec in runs:
        blocks.setdefault(block, []).append((q, spec))
    assert sorted(blocks) == list(range(12)) and all(len({q for q, _ in b}) == 1 for b in blocks.values())
    assert all(sorted(s for _, s in b) == ["fixed", "gt-batch", "tetris"] for b in blocks.values())
    leaders = [blocks[k][0][1] for k in range(12)]
    assert {s: leaders.count(s) for s in set(leaders)} == {"fixed": 4, "gt-batch": 4, "tetris": 4}
    assert [blocks[k][0][0] for k in range(12)] == [0, 1, 2, 3] * 3
