"""MLflow as the comparison surface: run layout, streaming, statuses, keying by output, credentials.

The first tests drive ``jobs.mlflow.tracking.SweepTracker`` the way the sweep's in-flight loop does, with
scripted task tables and a local sqlite store (fast, exact); the last runs real sweeps of the tiny
pair on a local Ray cluster, including Ctrl-C and a resume.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("mlflow")

from jobs.config import parse_config  # noqa: E402
from jobs.mlflow.points import read_points  # noqa: E402
from jobs.mlflow.read import read_experiment  # noqa: E402
from jobs.mlflow.runs import KIND, KIND_TAG, SWEEP_KEY  # noqa: E402
from jobs.redact import redact  # noqa: E402
from jobs.mlflow.tracking import SweepTracker  # noqa: E402

from tests.mlflow_rows import (GAMMAS, QUESTIONS, client, history, make_cfg, policy_runs_by, replayed,  # noqa: E402
                               runs_of, scripted_table, started_tracker, summarise_into, tasks_of, with_mode)

SECRET = "Zq9secret"


@pytest.fixture(autouse=True)
def _artifacts_in_tmp(tmp_path, monkeypatch):
    """A sqlite store puts artifacts under ./mlruns of the working directory: keep them in tmp_path."""
    monkeypatch.chdir(tmp_path)


# ---------------------------------------------------------------------------------------------- unit

def test_redact_in_any_text():
    assert redact(f"see http://alice:{SECRET}@h:5000/x and https://tok@h2") == \
        "see http://***@h:5000/x and https://***@h2"
    assert redact("sqlite:///mlflow.db") == "sqlite:///mlflow.db"


def test_artifacts_go_beside_the_sqlite_database_not_the_working_folder(tmp_path, monkeypatch):
    from jobs.mlflow.runs import artifact_root, experiment_id

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = make_cfg(tmp_path)
    exp = client(cfg).get_experiment(experiment_id(client(cfg), cfg.experiment_name, cfg.tracking_uri))
    assert exp.artifact_location == (tmp_path / "mlruns").as_uri()
    assert artifact_root("sqlite:///mlflow.db") == (elsewhere / "mlruns").as_uri()       # relative: this folder
    assert artifact_root("http://h:5000") is None and artifact_root("file:///x/mlruns") is None


def test_streaming_layout_statuses_and_once_only_points(tmp_path, capsys):
    cfg, c, tasks, tracker = started_tracker(tmp_path)
    # before the first task: the sweep run and one run per (pair, policy) exist, RUNNING
    sweep = runs_of(c, cfg, "sweep")
    policy_runs = runs_of(c, cfg, "policy")
    assert len(sweep) == 1 and sweep[0].info.status == "RUNNING"
    assert sorted(r.info.run_name for r in policy_runs) == ["ar · tiny", "fixed · tiny", "gammatune:eta=0.5 · tiny"]
    assert all(r.info.status == "RUNNING" for r in policy_runs)
    exp = c.get_experiment_by_name(cfg.experiment_name)
    assert exp.tags[KIND_TAG] == KIND == "custom_model_development"   # the UI opens on the runs table
    gt = next(r for r in policy_runs if r.data.tags["policy"] == "gammatune")
    assert {k: gt.data.tags[k] for k in ("pair", "policy", "mode", "policy_spec")} == {
        "pair": "tiny", "policy": "gammatune", "mode": "live", "policy_spec": "gammatune:eta=0.5"}
    assert gt.data.tags["dataset"].startswith("sample") and gt.data.tags["output"] == str(Path(cfg.output).resolve())
    assert "mlflow.parentRunId" not in gt.data.tags and gt.data.tags["specsweep.parent_run"] == sweep[0].info.run_id
    assert gt.data.params["eta"] == "0.5" and gt.data.params["delta"] and gt.data.params["gammas"] == "2,4"
    # stream: after the first task the affected runs already hold metrics
    tables = []
    first = tasks[0]
    tables.append(scripted_table(first))
    tracker.task_done(tables[-1])
    tracker.flush()
    fixed = next(r for r in runs_of(c, cfg, "policy") if r.data.tags["policy"] == "fixed")
    g0 = first["configs"][0][2]
    assert [s for s, _ in history(c, fixed, "live/speedup")] == GAMMAS         # one key, step = γ
    assert "throughput" not in fixed.data.metrics                              # the config is not complete yet
    assert runs_of(c, cfg, "sweep")[0].data.metrics["progress/tasks_done"] == 1
    for t in tasks[1:]:
        tables.append(scripted_table(t))
        tracker.task_done(tables[-1])
    tracker.flush()
    fixed = c.get_run(fixed.info.run_id)
    assert [s for s, _ in history(c, fixed, "throughput")] == GAMMAS          # each γ once, when it completed
    live = history(c, fixed, "live/mean_accepted_length")                    # one running estimate per question
    assert [s for s, _ in live if s == g0] == [g0] * len(QUESTIONS) and {s for s, _ in live} == set(GAMMAS)
    summarise_into(tracker, tables)
    for r in runs_of(c, cfg):
        assert r.info.status == "FINISHED"
    for r in runs_of(c, cfg, "policy"):
        steps = [s for s, _ in history(c, r, "throughput")]
        assert steps == GAMMAS, (r.info.run_name, steps)                       # exactly the sweep's γ values
        if r.data.tags["policy"] != "ar":
            for key in ("speedup", "mean_accepted_length", "acceptance_rate"):
                assert [s for s, _ in history(c, r, key)] == GAMMAS, key
            assert "across_gamma/table2_speedup_mean" in r.data.metrics
            points = read_points(c, r.info.run_id)                             # the detail, not charted
            assert sorted(points) == GAMMAS and all("speedup_qa" in points[g] for g in GAMMAS)
            assert "speedup_qa" not in r.data.metrics and "throughput_lo" not in r.data.metrics
    fx = c.get_run(fixed.info.run_id).data.metrics
    assert fx["across_gamma/table2_speedup_mean"] == pytest.approx(1.0)
    # a resume that adds nothing writes no history point and reuses every run
    before = {(r.info.run_id, k): len(history(c, r, k)) for r in runs_of(c, cfg) for k in r.data.metrics}
    again = SweepTracker(c, cfg, tasks)
    import pyarrow as pa

    again.start(pa.concat_tables(tables).to_pandas())
    assert {r.info.status for r in runs_of(c, cfg)} == {"RUNNING"}
    summarise_into(again, tables)
    after = {(r.info.run_id, k): len(history(c, r, k)) for r in runs_of(c, cfg) for k in r.data.metrics}
    assert after == before and len(runs_of(c, cfg)) == 4


def test_statuses_after_interrupt_failure_and_resume(tmp_path):
    cfg, c, tasks, tracker = started_tracker(tmp_path)
    tracker.task_done(scripted_table(tasks[0]))
    tracker.close("KILLED")                                   # Ctrl-C / SIGTERM
    assert {r.info.status for r in runs_of(c, cfg)} == {"KILLED"}
    # the resume: runs RUNNING again, then a task fails for good → FAILED where its configs are
    import pyarrow as pa

    tables = [scripted_table(tasks[0])]
    resumed = SweepTracker(c, cfg, tasks)
    resumed.start(pa.concat_tables(tables).to_pandas())
    assert {r.info.status for r in runs_of(c, cfg)} == {"RUNNING"}
    bad = [t for t in tasks if t["configs"][0][0] == "gammatune"][0]
    for t in tasks[1:]:
        tables.append(scripted_table(t, fail=t is bad))
        resumed.task_done(tables[-1])
    summarise_into(resumed, tables, status="FAILED")
    status = {r.data.tags.get("policy", "sweep"): r.info.status for r in runs_of(c, cfg)}
    assert status == {"sweep": "FAILED", "fixed": "FINISHED", "gammatune": "FAILED", "ar": "FAILED"}


def test_runs_are_keyed_by_output_folder_and_report_reads_one_sweep(tmp_path, capsys):
    a, b = make_cfg(tmp_path, "out_a"), make_cfg(tmp_path, "out_b")
    assert a.fingerprint() == b.fingerprint()
    c = client(a)
    for cfg, seed in ((a, 0), (b, 1)):
        tasks = tasks_of(cfg)
        tr = SweepTracker(c, cfg, tasks)
        tr.start()
        tables = [scripted_table(t, seed=seed) for t in tasks]
        for t in tables:
            tr.task_done(t)
        summarise_into(tr, tables)
    sweeps = runs_of(c, a, "sweep")
    assert len(sweeps) == 2 and len({s.data.tags[SWEEP_KEY] for s in sweeps}) == 2
    assert len(runs_of(c, a, "policy")) == 6                  # nothing merged
    for r in runs_of(c, a, "policy"):
        assert [s for s, _ in history(c, r, "throughput")] == GAMMAS
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    sa, _, _ = read_experiment(a.experiment_name, uri, a.output)
    sb, _, _ = read_experiment(a.experiment_name, uri, b.output)
    assert len(sa) == len(sb) == 2 * len(GAMMAS) + 1          # policies × γ + ar, one sweep each
    assert not sa["throughput"].reset_index(drop=True).equals(sb["throughput"].reset_index(drop=True))
    latest, _, _ = read_experiment(a.experiment_name, uri)
    assert len(latest) == len(sa) and "holds 2 sweeps; reading the latest" in capsys.readouterr().err
    from policies.errors import SpecsweepError

    with pytest.raises(SpecsweepError, match="holds no sweep with output"):
        read_experiment(a.experiment_name, uri, str(tmp_path / "elsewhere"))


def test_credentials_never_reach_mlflow_or_the_console(tmp_path, capsys):
    cfg = make_cfg(tmp_path, tracking_uri=f"http://alice:{SECRET}@127.0.0.1:9",
                   dataset={"source": "sample", "question_ids": QUESTIONS})
    c = client(cfg)                                          # the store itself is local here
    tasks = tasks_of(cfg)
    tr = SweepTracker(c, cfg, tasks)
    tr.start()
    tables = [scripted_table(t) for t in tasks]
    for t in tables:
        tr.task_done(t)
    summarise_into(tr, tables)
    err = capsys.readouterr().err
    assert "view it at http://***@127.0.0.1:9/#/experiments/" in err and SECRET not in err
    for r in runs_of(c, cfg):
        stored = json.dumps({**r.data.tags, **r.data.params})
        assert SECRET not in stored
    sweep = runs_of(c, cfg, "sweep")[0]
    assert "***@127.0.0.1:9" in sweep.data.tags["specsweep.config"]


def test_unreachable_server_message_is_masked():
    from jobs.mlflow.client import client_for
    from policies.errors import SpecsweepError

    with pytest.raises(SpecsweepError) as e:
        client_for(f"http://alice:{SECRET}@127.0.0.1:9")
    assert SECRET not in str(e.value) and "***@127.0.0.1:9" in str(e.value)
    import os

    assert os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] == "true"    # no unmasked "View run at" lines


def test_live_values_match_the_summary_definitions(tmp_path):
    """The running sums give the same numbers as jobs/report/metrics.py on the same rows."""
    import pyarrow as pa

    from jobs.report import metrics
    from jobs.mlflow.stream import measure

    cfg = make_cfg(tmp_path)
    tasks = tasks_of(cfg)
    tracker = SweepTracker(client(cfg), cfg, tasks)
    tables = [scripted_table(t) for t in tasks]
    tracker._ingest(pa.concat_tables(tables).to_pylist())
    df = pa.concat_tables(tables).to_pandas()
    summary = metrics.config_summary(df).set_index(["pair", "policy_spec", "gamma"])
    speed = metrics.speedup_vs_ar(df).set_index(["pair", "policy_spec", "gamma"])
    for (*key, mode), conf in tracker.configs.items():     # (pair, spec, γ, mode)
        key = tuple(key)
        assert mode == "live"
        ar = tracker.configs[(key[0], "ar", 0, "live")]
        m = measure(conf.parts, ar.parts if key[1] != "ar" else None)
        row = summary.loc[key]
        for k in ("throughput", "mean_accepted_length", "questions"):
            assert m[k] == pytest.approx(row[k]), (key, k)
        if key[1] != "ar":
            assert m["acceptance_rate"] == pytest.approx(row["acceptance_rate"])
            assert m["speedup"] == pytest.approx(speed.loc[key, "overall"])


@pytest.mark.parametrize("when", ["mid-sweep", "at the end"])
def test_a_tracking_server_that_goes_away_never_fails_the_end_of_the_sweep(tmp_path, capsys, when):
    """The server fails while streaming (the summary is not attempted) or only while the summary is logged: either
    way ``finish`` returns, one line on stderr says so, and nothing raises into the sweep's report."""
    import pyarrow as pa
    from mlflow.exceptions import MlflowException

    from jobs.report import metrics

    cfg, c, tasks, tracker = started_tracker(tmp_path)
    calls = []

    def down(*args, **kwargs):
        calls.append(1)
        raise MlflowException("API request failed: Connection refused")

    tables = [scripted_table(t) for t in tasks]
    tracker.task_done(tables[0])
    tracker.flush()
    for name in ("log_batch", "log_artifact", "log_table", "set_terminated", "log_inputs"):
        setattr(c, name, down)
    if when == "mid-sweep":
        for t in tables[1:]:
            tracker.task_done(t)
    df = pa.concat_tables(tables).to_pandas()
    capsys.readouterr()
    parent = tracker.finish("FINISHED", metrics.config_summary(df), metrics.speedup_vs_ar(df), 0, (), {})
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert parent == tracker.parent and calls
    assert len(err) == 1 and "the Parquet log" in err[0] and "run the sweep again" in err[0], err
    assert ("stopped mid-sweep" if when == "mid-sweep" else "summary could not be logged") in err[0], err


