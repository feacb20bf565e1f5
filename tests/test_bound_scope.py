"""The oracle bound's scope (``jobs/report/bound_scope.py``): fraction of oracle and the bound check compare the
same rows — replayed chain configs at B = 1, priced on the bound's cost surface — and the report states what is
left out (live rows in ``mode: both``, batch policies at B = 1), a rollout_length below a cap, and B > 1."""
from __future__ import annotations

import pandas as pd
import pytest

from jobs.report import metrics
from jobs.report.bound_scope import bound_text, comparable_to_bound, scope_notes
from tests.helpers import q_rows


def _log(extra=()) -> pd.DataFrame:
    """The bound at 20 tok/s on three questions; fixed replayed at 10; tetris replayed at B = 1 at 40 (priced on the
    batch surface: faster than the bound, which it cannot be on the bound's own surface); ar live."""
    rows = []
    for policy, tok, mode in [("oracle-bound", 20, "replay"), ("fixed", 10, "replay"), ("tetris", 40, "replay"),
                              ("ar", 5, "live"), *extra]:
        for r in q_rows(policy, 0 if policy in ("ar", "oracle-bound") else 3, [tok] * 3):
            rows.append({**r, "mode": mode, "batch_size": 1, "config_key": f"p|{policy}|{mode}",
                         "k_max": [3] * 10 if policy == "fixed" else [0] * 10})
    return pd.DataFrame(rows)


def test_fraction_and_bound_check_leave_out_the_same_batch_policy_rows():
    df = _log()
    frac = metrics.fraction_of_oracle(df).set_index("policy_spec")
    assert set(frac.index) == {"fixed"} and frac.loc["fixed", "fraction_of_oracle"] == pytest.approx(0.5)
    check = metrics.bound_check(df)
    assert check == {"turns": 3, "violations": 0, "worst": 0.0}         # tetris' 40 tok/s is not a violation
    assert not comparable_to_bound(df[df["policy"] == "tetris"]).any()
    notes = scope_notes(df)
    assert any("batch policies at B = 1 (tetris)" in n for n in notes)


def test_live_rows_are_not_set_against_the_predicted_bound():
    """mode: both — the same config live at 30 tok/s: no fraction from it, and the report says so."""
    df = _log([("gammatune", 30, "live")])
    frac = metrics.fraction_of_oracle(df)
    assert "gammatune" not in set(frac["policy_spec"])
    notes = scope_notes(df)
    assert any("live config(s) are not set against the oracle bound" in n for n in notes)
    text = bound_text(metrics.bound_check(df), frac, notes)
    assert text.startswith("oracle bound ≤ every comparable replayed config on all 3 turns") and "live" in text


def test_a_live_oracle_is_compared_within_its_own_mode():
    rows = [{**r, "mode": m} for p, tok, m in [("oracle", 20, "live"), ("fixed", 10, "live"), ("fixed", 5, "replay")]
            for r in q_rows(p, 3, [tok] * 3)]
    frac = metrics.fraction_of_oracle(pd.DataFrame(rows))
    assert list(frac["fraction_of_oracle"]) == pytest.approx([0.5])


def test_a_rollout_shorter_than_a_cap_and_batches_are_stated():
    df = _log()
    assert not any("rollout_length" in n for n in scope_notes(df, rollout_length=4))
    note = [n for n in scope_notes(df, rollout_length=2) if "rollout_length" in n]
    assert note and "up to 3, fixed" in note[0] and "at most 2 drafts a step" in note[0]
    batched = pd.concat([df, df.assign(batch_size=2, pair="p@B2")])
    assert any("no oracle bound at B > 1" in n for n in scope_notes(batched))
    assert "no oracle bound at B > 1" in bound_text({"turns": 0}, pd.DataFrame(), scope_notes(batched[
        batched["policy"] != "oracle-bound"]))


@pytest.mark.parametrize("turns, said", [(1, "on its one turn"), (2, "on both turns"), (5, "on all 5 turns")])
def test_the_bound_line_counts_turns_in_words(turns, said):
    text = bound_text({"turns": turns, "violations": 0, "worst": 0.0}, pd.DataFrame())
    assert text == f"oracle bound ≤ every comparable replayed config {said}"
