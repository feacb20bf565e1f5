"""bench/equal_work.py: configs that verify the same widths are compared at equal work, so a config whose forwards
are dearer at the same widths shows it, and widths nobody else ran are left out."""
import numpy as np
import pandas as pd
import pytest

from bench.equal_work import equal_work, main, table

BASE = {1: 0.040, 2: 0.045, 3: 0.047, 4: 0.064}       # seconds per target forward at each verified width


def row(policy: str, gamma: int, widths: list[int], unit: str, repeat: int, dearer: float = 0.0, timing: str = "",
        rng=None) -> dict:
    """One B = 1 live row verifying ``widths`` (none accepted), each forward ``1 + dearer`` × BASE with 0.5 % noise;
    a drafting step's draft phase 5 ms per draft forward."""
    noise = rng.normal(1.0, 0.005, len(widths))
    verify = [BASE[w] * (1 + dearer) * e for w, e in zip(widths, noise)]
    draft = [0.005 * (w - 1) * e for w, e in zip(widths, noise)]
    n = len(widths)
    return {"mode": "live", "status": "ok", "pair": "p", "batch_size": 1, "policy": policy,
            "policy_spec": policy, "gamma": gamma, "ar_timing": timing, "task_key": unit, "turn": 0, "repeat": repeat,
            "question_id": int(unit[1:]), "category": "qa", "prompt_ids": [1] * 20, "accept_lengths": [1] * n,
            "drafted": [w - 1 for w in widths], "accepted": [0] * n, "proposed": [w - 1 for w in widths],
            "decoding_steps": n, "new_tokens": n, "prefill_time": 0.01, "draft_time": sum(draft),
            "verify_time": sum(verify), "wall_time": 0.01 + sum(draft) + sum(verify) + 0.001 * n,
            "draft_times": draft, "verify_times": verify}


def log(fixed_dearer: float) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for q in range(4):
        for rep in range(3):
            unit = f"q{q}"
            rows += [row("ar", 0, [1] * 12, unit, rep, timing="first", rng=rng),
                     row("fixed", 3, [4] * 6, unit, rep, dearer=fixed_dearer, rng=rng),
                     row("tetris", 3, [4] * 6, unit, rep, rng=rng),
                     row("gt-batch", 3, [1, 2, 3, 2, 1, 3, 2, 2], unit, rep, rng=rng),
                     row("ar", 0, [1] * 12, unit, rep, timing="last", rng=rng)]
    return pd.DataFrame(rows)


def test_a_config_dearer_at_the_same_widths_shows_it_and_the_rest_do_not():
    t = equal_work(log(0.02), resamples=300).set_index("config")
    fixed, tetris = t.loc["fixed|3"], t.loc["tetris|3"]
    # the pooled mean at width 4 is halfway between the two: each lands about 1 % off it, 2 % apart
    assert fixed.verify - tetris.verify == pytest.approx(0.02 / 1.01, abs=0.003)
    assert fixed.verify_lo > 0 > tetris.verify_hi
    for config in ("ar|0", "ar|0 (ar last)"):
        assert abs(t.loc[config].verify) < 0.003 and t.loc[config].draft != t.loc[config].draft   # no drafting step
    assert t.loc["fixed|3"].verify_steps == 72
    same = equal_work(log(0.0), resamples=300).set_index("config")
    assert same.verify.abs().max() < 0.004
    assert all(lo <= x <= hi for x, lo, hi in zip(same.verify, same.verify_lo, same.verify_hi))
    # widths 2 and 3 only gt-batch ran: its width-1 steps alone are compared
    assert same.loc["gt-batch|3"].verify_steps == 12 * 2


def test_logs_without_step_clocks_give_nothing_and_the_command_says_so(tmp_path, capsys):
    old = log(0.0).drop(columns=["draft_times", "verify_times"])
    assert equal_work(old).empty
    assert main([str(tmp_path / "missing")]) == 2
    assert "does not exist: give a sweep's output folder" in capsys.readouterr().err
    text = table(equal_work(log(0.02), resamples=100))
    assert "| p | 1 | fixed γ 3 | 72 |" in text and "verify offsets span" in text


def test_priced_parts_gives_each_config_the_distance_to_the_configs_it_is_priced_from():
    """bench/priced_parts.py: ``fixed`` 2 % dearer at width 4 than ``tetris``, the only other config there, is priced
    from ``tetris``'s clock (about 2 % low) and ``tetris`` from its (about 2 % high); the parts add up to the total,
    and the interval covers the point."""
    from bench.priced_parts import priced_parts
    from bench.priced_parts import table as parts_table
    from policies.costs import CostModel

    model = CostModel.measured(0.005, dict(BASE))
    t = priced_parts(log(0.02), {"p": model}, resamples=60).set_index(["config", "phase"])
    fixed, tetris = t.loc[("fixed|3", "full")], t.loc[("tetris|3", "full")]
    share = BASE[4] * 1.02 / (BASE[4] * 1.02 + 3 * 0.005 + 0.001)       # verify's share of a fixed step
    assert fixed.verify == pytest.approx(-0.02 / 1.02 * share, abs=0.004)      # only the verify forward is dearer
    assert abs(fixed.draft) < 0.003 and abs(fixed.rest) < 0.003
    assert -0.03 < fixed.total < -0.005 and 0.005 < tetris.total < 0.03
    assert fixed.draft + fixed.verify + fixed.rest == pytest.approx(fixed.total)
    assert fixed.total_lo <= fixed.total <= fixed.total_hi
    assert not any(c.startswith("ar") for c, _ in t.index)
    same = priced_parts(log(0.0), {"p": model}, resamples=30).set_index(["config", "phase"])
    assert abs(same.loc[("fixed|3", "full")].verify) < 0.005
    assert "| p | 1 | fixed γ 3 | full |" in parts_table(t.reset_index())