# ---------------------------------------------------------------------------------------------- modes

def test_live_and_replayed_rows_go_to_separate_runs(tmp_path):
    """Rows carry mode live / replay / none (= live): one run per (pair, spec, mode), histories never merge."""
    import pyarrow as pa

    from jobs.report import metrics
    from jobs.mlflow.runs import RUN_KEY

    cfg = make_cfg(tmp_path)
    c = client(cfg)
    tasks = tasks_of(cfg)                              # a plan without modes: the replay runs appear with their rows
    tracker = SweepTracker(c, cfg, tasks)
    tracker.start()
    tables = []
    for i, t in enumerate(tasks):
        live = scripted_table(t)
        tables += [with_mode(live, None if i % 2 else "live"), replayed(live)]
        tracker.task_done(pa.concat_tables(tables[-2:]))
    tracker.flush()
    runs = policy_runs_by(c, cfg)
    assert sorted(runs) == [("ar", "live"), ("fixed", "live"), ("fixed", "replay"), ("gammatune:eta=0.5", "live"),
                            ("gammatune:eta=0.5", "replay")]
    rep = runs[("fixed", "replay")]
    assert rep.info.run_name == "fixed · tiny · replay" and rep.data.tags[RUN_KEY] == "tiny|fixed|replay"
    assert rep.data.params["mode"] == "replay" and "replayed" in rep.data.tags["mlflow.note.content"]
    df = pa.concat_tables(tables).to_pandas()
    mode = df["mode"].fillna("live")
    want = {m: metrics.config_summary(df[(mode == m) | (df["policy"] == "ar")]).set_index(["policy_spec", "gamma"])
            for m in ("live", "replay")}
    for (spec, m), r in runs.items():
        if spec == "ar":
            continue
        got = history(c, r, "throughput")
        assert [s for s, _ in got] == GAMMAS, (spec, m)
        assert [v for _, v in got] == pytest.approx([want[m].loc[(spec, g), "throughput"] for g in GAMMAS]), (spec, m)
    # the sweep's summary holds one mode per config (replay preferred): it goes to the replay runs only
    has_replay = set(df.loc[mode == "replay", "config_key"])
    ok = df[(mode == "replay") | ~df["config_key"].isin(has_replay)]
    tracker.finish("FINISHED", metrics.config_summary(ok), metrics.speedup_vs_ar(ok))
    runs = policy_runs_by(c, cfg)
    for spec in ("fixed", "gammatune:eta=0.5"):
        live, rep = runs[(spec, "live")], runs[(spec, "replay")]
        assert len(history(c, live, "throughput")) == len(GAMMAS)            # nothing merged into the live run
        assert "speedup" not in live.data.metrics and "across_gamma/best_gamma" not in live.data.metrics
        assert [s for s, _ in history(c, rep, "speedup")] == GAMMAS
        assert "across_gamma/table2_speedup_mean" in rep.data.metrics
    assert {r.info.status for r in runs_of(c, cfg)} == {"FINISHED"}
    read, speed, _ = read_experiment(cfg.experiment_name, cfg.tracking_uri)     # the summary's mode, not a mix
    read = read[read["policy"] != "ar"].set_index(["policy_spec", "gamma"])["throughput"]
    assert read.to_dict() == pytest.approx(want["replay"].loc[read.index, "throughput"].to_dict())
    assert len(speed) == 2 * len(GAMMAS)


