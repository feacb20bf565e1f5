"""``specsweep tune`` (jobs/tune/cli.py) and the regret against the oracle bound (jobs/report/regret.py)."""
import contextlib
import io
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from jobs.report.regret import regret_md, regret_table
from jobs.tune.cli import parse_grid, split_questions
from tests.replay_folders import tune_rows


def _cli(*argv) -> int:
    from jobs.cli import main

    return main(list(argv))


# ---------------------------------------------------------------- regret
def _row(q, policy, gamma, t, spec=None):
    return {"pair": "p", "question_id": q, "turn": 0, "repeat": 0, "policy": policy, "policy_spec": spec or policy,
            "gamma": gamma, "wall_time": t, "mode": "replay", "status": "ok", "batch_size": 1}


def test_regret_and_gap_on_a_scripted_log():
    rows = [_row(1, "oracle-bound", 0, 1.0, "oracle (bound)"), _row(2, "oracle-bound", 0, 2.0, "oracle (bound)"),
            _row(1, "fixed", 1, 1.5), _row(2, "fixed", 1, 2.5), _row(1, "fixed", 2, 1.2), _row(2, "fixed", 2, 3.0),
            _row(1, "x", 4, 1.1), _row(2, "x", 4, 2.2),
            {**_row(1, "x", 8, 0.5), "mode": "live"}]                    # a live row has no bound: left out
    t = regret_table(pd.DataFrame(rows)).set_index(["policy_spec", "gamma"])
    x = t.loc[("x", 4)]
    assert x["regret_ms"] == pytest.approx(150.0)                       # (0.1 + 0.2) / 2 questions
    assert x["regret_share"] == pytest.approx(0.3 / 3.0)
    assert x["gap_fixed_ms"] == pytest.approx(-200.0)                   # best fixed per turn: 1.2 and 2.5
    assert x["regret_ms_lo"] <= 150.0 <= x["regret_ms_hi"] and x["questions"] == 2
    assert t.loc[("fixed", 1), "gap_fixed_ms"] == pytest.approx(150.0)  # (0.3 + 0) / 2
    assert ("x", 8) not in t.index and ("oracle (bound)", 0) not in t.index
    assert "Regret against the oracle bound" in regret_md(t.reset_index())
    assert regret_table(pd.DataFrame([r for r in rows if r["policy"] != "oracle-bound"])).empty


def test_regret_on_a_replayed_trace_is_time_minus_the_bound():
    from actors.tracing.oracle_bound import SchedulePolicy, replay_bound
    from actors.tracing.replay import replay
    from jobs.replay_cli import _row as log_row
    from actors.rollouts import Rollout, Trace
    from policies import build
    from policies.costs import CostModel

    reference = [0, 1, 2, 3, 0, 1, 2, 3]
    match = [4, 0, 2, 0, 1, 3, 0, 0]                     # leading proposals at j that equal the reference
    rollouts = []
    for j, n in enumerate(match):
        toks = [reference[j + i] if i < n and j + i < 8 else (reference[min(j + i, 7)] + 1) % 4 for i in range(4)]
        rollouts.append(Rollout(toks, [0.5] * 4, [0.6] * 4, [1.0] * 4))
    trace = Trace(prompt_ids=[1, 2, 3], reference=reference, finished_by_eos=False, max_new_tokens=8, max_draft=4,
                  eos_ids=[9], rollouts=rollouts, prefill_time=0.03)
    trace.meta = {"question_id": 7, "turn": 0}
    m = CostModel(draft={"per_step": 0.002, "per_proposal": 0.004, "per_catchup": 0.003, "per_catchup_token": 0.001,
                         "per_proposal_kctx": 0.0}, table={"knots": [1, 2, 4], "values": [0.05, 0.055, 0.07],
                                                           "per_kctx": 0.0, "per_token_kctx": 0.0}, overhead=0.004)
    bound, g = replay_bound(trace, m)
    rows = [log_row(trace, "p", "oracle (bound)", "oracle-bound", {}, 0, g)]
    times = {}
    for gamma in (1, 2, 3):
        r = replay(trace, build(("fixed", {}), gamma), cost_model=m)
        times[gamma] = r.wall_time
        rows.append(log_row(trace, "p", "fixed", "fixed", {}, gamma, r))
    same = replay(trace, SchedulePolicy(bound.schedule), cost_model=m)      # the bound's own schedule: no regret
    rows.append(log_row(trace, "p", "schedule", "schedule", {}, 0, same))
    t = regret_table(pd.DataFrame(rows)).set_index(["policy_spec", "gamma"])
    for gamma, wall in times.items():
        assert t.loc[("fixed", gamma), "regret_ms"] == pytest.approx(1e3 * (wall - bound.wall_time))
        assert t.loc[("fixed", gamma), "regret_ms"] >= 0
        assert t.loc[("fixed", gamma), "gap_fixed_ms"] == pytest.approx(1e3 * (wall - min(times.values())))
    assert t.loc[("schedule", 0), "regret_ms"] == pytest.approx(0.0, abs=1e-9)


