"""What a sweep writes into MLflow when something goes wrong or runs twice: statuses after a refused upload, a re-run
logging what streaming missed, tables replaced not appended, ``--fresh``, an experiment created meanwhile, replayed
times judged untrusted, batch runs' drafter tag and run names that fit MLflow's column.

Scripted task tables (``tests/mlflow_rows.py``) into a local sqlite store; no model, no Ray.
"""
from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest

pytest.importorskip("mlflow")

from actors.loading.schema import to_table  # noqa: E402
from jobs.mlflow.runs import NAME_MAX, ROLE, SUPERSEDED, experiment_id, run_name  # noqa: E402
from jobs.mlflow.tracking import SweepTracker  # noqa: E402
from jobs.report import metrics  # noqa: E402
from tests.mlflow_rows import (client, history, make_cfg, replayed, runs_of, scripted_table,  # noqa: E402
                               tasks_of)


@pytest.fixture(autouse=True)
def _artifacts_in_tmp(tmp_path, monkeypatch):
    """A sqlite store puts artifacts under ./mlruns of the working directory: keep them in tmp_path."""
    monkeypatch.chdir(tmp_path)


class Wrapped:
    """An MlflowClient whose listed methods are replaced (the rest pass through)."""

    def __init__(self, c, **replace):
        self.c, self.replace = c, replace

    def __getattr__(self, name):
        return self.replace.get(name) or getattr(self.c, name)


def summary_of(tables, prefer=None, untrusted=None):
    from jobs.report.agreement import mark_untrusted, primary_rows
    from jobs.report.derived import trusted_times

    df = pa.concat_tables(tables, promote_options="default").to_pandas()
    ok = df[df["status"] == "ok"]
    if prefer:
        ok = primary_rows(ok, prefer)
    if untrusted:
        ok = mark_untrusted(ok, untrusted)
    ok = trusted_times(ok)
    return df, metrics.config_summary(ok), metrics.speedup_vs_ar(ok)


def latest_by_step(c, run, key) -> dict:
    """step → the latest value at that step (what the runs table and ``report --experiment`` read)."""
    return dict(history(c, run, key))


def test_a_refused_artifact_upload_still_ends_every_run(tmp_path, capsys):
    """The artifact store refuses uploads: the sweep run's tags are still set and no run stays RUNNING."""
    cfg = make_cfg(tmp_path)
    c, tasks = client(cfg), tasks_of(cfg)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "/mlruns/1")

    tables = [scripted_table(t) for t in tasks]
    _, summary, speed = summary_of(tables)
    tracker = SweepTracker(Wrapped(c, log_artifact=refuse), cfg, tasks)
    tracker.start(None)
    for t in tables:
        tracker.task_done(t)
    capsys.readouterr()
    tracker.finish("FINISHED", summary, speed, 0)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "could not be logged" in err[0] and "Permission denied" in err[0], err
    statuses = {r.data.tags.get("policy_spec", "sweep"): r.info.status for r in runs_of(c, cfg)}
    assert statuses.pop("sweep") == "FAILED"             # part of the end is missing from MLflow
    assert statuses and set(statuses.values()) == {"FINISHED"}, statuses
    assert runs_of(c, cfg, "sweep")[0].data.tags["configs"] == str(len(summary))


def test_a_rerun_logs_the_points_only_streaming_writes(tmp_path):
    """mode both: the replay runs' per-γ points come only from streaming; MLflow failed while streaming, so the
    sweep run again logs them, and a third run adds no point."""
    from jobs.report.agreement import mode_shown

    cfg = make_cfg(tmp_path, mode="both")
    c, tasks = client(cfg), tasks_of(cfg)
    tables = []
    for t in tasks:
        live = scripted_table(t)
        tables.append(pa.concat_tables([live, replayed(live)], promote_options="default"))
    df, summary, speed = summary_of(tables, prefer=mode_shown("both"))

    def unavailable(*args, **kwargs):
        raise RuntimeError("503 Service Unavailable")

    flaky = Wrapped(c)
    tracker = SweepTracker(flaky, cfg, tasks)
    tracker.start(None)
    flaky.replace["log_batch"] = unavailable             # MLflow goes away once the runs exist
    for t in tables:
        tracker.task_done(t)
    tracker.finish("FINISHED", summary, speed, 0)
    for _ in range(2):                                   # run again (MLflow is back), then once more
        tracker = SweepTracker(c, cfg, tasks)
        tracker.start(df)
        tracker.finish("FINISHED", summary, speed, 0)
    replay = {r.data.tags["policy_spec"]: r for r in runs_of(c, cfg, "policy") if r.data.tags["mode"] == "replay"}
    for spec in ("fixed", "gammatune:eta=0.5"):
        points = history(c, replay[spec], "throughput")
        assert [s for s, _ in points] == [2, 4], (spec, points)       # logged once, not again by the third run
        want = summary_of(tables, prefer="replay")[1]
        want = want[want["policy_spec"] == spec].set_index("gamma")["throughput"]
        assert all(math.isclose(v, want[s], rel_tol=1e-9) for s, v in points), (points, want)