def test_report_experiment_never_shows_the_other_modes_time_where_the_shown_mode_has_none(tmp_path):
    """A replay-preferred sweep whose replayed ``fixed`` rows carry untrusted times: ``--experiment`` shows no
    throughput for ``fixed`` rather than its live validation run's; the trusted config reads back its replay figures."""
    import pyarrow as pa

    from actors.loading.schema import to_table
    from jobs.report import metrics
    from jobs.report.derived import trusted_times

    cfg, c, tasks, tracker = started_tracker(tmp_path)
    tables = []
    for t in tasks:
        live = scripted_table(t)
        rep = replayed(live).to_pylist()
        for r in rep:
            r["time_reliable"] = r["policy"] != "fixed"           # fixed's cost model was not trusted
        tables += [with_mode(live, "live"), to_table(rep)]
        tracker.task_done(pa.concat_tables(tables[-2:]))
    df = trusted_times(pa.concat_tables(tables).to_pandas())
    has_replay = set(df.loc[df["mode"] == "replay", "config_key"])
    shown = df[(df["mode"] == "replay") | ~df["config_key"].isin(has_replay)]
    tracker.finish("FINISHED", metrics.config_summary(shown), metrics.speedup_vs_ar(shown))
    runs = policy_runs_by(c, cfg)
    assert history(c, runs[("fixed", "live")], "throughput")               # the live figures exist in MLflow ...
    read, speed, _ = read_experiment(cfg.experiment_name, cfg.tracking_uri)
    fixed = read[read["policy_spec"] == "fixed"]
    assert fixed.empty or fixed["throughput"].isna().all(), fixed          # ... and never stand in for the replay's
    assert speed.empty or not (speed["policy_spec"] == "fixed").any() or speed.loc[
        speed["policy_spec"] == "fixed", "overall"].isna().all()
    want = metrics.config_summary(df[(df["mode"] == "replay") | (df["policy"] == "ar")]).set_index(
        ["policy_spec", "gamma"])
    got = read[read["policy_spec"] == "gammatune:eta=0.5"].set_index(["policy_spec", "gamma"])["throughput"]
    assert len(got) == len(GAMMAS)
    assert got.to_dict() == pytest.approx(want.loc[got.index, "throughput"].to_dict())