# ---------------------------------------------------------------- split and grid
def test_split_is_seeded_half_and_half():
    train, held = split_questions([5, 1, 4, 2, 3], seed=0)
    assert sorted(train + held) == [1, 2, 3, 4, 5] and len(train) == 3 and not set(train) & set(held)
    assert split_questions([3, 2, 1, 5, 4], seed=0) == (train, held)          # order-free, deterministic
    assert any(split_questions(range(1, 21), s) != split_questions(range(1, 21), 0) for s in (1, 2, 3))


def test_grid_values_ranges_and_text_values():
    sets, gammas = parse_grid("gammatune", "eta=0.2/0.5,delta=0:2:3,gamma=1/4")
    assert gammas == [1, 4] and len(sets) == 6
    assert sorted({s["delta"] for s in sets}) == [0.0, 1.0, 2.0] and all(s["gamma_max"] == 10 for s in sets)
    sets, gammas = parse_grid("bandit", "arms=1/2|1/2/4")
    assert [s["arms"] for s in sets] == ["1/2", "1/2/4"] and gammas == [1, 2, 3, 4, 6, 8]
    assert [s["interval"] for s in parse_grid("ema-steps", "interval=1:9:3")[0]] == [1, 5, 9]


# ---------------------------------------------------------------- on a tiny sweep's traces (in process, a few seconds)
QUESTIONS = [9017, 9019, 9021, 9023]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from actors.loading.tiny_pair import save_tiny_pair
    from jobs.config import parse_config
    from jobs.sweep.driver import run_sweep
    from tests.sweep_process import tiny_raw

    tmp = tmp_path_factory.mktemp("tsweep")
    target, draft = save_tiny_pair(tmp / "pair")
    raw = tiny_raw(tmp, target, draft, dataset={"source": "sample", "question_ids": QUESTIONS}, gammas=[1, 2],
                   mode="replay", validate=0.5)
    with contextlib.redirect_stderr(io.StringIO()):
        res = run_sweep(parse_config(raw), backend="inprocess", log_mlflow=False)
    assert res["failed_rows"] == 0
    return res["output"]


def test_tune_chooses_on_training_questions_and_reports_held_out(swept, capsys):
    assert _cli("tune", swept, "--policy", "threshold", "--params", "tau=0.1:0.9:3,gamma=1/3") == 0
    out = capsys.readouterr().out
    train, held = split_questions(QUESTIONS, 0)
    assert f"training questions {train}" in out and f"held out {held}" in out
    grid = pd.read_csv(Path(swept) / "tunes" / "threshold" / "grid.csv")
    mine = grid[grid["policy_spec"].str.startswith("threshold")]
    assert len(mine) == 4 * 2                                   # τ 0.1, 0.5, 0.9 and the default 0.4, at γ 1 and 3
    chosen = mine[mine["chosen"]]
    assert len(chosen) == 1 and chosen["train_tok_s"].iloc[0] == mine["train_tok_s"].max()
    assert set(grid[grid["policy_spec"] == "fixed"]["gamma"]) == {1, 2, 3, 4, 5, 6, 8}
    assert "fraction of oracle bound" in out and "%" in out
    assert (Path(swept) / "tunes" / "threshold" / "report.md").read_text() == out
    # deterministic: the same command gives the same report (but for the seconds the replays took)
    assert _cli("tune", swept, "--policy", "threshold", "--params", "tau=0.1:0.9:3,gamma=1/3") == 0
    elapsed = re.compile(r" in \d+(\.\d+)? s")
    assert elapsed.sub("", capsys.readouterr().out) == elapsed.sub("", out) and elapsed.search(out)


