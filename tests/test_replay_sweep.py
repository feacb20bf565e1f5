"""Sweeps in ``mode: replay`` / ``both`` on the in-process backend (no Ray) with a tiny pair."""
import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jobs.report import metrics
from jobs.report.agreement import agreement_table, primary_rows
from jobs.config import parse_config
from jobs.store.parquet_log import ParquetLog
from jobs.sweep.plan import plan_tasks, replay_partition, validation_sample
from jobs.sweep.driver import run_sweep
from actors.loading.tiny_pair import save_tiny_pair

QUESTIONS = [9001, 9017]                    # writing (2 turns), translation (1 turn)


@pytest.fixture(scope="module")
def pair_paths(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("pair"))


def raw(tmp: Path, target, draft, **over):
    cfg = {"name": f"r-{tmp.name}", "output": str(tmp / "out"), "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
           "pairs": [{"name": "tiny", "target": target, "draft": draft}],
           "dataset": {"source": "sample", "question_ids": QUESTIONS},
           "generation": {"max_new_tokens": 10}, "policies": ["fixed", "gammatune", "svip", "sequoia"],
           "gammas": [1, 3], "warmup": 0, "mode": "replay", "validate": 0.5,
           "calibrate": {"context": 16, "max_tokens": 4, "repeats": 2, "judge": False}}
    cfg.update(over)
    return cfg


def test_partition_replays_sequence_policies_and_validates_each(tmp_path, pair_paths):
    cfg = parse_config(raw(tmp_path, *pair_paths))
    to_replay, live, notes = replay_partition(cfg)
    assert {c[0] for c in to_replay} == {"fixed", "gammatune", "svip"}
    assert {c[0] for c in live} >= {"sequoia", "fixed", "gammatune", "svip"}          # one validated γ per policy
    assert all(c[0] != "sequoia" for c in to_replay) and len(notes) == 1 and "sequoia" in notes[0]
    assert len([c for c in live if c[0] != "sequoia"]) == 3                           # ⌈0.5 · 6⌉ = 3
    assert validation_sample(cfg, to_replay) == validation_sample(cfg, to_replay)     # seeded
    other = parse_config(raw(tmp_path, *pair_paths, seed=5, validate=0.2))
    assert len(validation_sample(other, to_replay)) == 3                              # at least one per policy
    sampling = parse_config(raw(tmp_path, *pair_paths, generation={"max_new_tokens": 10, "temperature": 0.7}))
    r, lv, notes = replay_partition(sampling)
    assert r == [] and len(lv) == 8 and any("greedy" in n for n in notes)
    tasks = plan_tasks(cfg, [type("Q", (), {"question_id": 1, "category": "qa", "turns": ["hi"]})()])
    assert set(map(str, tasks[0]["live"] + tasks[0]["replay"])) == set(map(str, tasks[0]["configs"]))


@pytest.fixture(scope="module")
def swept(tmp_path_factory, pair_paths):
    tmp = tmp_path_factory.mktemp("sweep")
    cfg = parse_config(raw(tmp, *pair_paths))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        res = run_sweep(cfg, backend="inprocess", log_mlflow=False)
    return cfg, res, err.getvalue()