def test_planned_modes_summary_by_mode_curves_and_dataset(tmp_path):
    """Tasks that announce their live and replayed configs: every run exists before the first task;
    a summary with a mode column goes run by run; each policy run holds its γ curve and the dataset."""
    import pyarrow as pa

    from jobs.report import metrics

    cfg = make_cfg(tmp_path)
    c = client(cfg)
    tasks = tasks_of(cfg)
    for t in tasks:                                    # the shape of a replay sweep's plan: fixed is also validated live
        t["replay"] = [list(x) for x in t["configs"]]
        t["live"] = [list(x) for x in t["configs"] if x[0] == "fixed"]
    tracker = SweepTracker(c, cfg, tasks)
    tracker.start()
    assert sorted(policy_runs_by(c, cfg)) == [("ar", "live"), ("fixed", "live"), ("fixed", "replay"),
                                              ("gammatune:eta=0.5", "replay"), ("oracle (bound)", "replay")]
    tables = []
    for t in tasks:
        live = scripted_table(t)
        tables += [with_mode(live, "live", keep=lambda r: r["policy"] in ("ar", "fixed")), replayed(live)]
        tracker.task_done(pa.concat_tables(tables[-2:]))
    df = pa.concat_tables(tables).to_pandas()
    parts = []
    for m in ("live", "replay"):
        rows = df[(df["mode"] == m) | (df["policy"] == "ar")]
        s = metrics.config_summary(rows)
        parts.append(s[s["policy"] != "ar"].assign(mode=m) if m == "replay" else s.assign(mode=m))
    summary = pd.concat(parts, ignore_index=True)
    tracker.finish("FINISHED", summary, None)
    runs = policy_runs_by(c, cfg)
    assert {r.info.status for r in runs_of(c, cfg)} == {"FINISHED"}
    for (spec, m), r in runs.items():
        if spec == "oracle (bound)":                   # planned for replayed tasks; these scripted rows have none
            continue
        want = summary[(summary["policy_spec"] == spec) & (summary["mode"] == m)]
        got = dict(history(c, r, "throughput"))
        if spec != "ar":
            assert got == pytest.approx(dict(zip(want["gamma"], want["throughput"]))), (spec, m)
            assert sorted(read_points(c, r.info.run_id)) == GAMMAS                # intervals per γ, not charted
            assert all(points["throughput_lo"] <= got[g] for g, points in read_points(c, r.info.run_id).items())
            assert "across_gamma/best_gamma" in r.data.metrics
            arts = {a.path: a.file_size for a in c.list_artifacts(r.info.run_id)}
            assert arts.get("gamma_curve.png", 0) > 1000, arts
            png = Path(c.download_artifacts(r.info.run_id, "gamma_curve.png", str(tmp_path)))
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        ds = [d for d in r.inputs.dataset_inputs]
        assert len(ds) == 1 and ds[0].dataset.name == "sample", (spec, m)
        assert "sample_questions.jsonl" in ds[0].dataset.source
        assert {t.key: t.value for t in ds[0].tags}["mlflow.data.context"] == "eval"
    digest = ds[0].dataset.digest
    assert all(r.inputs.dataset_inputs[0].dataset.digest == digest for r in runs_of(c, cfg))
    # a resume logs the dataset no second time; another selection of the same source has another digest
    again = SweepTracker(c, cfg, tasks)
    again.start(df)
    again.close("FINISHED")
    assert all(len(r.inputs.dataset_inputs) == 1 for r in runs_of(c, cfg))
    from jobs.mlflow.artifacts import dataset_entity

    assert dataset_entity("sample", tasks[:1]).digest != digest == dataset_entity("sample", tasks).digest