def test_a_repeated_finish_replaces_the_tables(tmp_path):
    """``tables/*.json`` are rewritten whole (``log_table``'s JSON layout), never appended to."""
    cfg = make_cfg(tmp_path)
    c, tasks = client(cfg), tasks_of(cfg)
    tables = [scripted_table(t) for t in tasks]
    df, summary, speed = summary_of(tables)
    for rows in (None, df):
        tracker = SweepTracker(c, cfg, tasks)
        tracker.start(rows)
        for t in tables if rows is None else ():
            tracker.task_done(t)
        tracker.finish("FINISHED", summary, speed, 0, (), {"summary": summary})
    sweep = runs_of(c, cfg, "sweep")[0]
    doc = json.loads(open(c.download_artifacts(sweep.info.run_id, "tables/summary.json", str(tmp_path))).read())
    assert set(doc) == {"columns", "data"} and len(doc["data"]) == len(summary)
    assert doc["columns"] == list(summary.reset_index().columns)
    listed = json.loads(sweep.data.tags["mlflow.loggedArtifacts"])
    assert listed == [{"path": "tables/summary.json", "type": "table"}]


def test_fresh_supersedes_the_old_runs(tmp_path):
    """``fresh=True`` (``--fresh``, same config and output): new runs, the old ones marked superseded and never
    reused; a config without results in the fresh sweep shows none of the discarded values."""
    cfg = make_cfg(tmp_path)
    c, tasks = client(cfg), tasks_of(cfg)
    old = [scripted_table(t) for t in tasks]
    tracker = SweepTracker(c, cfg, tasks)
    tracker.start(None)
    for t in old:
        tracker.task_done(t)
    tracker.finish("FINISHED", *summary_of(old)[1:], 0)
    old_ids = {r.info.run_id for r in runs_of(c, cfg)}
    new = [scripted_table(t, fail=any(x[0] == "gammatune" for x in t["configs"]), seed=1) for t in tasks]
    df, summary, speed = summary_of(new)
    tracker = SweepTracker(c, cfg, tasks, fresh=True)
    tracker.start(None)
    for t in new:
        tracker.task_done(t)
    tracker.finish("FAILED", summary, speed, int((df.status != "ok").sum()))
    runs = runs_of(c, cfg)
    assert {r.info.run_id for r in runs if SUPERSEDED in r.data.tags} == old_ids
    current = [r for r in runs if SUPERSEDED not in r.data.tags]
    assert len(current) == len(old_ids) and not old_ids & {r.info.run_id for r in current}
    gt = next(r for r in current if r.data.tags.get("policy_spec") == "gammatune:eta=0.5")
    assert not any(k == "throughput" or k.startswith("across_gamma/") for k in gt.data.metrics), gt.data.metrics
    resumed = SweepTracker(c, cfg, tasks)                # a later resume finds the fresh runs
    assert resumed.start(df) == next(r.info.run_id for r in current if r.data.tags.get(ROLE) == "sweep")
    resumed.close("FAILED")


def test_an_experiment_created_by_another_sweep_meanwhile_is_used(tmp_path):
    cfg = make_cfg(tmp_path)
    c = client(cfg)
    created = []

    def late_lookup(name):                               # the sweep beside us creates it after our lookup
        if not created:
            created.append(c.create_experiment(name))
            return None
        return c.get_experiment_by_name(name)

    assert experiment_id(Wrapped(c, get_experiment_by_name=late_lookup), cfg.experiment_name,
                         cfg.tracking_uri) == created[0]