def test_replay_sweep_end_to_end_in_process(swept):
    cfg, res, _ = swept
    assert res["failed_rows"] == 0, res
    df = ParquetLog(cfg.output).read()
    out = Path(cfg.output)
    assert set(df["mode"]) == {"live", "replay"}
    rep = df[df["mode"] == "replay"]
    assert set(rep["policy"]) == {"fixed", "gammatune", "svip", "oracle-bound"} and (rep["wall_time"] > 0).all()
    bound = rep[rep["policy"] == "oracle-bound"]                  # one bound row per traced turn, below every config
    assert len(bound) == rep[rep["policy"] != "oracle-bound"].groupby(["question_id", "turn"]).ngroups
    check = metrics.bound_check(df)
    assert check["turns"] == len(bound) and check["violations"] == 0
    # every replayed row has the columns a live row has
    for col in ("token_ids", "accept_lengths", "drafted", "accepted", "text", "prompt_ids", "config_key"):
        assert rep[col].map(lambda v: v is not None and (not hasattr(v, "__len__") or len(v) > 0)).all(), col
    # greedy: a replayed generation emits the target-only output (the ar first row of its turn)
    ar = df[(df["policy"] == "ar") & (df["ar_timing"] == "first")].set_index(["question_id", "turn"])
    for _, r in rep.iterrows():
        assert list(r["token_ids"]) == list(ar.loc[(r["question_id"], r["turn"]), "token_ids"])
    agree = agreement_table(df)
    assert agree.iloc[-1]["steps_identical"] == 1.0 and agree.iloc[-1]["tokens_identical"] == 1.0
    assert (out / "replay_agreement.csv").exists() and (out / "replay_bias.csv").exists() and (out / "traces" / "cost_models.json").exists()
    assert len(list((out / "traces").glob("*.parquet"))) == len(QUESTIONS)
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 8 + 2                                   # every config once (+ ar, the bound), no mode duplicates
    # the report shows one row per config and the agreement section
    from jobs.cli import main
    assert main(["report", "--parquet", cfg.output]) == 0
    report = (out / "report.md").read_text()
    assert "replay vs live (validated configs)" in report and "exact: every validated generation" in report
    assert agree.iloc[-1]["live_spread_median"] >= 0 and "live timing spread" in report
    # a resume does nothing more
    again = run_sweep(cfg, backend="inprocess", log_mlflow=False)
    assert again["rows"] == res["rows"]


def test_the_sweep_ends_with_a_short_headline_and_writes_report_md(swept):
    cfg, res, err = swept
    out = Path(cfg.output)
    tail = err[err.index("pair tiny — speedup vs ar"):].strip().splitlines()
    assert len(tail) <= 25, tail
    rows = tail[2:2 + 4]                                           # header, then one row per policy (not per γ)
    assert sorted(r.split()[0].split(":")[0] for r in rows) == ["fixed", "gammatune", "sequoia", "svip"]
    assert tail[1].split()[:3] == ["policy", "best", "γ0"]
    assert any(line.startswith("oracle bound") for line in tail)
    assert f"full report: {out / 'report.md'}" in tail[-1]
    assert "throughput" not in err and "steps_identical" not in err     # per-γ and replay tables: report/--verbose only
    report = (out / "report.md").read_text()
    assert "## Table 2" in report and "replay vs live (validated configs)" in report
    rows = [line for line in report.splitlines() if line.startswith("|")]
    assert rows and not any(re.match(r"\|\s*0\s*\|", line) for line in rows)   # no pandas row-number column


def test_headline_survives_untrusted_times():
    from jobs.report.headline import headline

    summary = pd.DataFrame({"pair": ["p", "p"], "policy_spec": ["fixed", "fixed"], "policy": ["fixed", "fixed"],
                            "gamma": [1, 2], "throughput": [float("nan")] * 2, "mean_accepted_length": [1.5, 1.8]})
    text = headline(summary, None, "", ["full report: x"])
    assert "pair p — no speedup to rank: none of its configs has a trusted time" in text
    assert "best" not in text and text.endswith("full report: x")
    mixed = pd.concat([summary, pd.DataFrame({"pair": ["p"], "policy_spec": ["gt"], "policy": ["gt"], "gamma": [3],
                                              "throughput": [10.0], "mean_accepted_length": [2.0], "speedup": [1.2]})])
    lines = headline(mixed, None, "", []).splitlines()
    assert "best initial γ" in lines[0] and lines[2].split()[:2] == ["gt", "3"]
    assert lines[3].split() == ["fixed", "–", "–", "–", "–"]                 # no γ claimed best without a time