# ---------------------------------------------------------------------------------------------- real sweeps

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from cluster.ray_setup import connect
    from actors.loading.tiny_pair import save_tiny_pair

    target, draft = save_tiny_pair(tmp_path_factory.mktemp("pair"))
    connect(None, num_cpus=2, object_store_mb=200)
    yield target, draft
    ray.shutdown()


def test_real_sweep_streams_is_killed_and_resumes(cluster, tmp_path):
    from jobs.sweep.driver import run_sweep

    target, draft = cluster
    raw = {"name": f"s-{tmp_path.name}", "output": str(tmp_path / "out"), "tracking_uri": f"sqlite:///{tmp_path}/mlflow.db",
           "pairs": [{"name": "tiny", "target": target, "draft": draft, "actors": 1}],
           "dataset": {"source": "sample", "question_ids": QUESTIONS}, "generation": {"max_new_tokens": 12},
           "policies": ["fixed", {"gammatune": {"eta": 0.5}}], "gammas": GAMMAS, "warmup": 0, "block_size": 2,
           "calibrate": {"context": 16, "max_tokens": 4, "repeats": 1, "judge": False}}
    cfg = parse_config(raw)
    c = client(cfg)
    seen = {}

    def stop_after_two(n):
        if n == 1:   # the first task is in the store while the sweep runs
            import time

            deadline = time.time() + 20
            while time.time() < deadline and not seen.get("live"):
                runs = runs_of(c, cfg, "policy")
                seen["statuses"] = {r.info.status for r in runs_of(c, cfg)}
                seen["live"] = [k for r in runs for k in r.data.metrics if k.startswith("live/")]
                time.sleep(0.2)
        if n == 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_sweep(cfg, on_task_done=stop_after_two)
    assert seen["live"] and seen["statuses"] == {"RUNNING"}
    assert {r.info.status for r in runs_of(c, cfg)} == {"KILLED"}
    res = run_sweep(parse_config(raw))                        # resume
    assert res["failed_rows"] == 0
    assert {r.info.status for r in runs_of(c, cfg)} == {"FINISHED"} and len(runs_of(c, cfg)) == 4
    for r in runs_of(c, cfg, "policy"):
        assert [s for s, _ in history(c, r, "throughput")] == GAMMAS, r.info.run_name
    t = res["mlflow_timings"]
    print(f"\nMLflow overhead (resumed part): driver {t['driver_s'] * 1e3:.1f} ms over {t['tasks']} tasks, "
          f"sender {t['sender_s'] * 1e3:.1f} ms, start {t['start_s'] * 1e3:.0f} ms, finish {t['finish_s'] * 1e3:.0f} ms")
    from mlflow.tracking import MlflowClient

    sweep = runs_of(c, cfg, "sweep")[0]
    arts = {a.path for a in MlflowClient(tracking_uri=cfg.tracking_uri).list_artifacts(sweep.info.run_id)}
    assert {"summary.csv", "actors.json", "tables"} <= arts


