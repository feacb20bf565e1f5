"""A real ``mode: replay`` sweep (tiny pair, in-process backend) into MLflow, then run again.

What it pins: one run per (pair, policy spec, mode) with the ``mode`` tag; every replayed run's
``throughput`` history has exactly the sweep's γ as steps and the values of ``summary.csv``; the
live validation runs hold only the γ validated live; γ curves on the policy runs, figures on the
sweep run, the questions as a dataset input; a second run of the same sweep reuses every run and
adds no history point.
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("mlflow")

from jobs.config import parse_config  # noqa: E402
from jobs.store.parquet_log import ParquetLog  # noqa: E402
from jobs.sweep.driver import run_sweep  # noqa: E402
from tests.mlflow_rows import client, history, runs_of  # noqa: E402
from actors.loading.tiny_pair import save_tiny_pair  # noqa: E402

GAMMAS = [1, 3]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mlflow_replay")
    target, draft = save_tiny_pair(tmp / "pair")
    cfg = parse_config({"name": "replayed", "output": str(tmp / "out"), "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
                        "pairs": [{"name": "tiny", "target": target, "draft": draft}],
                        "dataset": {"source": "sample", "question_ids": [9017, 9021]},
                        "generation": {"max_new_tokens": 8}, "policies": ["fixed", "gammatune"], "gammas": GAMMAS,
                        "warmup": 0, "mode": "replay", "validate": 0.5,
                        "calibrate": {"context": 16, "max_tokens": 4, "repeats": 2, "judge": False}})
    cwd = os.getcwd()
    os.chdir(tmp)                      # a sqlite store keeps artifacts under ./mlruns
    try:
        res = run_sweep(cfg, backend="inprocess")
        c = client(cfg)
        before = {r.info.run_id: {k: history(c, r, k) for k in r.data.metrics} for r in runs_of(c, cfg)}
        again = run_sweep(cfg, backend="inprocess")
    finally:
        os.chdir(cwd)
    return cfg, res, again, before


def test_replay_sweep_runs_per_mode_with_gamma_steps(swept):
    cfg, res, _, _ = swept
    assert res["failed_rows"] == 0, res
    c = client(cfg)
    runs = {(r.data.tags["policy_spec"], r.data.tags["mode"]): r for r in runs_of(c, cfg, "policy")}
    df = ParquetLog(cfg.output).read()
    live_gammas = {spec: sorted(set(g)) for spec, g in
                   df[(df["mode"] == "live") & (df["policy"] != "ar")].groupby("policy_spec")["gamma"]}
    assert sorted(runs) == sorted([("ar", "live"), ("oracle (bound)", "replay")] + [(s, m) for s in ("fixed", "gammatune")
                                                      for m in ("replay",) + (("live",) if s in live_gammas else ())])
    assert all(len(g) == 1 for g in live_gammas.values())               # validate 0.5 of 2 γ: one γ live each
    summary = pd.read_csv(Path(cfg.output) / "summary.csv").set_index(["policy_spec", "gamma"])
    for (spec, mode), r in runs.items():
        assert r.info.status == "FINISHED" and r.data.tags["mode"] == mode
        got = history(c, r, "throughput")
        positions = sorted(int(k.rsplit("_", 1)[1]) for k in r.data.metrics if k.startswith("positions/"))
        assert positions == list(range(1, len(positions) + 1)) and len(positions) <= max(GAMMAS), (spec, positions)
        if spec in ("ar", "oracle (bound)"):                             # no γ: a flat line over the sweep's γ
            assert [s for s, _ in got] == GAMMAS and len({v for _, v in got}) == 1, (spec, got)
            assert not any(k.startswith("across_gamma/") for k in r.data.metrics)
            if spec != "ar":
                assert got[0][1] == pytest.approx(summary.loc[(spec, 0), "throughput"])
            continue
        if mode == "replay":                                              # the summary's mode: every figure
            assert [s for s, _ in got] == GAMMAS, (spec, got)
            assert [v for _, v in got] == pytest.approx([summary.loc[(spec, g), "throughput"] for g in GAMMAS])
            assert [s for s, _ in history(c, r, "speedup")] == GAMMAS
            assert "across_gamma/best_gamma" in r.data.metrics
            bound = summary.loc[("oracle (bound)", 0), "throughput"]          # the report's reference
            assert r.data.metrics["across_gamma/fraction_of_oracle"] == pytest.approx(
                summary.loc[[(spec, g) for g in GAMMAS], "throughput"].mean() / bound)
        else:                                                             # live validation: its own γ only
            assert [s for s, _ in got] == live_gammas[spec], (spec, got)
            assert "speedup" not in r.data.metrics
        arts = {a.path for a in c.list_artifacts(r.info.run_id)}
        assert "gamma_curve.png" in arts, (spec, mode, arts)
    sweep = runs_of(c, cfg, "sweep")
    assert len(sweep) == 1 and sweep[0].data.tags["mode"] == "replay"
    arts = {a.path for a in c.list_artifacts(sweep[0].info.run_id)}
    assert {"summary.csv", "actors.json", "replay_agreement.csv"} <= arts and any(a.endswith(".png") for a in arts)
    for r in runs_of(c, cfg):
        ds = r.inputs.dataset_inputs
        assert len(ds) == 1 and ds[0].dataset.name == "sample", r.info.run_name


def test_running_the_sweep_again_reuses_runs_and_adds_no_points(swept):
    cfg, res, again, before = swept
    assert again["rows"] == res["rows"]
    c = client(cfg)
    after = {r.info.run_id: {k: history(c, r, k) for k in r.data.metrics} for r in runs_of(c, cfg)}
    assert sorted(after) == sorted(before)                                 # the same runs, none added
    for run_id, metrics in before.items():
        for key, points in metrics.items():
            if key.startswith("progress/"):
                continue                                                   # the sweep run's own progress
            assert after[run_id][key] == points, (run_id, key)
    assert {r.info.status for r in runs_of(c, cfg)} == {"FINISHED"}
    assert all(len(r.inputs.dataset_inputs) == 1 for r in runs_of(c, cfg))