def test_headline_names_the_grid_mean_vs_fixed_and_marks_it_when_unresolved():
    """The "vs fixed" column is Table 2's mean over the γ grid (named so), with ``~`` when its interval includes 1 or
    it is inside the pair's floor, as the "vs ar" column."""
    from jobs.report.headline import policy_rows

    summary = pd.DataFrame({"pair": ["p"] * 4, "policy_spec": ["fixed", "fixed", "gt", "threshold"],
                            "policy": ["fixed", "fixed", "gt", "threshold"], "gamma": [1, 2, 2, 2],
                            "throughput": [10.0, 11.0, 12.0, 11.5], "mean_accepted_length": [1.5, 1.8, 2.0, 1.9],
                            "speedup": [1.0, 1.1, 1.2, 1.15], "speedup_lo": [0.9, 1.05, 1.1, 1.1],
                            "speedup_hi": [1.1, 1.15, 1.3, 1.2], "noise_floor": [0.01] * 4})
    t2 = pd.DataFrame({"pair": ["p", "p"], "policy_spec": ["gt", "threshold"], "mean": [1.07, 1.03],
                       "mean_lo": [1.03, 0.99], "mean_hi": [1.10, 1.07]})
    rows = policy_rows(summary, t2).set_index("policy")
    assert "vs fixed, γ mean" in rows.columns
    assert rows.loc["gt", "vs fixed, γ mean"] == "1.07 [1.03, 1.10]"
    assert rows.loc["threshold", "vs fixed, γ mean"].endswith(" ~")
    assert rows.loc["fixed", "vs fixed, γ mean"] == "1.00"


def test_gamma_free_policies_take_one_row():
    from jobs.report.tables import one_row_if_gamma_free

    t = pd.DataFrame({"pair": ["p"] * 4, "policy_spec": ["sequoia", "sequoia", "fixed", "fixed"], "gamma": [1, 3, 1, 3],
                      "overall": [1.2, 1.2, 1.1, 0.9]})
    out = one_row_if_gamma_free(t, ["overall"])
    assert list(out["policy_spec"]) == ["sequoia", "fixed", "fixed"] and list(out["gamma"]) == ["all", 1, 3]


def test_primary_rows_prefers_one_mode_per_config():
    df = pd.DataFrame({"config_key": ["a", "a", "b", "c"], "mode": ["live", "replay", "live", None],
                       "status": ["ok"] * 4})
    assert list(primary_rows(df, "replay")["mode"].fillna("-")) == ["replay", "live", "-"]
    assert list(primary_rows(df, "live")["mode"].fillna("-")) == ["live", "live", "-"]


def _cli(*argv) -> int:
    from jobs.cli import main

    return main(list(argv))