@pytest.mark.parametrize("args, needle", [
    (["--policy", "nosuch"], "unknown policy 'nosuch'"),
    (["--policy", "ar"], "nothing to tune"),
    (["--policy", "gammatune", "--params", "foo=1/2"], "unknown parameter 'foo'"),
    (["--policy", "gammatune", "--params", "eta=0.5/2"], "eta='2' is out of range"),
    (["--policy", "gammatune", "--params", "delta=-1:1:3"], "delta='-1.0' is out of range"),
    (["--policy", "threshold", "--params", "tau=0.2:0.8"], "a range is lo:hi:n"),
    (["--policy", "threshold", "--params", "tau=abc"], "tau='abc' is not a finite number"),
    (["--policy", "threshold", "--params", "tau=0.2:0.8:4,,"], "holds an empty item"),
    (["--policy", "gammatune", "--params", "eta=0:1:x"], "a range is lo:hi:n"),
    (["--policy", "threshold", "--params", "tau=0.1:0.9:1"], "one value cannot span 0.1 to 0.9: give n >= 2"),
    (["--policy", "gammatune", "--params", "gamma=0/2"], "gamma"),
    (["--policy", "gammatune", "--params", "eta"], "is not key=values"),
    (["--policy", "fixed"], "holds no traces"),
])
def test_tune_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, needle):
    """Checked before any trace is read (an empty folder stands for an output: nothing may appear in it)."""
    assert _cli("tune", str(tmp_path), *args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specsweep: error: ") and needle in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_tune_refuses_a_tree_policy_and_one_question(swept, tmp_path, capsys):
    assert _cli("tune", swept, "--policy", "sequoia") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be replayed" in err[0]
    one = tmp_path / "one"
    shutil.copytree(swept, one, ignore=shutil.ignore_patterns("tunes"))
    for f in (one / "traces").glob("*.parquet"):
        if '"question_id": 9017' not in str(pd.read_parquet(f)["meta"].iloc[0]):
            f.unlink()
    assert _cli("tune", str(one), "--policy", "fixed") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at least 2 questions" in err[0]
    assert not (one / "tunes").exists()


def _mark_untrusted(folder: Path, reason: str) -> None:
    """Every cost model the sweep stored (actors.json, traces/cost_models.json) marked as not trusted."""
    import json

    bad = {"reliable": False, "reasons": [reason]}
    infos = json.loads((folder / "actors.json").read_text())
    for acts in infos.values():
        for info in acts:
            for key in ("costs", "cost_model"):
                if info.get(key):
                    info[key]["trust"] = bad
    (folder / "actors.json").write_text(json.dumps(infos))
    fitted = json.loads((folder / "traces" / "cost_models.json").read_text())
    for models in fitted.values():
        for m in models:
            m["trust"] = bad
    (folder / "traces" / "cost_models.json").write_text(json.dumps(fitted))


def test_recommend_and_tune_on_trusted_times_print_intervals(swept, capsys):
    assert _cli("recommend", swept, "--for", "vllm") == 0
    notes = capsys.readouterr().out
    assert "| 1 | 4 |" in notes and "[95 %]" in notes
    assert any("× [" in line for line in notes.splitlines() if line.startswith("| 1 |"))   # runner-up's interval
    assert _cli("tune", swept, "--policy", "fixed") == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| tiny |"))
    assert "× [" in row and "% [" in row                                   # speedups and bound shares with intervals


def test_recommend_and_tune_on_unreliable_times_say_so_in_one_line(swept, tmp_path, capsys):
    folder = tmp_path / "loaded"
    shutil.copytree(swept, folder, ignore=shutil.ignore_patterns("tunes"))
    _mark_untrusted(folder, "step times spread 40% (a loaded machine?)")
    assert _cli("recommend", str(folder), "--for", "vllm") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "replayed with times marked unreliable (step times spread 40%" in err[0]
    assert "rerun the sweep on a quiet machine or with mode: live" in err[0]
    assert _cli("tune", str(folder), "--policy", "threshold") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the replayed times are marked unreliable (step times spread 40%" in err[0], err
    assert "specsweep calibrate --out costs.json" in err[0] and "--costs costs.json" in err[0]
    assert not (folder / "tunes").exists()


def test_the_gap_counts_only_questions_with_a_fixed_row_and_says_so():
    rows = [_row(q, "oracle-bound", 0, 1.0, "oracle (bound)") for q in (1, 2, 3)]
    rows += [_row(1, "fixed", 2, 1.5), _row(2, "fixed", 2, 1.4)]          # question 3's fixed replay is missing
    rows += [_row(q, "x", 4, 1.2) for q in (1, 2, 3)]
    t = regret_table(pd.DataFrame(rows)).set_index(["policy_spec", "gamma"])
    x = t.loc[("x", 4)]
    assert x["questions"] == 3 and x["gap_questions"] == 2
    assert x["gap_fixed_ms"] == pytest.approx(-250.0)                   # (−0.3 − 0.2) / 2 questions
    assert x["gap_fixed_ms_lo"] <= -250.0 <= x["gap_fixed_ms_hi"]
    assert "(the 2 of 3 questions with a fixed γ replayed)" in regret_md(t.reset_index())


def test_a_sweep_run_live_and_replayed_reports_its_regret(tmp_path):
    """mode: both — the report shows live rows for a config that ran both ways; regret still reads the replayed ones."""
    from actors.loading.schema import to_table
    from jobs.report.tables import extras_from_parquet
    from jobs.store.parquet_log import ParquetLog

    rows = [_row(q, "oracle-bound", 0, 1.0, "oracle (bound)") for q in (1, 2)]
    for mode, scale in (("replay", 1.0), ("live", 1.02)):
        rows += [{**_row(q, "fixed", 2, 1.5 * scale), "mode": mode} for q in (1, 2)]
        rows += [{**_row(q, "x", 4, 1.2 * scale), "mode": mode} for q in (1, 2)]
    rows = [{**r, "task_key": f"p|{r['question_id']}", "config_key": f"p|{r['policy_spec']}|{r['gamma']}",
             "new_tokens": 10} for r in rows]
    log = ParquetLog(tmp_path / "out")
    log.prepare("fp", {"mode": "both"})
    for q in (1, 2):
        log.write(to_table([r for r in rows if r["question_id"] == q]))
    text = extras_from_parquet(str(tmp_path / "out"))
    assert "Regret against the oracle bound" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("| p | x | 4 |"))
    assert "200.00" in line                                              # replayed: 1.2 − 1.0 s per question




def test_a_fixed_k_without_a_training_time_is_never_the_best_fixed_k():
    from jobs.tune.cli import tune

    train, _ = split_questions(list(range(1, 7)), 0)
    res, _ = tune(tune_rows(fixed_1_missing_on=train[0]), "threshold", "threshold", 0)
    assert res["best_fixed_gamma"].iloc[0] == 4
    assert res["vs_best_fixed"].iloc[0] == pytest.approx(5.0 / 6.0)     # threshold's 6 s against fixed γ 4's 5 s


def test_tuning_fixed_lists_each_config_once():
    from jobs.tune.cli import tune

    _, grid = tune(tune_rows(), "fixed", "fixed", 0)
    assert sorted(zip(grid["policy_spec"], grid["gamma"])) == [("fixed", 1), ("fixed", 4)]
    assert grid["chosen"].sum() == 1