def test_replayed_times_judged_untrusted_end_on_nan(tmp_path):
    """Validation rejects the replayed times at the end: the streamed ``throughput`` and ``live/speedup`` points of
    the replay runs are followed by NaN, so no time is their latest point."""
    cfg = make_cfg(tmp_path, mode="replay")
    c, tasks = client(cfg), tasks_of(cfg)
    tables = []
    for t in tasks:
        rows = []
        for r in scripted_table(t).to_pylist():
            if r["policy"] == "ar":
                rows.append({**r, "mode": "live", "ar_timing": "first"})
                continue
            for mode in ("live", "replay"):
                if any(x[0] == r["policy"] and x[2] == r["gamma"] for x in t[mode]):
                    rows.append({**r, "mode": mode, "time_reliable": True} if mode == "replay" else {**r, "mode": mode})
        tables.append(to_table(rows))
    untrusted = {"tiny": ["validated replays miss live times"]}
    _, summary, speed = summary_of(tables, prefer="replay", untrusted=untrusted)
    tracker = SweepTracker(c, cfg, tasks)
    tracker.start(None)
    for t in tables:
        tracker.task_done(t)
    tracker.mark_untrusted(untrusted)
    tracker.finish("FINISHED", summary, speed, 0)
    replay = [r for r in runs_of(c, cfg, "policy") if r.data.tags["mode"] == "replay" and r.data.metrics]
    assert replay
    for r in replay:
        assert r.data.tags.get("times") == "unreliable"
        for key in ("throughput", "live/speedup"):
            latest = latest_by_step(c, r, key)
            assert sorted(latest) == [2, 4] and all(math.isnan(v) for v in latest.values()), (key, latest)
            assert all(math.isfinite(v) for _, v in history(c, r, key)[:2]), history(c, r, key)


def test_batch_runs_carry_their_pair_drafter(tmp_path):
    cfg = make_cfg(tmp_path, batch_sizes=[1, 2])
    c, tasks = client(cfg), tasks_of(cfg)
    tracker = SweepTracker(c, cfg, tasks)
    tracker.start(None)
    tracker.close("KILLED")
    drafters = {(r.data.tags["pair"], r.data.tags["policy_spec"]): r.data.tags.get("drafter")
                for r in runs_of(c, cfg, "policy")}
    assert {p for p, _ in drafters} == {"tiny", "tiny@B2"}
    assert set(drafters.values()) == {"model"}, drafters


def test_long_run_names_fit_and_stay_distinct():
    """MLflow's SQL stores hold run names of at most 250 characters: a long spec is cut, the pair and mode stay."""
    specs = ["gammatune:" + ",".join(f"p{i}={i}" for i in range(60)) + tail for tail in (",x=1", ",x=2")]
    names = [run_name("tiny@B2", s, "replay") for s in specs]
    assert all(len(n) <= NAME_MAX for n in names) and names[0] != names[1]
    assert all(n.startswith("gammatune:p0=0,p1=1") and n.endswith(" · tiny@B2 · replay") for n in names), names
    assert run_name("tiny", "fixed", "live") == "fixed · tiny"
    assert len(run_name("p" * 400, "fixed", "live")) <= NAME_MAX


def test_table2_figures_follow_the_reports_pairing_when_a_config_misses_a_question(tmp_path):
    cfg = make_cfg(tmp_path)
    c, tasks = client(cfg), tasks_of(cfg)
    tables = []
    for t in tasks:
        rows = scripted_table(t).to_pylist()
        for r in rows:             # gammatune γ 2 fails on one question: the report pairs it with fixed on the rest
            if r["policy"] == "gammatune" and r["gamma"] == 2 and r["question_id"] == 9017:
                r["status"], r["error"] = "failed", "boom"
        tables.append(to_table(rows))
    df, summary, speed = summary_of(tables)
    t2 = metrics.table2(df[df["status"] == "ok"])
    tracker = SweepTracker(c, cfg, tasks)
    tracker.start(None)
    for t in tables:
        tracker.task_done(t)
    tracker.finish("FAILED", summary, speed, 1, (), None, t2)
    seen = 0
    for r in runs_of(c, cfg, "policy"):
        spec = r.data.tags["policy_spec"]
        want = t2[(t2["pair"] == "tiny") & (t2["policy_spec"] == spec)]["mean"]
        if spec == "ar" or not len(want):
            continue
        assert r.data.metrics["across_gamma/table2_speedup_mean"] == pytest.approx(float(want.iloc[0]))
        seen += 1
    assert seen >= 2


def test_a_run_that_cannot_be_opened_mid_sweep_stops_streaming_not_the_sweep(tmp_path):
    cfg = make_cfg(tmp_path)
    c, tasks = client(cfg), tasks_of(cfg)
    tracker = SweepTracker(c, cfg, tasks)
    tracker.start(None)

    def refuse(*a, **k):
        raise ConnectionError("tracking server gone")

    tracker.client = Wrapped(c, create_run=refuse)
    tracker.task_done(replayed(scripted_table(tasks[0])))     # replay rows: runs the live plan did not announce
    tracker.task_done(scripted_table(tasks[1]))               # the next task is taken as well
    assert tracker.sender.error == "tracking server gone"
    tracker.finish("FINISHED", None, None)