def test_replay_cli_evaluates_new_policies_without_a_model(swept, pair_paths, tmp_path, capsys):
    import shutil

    cfg, _, _ = swept
    configs = [(Path(f) / "config.json").read_text() for f in pair_paths]
    for folder in pair_paths:                     # no model left to load: replay must not need one
        shutil.rmtree(folder)
    pol = tmp_path / "new.yaml"
    pol.write_text("policies: [bandit, ema-steps, {dv-threshold: {theta: 0.5}}, fixed]\ngammas: [1, 3, 5]\n")
    assert _cli("replay", cfg.output, "--policies", str(pol)) == 0
    out = capsys.readouterr().out
    assert "no model loaded" in out and "ema-steps" in out and "dv-threshold" in out
    rows = pd.read_parquet(Path(cfg.output) / "replays" / "new" / "rows.parquet")
    assert set(rows["policy"]) == {"ar", "oracle-bound", "bandit", "ema-steps", "dv-threshold", "fixed"}
    policy_rows = rows[~rows["policy"].isin(["ar", "oracle-bound"])]
    assert set(policy_rows["gamma"]) == {1, 3, 5}
    bound = rows[rows["policy"] == "oracle-bound"].set_index(["question_id", "turn"])
    assert len(bound) == 3 and set(bound["policy_spec"]) == {"oracle (bound)"}
    for _, r in policy_rows.iterrows():                       # no replayed policy beats the bound on its turn
        assert bound.loc[(r["question_id"], r["turn"]), "wall_time"] <= r["wall_time"] + 1e-12
    assert "Efficiency against the oracle (bound)" in out
    ar = rows[rows["policy"] == "ar"].set_index(["question_id", "turn"])
    for _, r in rows[rows["policy"] != "ar"].iterrows():       # greedy: the target-only output
        assert list(r["token_ids"]) == list(ar.loc[(r["question_id"], r["turn"]), "token_ids"])
    # the same fixed γ as the sweep replays to the sweep's own replayed rows
    log = ParquetLog(cfg.output).read()
    mine = rows[(rows["policy"] == "fixed")].set_index(["question_id", "turn", "gamma"])
    theirs = log[(log["policy"] == "fixed") & (log["mode"] == "replay")]
    assert len(theirs) == 2 * 3                                # γ 1 and 3 × three turns
    for _, r in theirs.iterrows():
        assert list(mine.loc[(r["question_id"], r["turn"], r["gamma"]), "accepted"]) == list(r["accepted"])
        # the same cost model and the same per-turn calibration: the same predicted time
        assert mine.loc[(r["question_id"], r["turn"], r["gamma"]), "wall_time"] == pytest.approx(r["wall_time"])
    # what-if under another actors.json: every heading says so, and ar is predicted under that model too
    assert _cli("replay", cfg.output, "--policies", str(pol), "--costs", str(Path(cfg.output) / "actors.json")) == 0
    assert "(what-if)" in capsys.readouterr().out
    what_if = pd.read_parquet(Path(cfg.output) / "replays" / "new-costs-actors" / "rows.parquet")
    assert set(what_if.loc[what_if["policy"] == "ar", "mode"]) == {"replay"}
    # a roofline what-if reads config.json alone: same steps as the measured-cost replay, GPU-sized times
    for folder, text in zip(pair_paths, configs):
        Path(folder).mkdir(parents=True)
        (Path(folder) / "config.json").write_text(text)
    assert _cli("replay", cfg.output, "--policies", str(pol), "--costs", "roofline:h100") == 0
    out = capsys.readouterr().out
    assert "what-if (roofline h100)" in out and "## (what-if (roofline h100))" in out
    roof = pd.read_parquet(Path(cfg.output) / "replays" / "new-roofline-h100" / "rows.parquet")
    key = ["question_id", "turn", "policy", "gamma"]
    both = roof.merge(what_if, on=key, suffixes=("_roof", "_cpu"))
    assert len(both) == len(roof) == len(what_if)
    assert all(list(a) == list(b) for a, b in zip(both["token_ids_roof"], both["token_ids_cpu"]))   # greedy: lossless
    blind = both[both["policy"] == "fixed"]                    # a cost-blind policy takes the very same steps
    assert len(blind) and all(list(a) == list(b) for a, b in zip(blind["accepted_roof"], blind["accepted_cpu"]))
    assert (both["wall_time_roof"] < both["wall_time_cpu"]).all()       # a tiny model on an H100: far faster
    assert (roof["prefill_time"] < 1e-3).all()                           # predicted, not this machine's