def test_the_fraction_of_oracle_read_back_follows_the_logs_reference_and_mode():
    """The bound where replay computed it, over the replayed configs only; else the oracle policy; no time, no row."""
    from jobs.mlflow.read import fractions

    rows = [("p", "oracle-bound", "oracle (bound)", 0, "replay", 20.0), ("p", "fixed", "fixed", 2, "replay", 15.0),
            ("p", "fixed", "fixed", 4, "replay", float("nan")), ("p", "oracle", "oracle", 8, "live", 12.0),
            ("p", "gt", "gt", 8, "live", 14.0), ("q", "oracle", "oracle", 2, "live", 10.0),
            ("q", "oracle", "oracle", 4, "live", 12.0), ("q", "fixed", "fixed", 2, "live", 9.9)]
    summary = pd.DataFrame(rows, columns=["pair", "policy", "policy_spec", "gamma", "mode", "throughput"])
    f = fractions(summary).set_index(["pair", "policy_spec", "gamma"])["fraction_of_oracle"]
    assert f.to_dict() == pytest.approx({("p", "fixed", 2): 0.75, ("q", "fixed", 2): 0.9})
    assert fractions(summary[summary["pair"] == "p"].assign(throughput=float("nan"))).empty


def test_positions_are_charted_up_to_the_largest_initial_gamma_only():
    from jobs.mlflow.summary import charted_position

    assert [charted_position(f"accept_rate_pos_{i}", 3) for i in (1, 3, 4, 16)] == [True, True, False, False]
    assert not charted_position("accept_rate_pos", 3) and not charted_position("acceptance_rate", 3)