@pytest.mark.parametrize("content, costs, needle", [
    ("policies: [sequoia]\n", None, "cannot be replayed"),
    ("policies: [nosuch]\n", None, "unknown policy"),
    ("policies: [fixed]\ngammas: [0]\n", None, "gammas[0]"),
    ("policies: [fixed]\nextra: 1\n", None, "unknown field"),
    ("policies: [fixed]\n", "missing.json", "missing.json"),
    ("policies: [fixed]\n", "{}", "holds no actor information"),
    ("policies: [fixed]\n", "roofline:h900", "unknown GPU kind 'h900'"),
    ("policies: [fixed]\n", "roofline:h100:int3", "quantization 'int3' is not valid"),
])
def test_replay_cli_bad_input_is_one_line(swept, tmp_path, capsys, content, costs, needle):
    cfg, _, _ = swept
    pol = tmp_path / "p.yaml"
    pol.write_text(content)
    args = ["replay", cfg.output, "--policies", str(pol)]
    if costs == "{}":
        (tmp_path / "empty.json").write_text("{}")
        costs = str(tmp_path / "empty.json")
    if costs:
        args += ["--costs", str(tmp_path / costs) if costs == "missing.json" else costs]
    assert _cli(*args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_replay_cli_refuses_an_output_without_traces(tmp_path, capsys):
    pol = tmp_path / "p.yaml"
    pol.write_text("policies: [fixed]\n")
    assert _cli("replay", str(tmp_path), "--policies", str(pol)) == 2
    assert "holds no traces" in capsys.readouterr().err


def test_cost_fit_ignores_disturbed_steps():
    """A few steps slowed by another process must not bend the fitted step-time lines."""
    import numpy as np

    from policies.cost_fit import robust_lstsq

    rng = np.random.default_rng(0)
    X = np.c_[np.ones(200), rng.integers(1, 10, 200), rng.uniform(0.1, 1.0, 200)]
    y = X @ [0.010, 0.002, 0.004] + rng.normal(0, 1e-4, 200)
    y[:20] *= 8                                                  # 10 % of the steps disturbed
    assert np.allclose(robust_lstsq(X, y), [0.010, 0.002, 0.004], rtol=0.05)
    plain = np.linalg.lstsq(X, y, rcond=None)[0]
    assert not np.allclose(plain, [0.010, 0.002, 0.004], rtol=0.05)   # what the plain fit would give


def test_a_row_drawn_many_times_is_weighted_not_copied_into_the_outlier_scale():
    """A bootstrap resample draws some rows several times: the fit counts them that often, but copies of one row
    must not shrink the robust σ to zero and drop every other row."""
    import numpy as np

    from policies.cost_fit import robust_lstsq

    X, y, draws = np.array([[1.0], [2.0], [3.0]]), np.array([1.0, 2.2, 2.9]), np.array([5, 1, 1])
    counted = np.linalg.lstsq(np.repeat(X, draws, axis=0), np.repeat(y, draws), rcond=None)[0]
    assert robust_lstsq(X, y, weights=draws) == pytest.approx(counted)             # every row kept, counted 5, 1, 1
    assert robust_lstsq(np.repeat(X, draws, axis=0), np.repeat(y, draws)) == pytest.approx([1.0])   # copies: σ = 0
    assert robust_lstsq(X, y, weights=np.ones(3)) == pytest.approx(robust_lstsq(X, y))


def test_smooth_least_squares_fits_the_rows_and_is_smoothest_where_they_leave_it_open():
    """Columns 2 and 3 always enter together and column 4 never: every row is fitted exactly, the undetermined
    combinations take the least Σ (coef_{i+1} − coef_i)², and the determined ones are untouched."""
    import numpy as np

    from policies.cost_fit import robust_lstsq

    X = np.array([[1.0, 0, 0, 0], [2.0, 0, 0, 0], [0, 1.0, 1.0, 0], [0, 2.0, 2.0, 0], [1.0, 1.0, 1.0, 0]])
    truth = np.array([3.0, 1.0, 2.0, 0.0])
    D = np.diff(np.eye(4), axis=0)
    coef = robust_lstsq(X, X @ truth, smooth=D)
    assert X @ coef == pytest.approx(X @ truth) and coef[0] == pytest.approx(3.0)
    # on the line c1 + c2 = 3 with c3 free, (3 − c1)² + (c1 − c2)² + (c2 − c3)² is least at c3 = c2 = 3 − c1 and
    # −2(3 − c1) + 4(2·c1 − 3) = 0: c1 = 1.8
    assert coef[1:] == pytest.approx([1.8, 1.2, 1.2])
    assert robust_lstsq(X, X @ truth)[3] == 0.0                   # without it: a column never exercised is 0


def test_agreement_text_warns_when_times_are_off():
    from jobs.report.agreement import agreement_text

    t = pd.DataFrame([{"pair": "all", "policy_spec": "all", "generations": 3, "gammas": "", "tokens_identical": 1.0,
                       "steps_identical": 1.0, "time_error_median": 0.4, "time_error_p90": 0.9}])
    text = agreement_text(t)
    assert "exact" in text and "WARNING" in text and "40.0 %" in text


def test_live_spread_is_the_median_ar_first_last_distance():
    from jobs.report.agreement import live_spread

    def ar(q, timing, t, mode="live", status="ok"):
        return {"pair": "p", "policy": "ar", "question_id": q, "turn": 0, "repeat": 0, "ar_timing": timing,
                "wall_time": t, "mode": mode, "status": status}
    rows = [ar(1, "first", 1.0), ar(1, "last", 1.2), ar(2, "first", 2.0), ar(2, "last", 1.0),
            ar(3, "first", 5.0),                                   # no closing run: not a pair
            ar(4, "first", 1.0), ar(4, "last", 9.0, status="error"),
            {**ar(1, "", 7.0), "policy": "fixed"}]
    assert live_spread(pd.DataFrame(rows)) == pytest.approx((0.2 + 0.5) / 2)
    assert np.isnan(live_spread(pd.DataFrame(rows).drop(columns="ar_timing")))


def test_replay_bias_is_signed_per_config_with_an_interval():
    from jobs.report.agreement import bias_text, replay_bias

    def row(q, mode, t, gamma=2, spec="fixed"):
        return {"config_key": f"p|{spec}|{gamma}", "pair": "p", "policy_spec": spec, "gamma": gamma, "question_id": q,
                "turn": 0, "repeat": 0, "mode": mode, "status": "ok", "wall_time": t}

    live = [1.0, 2.0, 1.0, 4.0, 2.0]
    fast = [0.9, 1.8, 0.9, 3.6, 1.8]                 # replay predicts 10 % faster on every generation
    slow = [1.2, 2.4, 1.2, 4.8, 2.4]                 # γ 4: 20 % slower
    df = pd.DataFrame([row(q, "live", t) for q, t in enumerate(live)] + [row(q, "replay", t) for q, t in enumerate(fast)]
                      + [row(q, "live", t, 4) for q, t in enumerate(live)]
                      + [row(q, "replay", t, 4) for q, t in enumerate(slow)]
                      + [row(9, "replay", 5.0, 8)])   # replayed only: no live twin, no bias
    b = replay_bias(df).set_index("gamma")
    assert list(b.index) == [2, 4] and list(b["generations"]) == [5, 5]
    assert b.loc[2, "bias_median"] == pytest.approx(-0.10) and b.loc[4, "bias_median"] == pytest.approx(0.20)
    assert b.loc[2, "bias_lo"] == pytest.approx(-0.10) and b.loc[2, "bias_hi"] == pytest.approx(-0.10)
    mixed = df.copy()
    mixed.loc[(mixed["mode"] == "replay") & (mixed["gamma"] == 2), "wall_time"] = [0.9, 2.2, 1.0, 3.2, 2.0]
    m = replay_bias(mixed).set_index("gamma").loc[2]
    assert m["bias_median"] == pytest.approx(0.0) and m["bias_lo"] < 0 < m["bias_hi"]
    assert "-10.0%" in bias_text(replay_bias(df)) and "+20.0%" in bias_text(replay_bias(df))
    assert replay_bias(df[df["mode"] == "live"]).empty and bias_text(replay_bias(df[df["mode"] == "live"])) == ""
