"""MLflow shows what the Parquet report shows, and the report's files are written whole.

- Replayed times found unreliable only by the sweep's summary (after their throughput streamed) read back from MLflow
  with no throughput or speedup, token figures kept, as the Parquet report shows them.
- ``across_gamma/fraction_of_oracle`` and ``report --experiment``'s fraction of oracle cover the configs the Parquet
  report's fraction covers (``jobs/report/bound_scope.py``): no live config against the replayed bound, no batch
  policy at B = 1.
- ``specsweep report DIR`` and a sweep's end write the report through a synced twin renamed over it; a folder that
  refuses the write is one line naming the file (exit 2), the report still printed.
"""
from __future__ import annotations

import builtins
import errno
import io
import os
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("mlflow")

from actors.loading.schema import config_key, to_table  # noqa: E402
from policies.oracle import BOUND_LABEL, BOUND_NAME  # noqa: E402
from tests.mlflow_rows import (GAMMAS, client, make_cfg, policy_runs_by, replayed, scripted_table,  # noqa: E402
                               tasks_of, with_mode)

FRACTION = "across_gamma/fraction_of_oracle"
REASONS = {"tiny": ["validated replays miss the live wall times by 40 % (median; limit 10 %)"]}


@pytest.fixture(autouse=True)
def _artifacts_in_tmp(tmp_path, monkeypatch):
    """A sqlite store puts artifacts under ./mlruns of the working directory: keep them in tmp_path."""
    monkeypatch.chdir(tmp_path)


def bound_of(table, faster: float = 0.1):
    """The oracle bound's replayed rows for a task: its ``ar`` turns, ``faster`` × their time."""
    rows = [r for r in table.to_pylist() if r["policy"] == "ar"]
    for r in rows:
        r.update(policy=BOUND_NAME, policy_spec=BOUND_LABEL, gamma=0, mode="replay", wall_time=r["wall_time"] * faster,
                 config_key=config_key(r["pair"], BOUND_LABEL, 0))
    return to_table(rows)


def renamed(table, policy: str):
    """``table``'s ``fixed`` rows as another policy's (same tokens, 0.9 × the time)."""
    rows = [r for r in table.to_pylist() if r["policy"] == "fixed"]
    for r in rows:
        r.update(policy=policy, policy_spec=policy, wall_time=r["wall_time"] * 0.9,
                 config_key=config_key(r["pair"], policy, r["gamma"]))
    return to_table(rows)


def streamed(tmp_path, mode: str, extra=lambda live: []):
    """A scripted sweep of ``mode`` streamed into MLflow: ``ar`` live, the speculative configs replayed (and live in
    ``mode: both``), the oracle bound replayed, plus ``extra(live table)``; returns (cfg, tracker, rows)."""
    import pyarrow as pa

    from jobs.mlflow.tracking import SweepTracker

    cfg = make_cfg(tmp_path, mode=mode, **({"validate": 0.0} if mode == "replay" else {}))
    tracker = SweepTracker(client(cfg), cfg, tasks_of(cfg))
    tracker.start()
    tables = []
    for t in tasks_of(cfg):
        live = scripted_table(t)
        own = [with_mode(live, "live", keep=(lambda r: True) if mode == "both" else (lambda r: r["policy"] == "ar")),
               replayed(live), bound_of(live), *extra(live)]
        tables += own
        tracker.task_done(pa.concat_tables(own))
    return cfg, tracker, pa.concat_tables(tables).to_pandas()


def shown(df: pd.DataFrame, sweep_mode: str, untrusted: dict) -> pd.DataFrame:
    """The rows the Parquet report and the sweep's summary use (``jobs/report/tables.py``: ``shown_rows``)."""
    from jobs.report.agreement import mark_untrusted, mode_shown, primary_rows
    from jobs.report.derived import trusted_times

    return trusted_times(mark_untrusted(primary_rows(df, mode_shown(sweep_mode)), untrusted))


def keyed(df: pd.DataFrame, col: str) -> dict:
    return df.set_index(["policy_spec", "gamma"])[col].to_dict()


# ------------------------------------------------------------------------------ untrusted times read back

def test_times_found_unreliable_by_the_summary_read_back_without_time_figures(tmp_path):
    """Every replayed config's throughput streamed while its times were trusted; the summary then found the pair's
    replays off: ``--experiment`` shows no throughput, speedup or fraction for them, as the log's report does."""
    from jobs.mlflow.read import read_experiment
    from jobs.report import metrics

    cfg, tracker, df = streamed(tmp_path, "replay")
    tracker.flush()
    runs = policy_runs_by(client(cfg), cfg)
    assert all("throughput" in runs[(s, "replay")].data.metrics for s in ("fixed", "gammatune:eta=0.5"))
    rows = shown(df, "replay", REASONS)
    summary, speed = metrics.config_summary(rows), metrics.speedup_vs_ar(rows)
    tracker.mark_untrusted(REASONS)
    tracker.finish("FINISHED", summary, speed)
    assert policy_runs_by(client(cfg), cfg)[("fixed", "replay")].data.tags["times"] == "unreliable"

    read, read_speed, frac = read_experiment(cfg.experiment_name, cfg.tracking_uri)
    got, want = read.set_index(["policy_spec", "gamma"]), summary.set_index(["policy_spec", "gamma"])
    assert sorted(got.index) == sorted(want.index)                       # every config the report shows, no more
    timed = want["throughput"].notna()
    assert list(want.index[timed]) == [("ar", 0)]                        # the report: only ar keeps a time
    assert got.loc[want.index[~timed], "throughput"].isna().all(), got["throughput"]
    assert got.loc[("ar", 0), "throughput"] == pytest.approx(want.loc[("ar", 0), "throughput"])
    for col in ("throughput_lo", "throughput_hi", "speedup", "speedup_lo", "speedup_hi"):
        if col in got:
            assert got.loc[want.index[~timed], col].isna().all(), col
    assert got["mean_accepted_length"].to_dict() == pytest.approx(want["mean_accepted_length"].to_dict())
    assert set(zip(read_speed["policy_spec"], read_speed["gamma"])) == set(zip(speed["policy_spec"], speed["gamma"]))
    assert read_speed["overall"].isna().all() and speed["overall"].isna().all()
    assert frac.empty and metrics.fraction_of_oracle(rows)["fraction_of_oracle"].isna().all()


# ------------------------------------------------------------------------------ fraction of oracle scope

def test_live_configs_get_no_fraction_against_the_replayed_bound(tmp_path):
    """``mode: both``: the summary shows the live rows and the bound's replayed ones; the report sets no live config
    against the bound, and neither does MLflow."""
    from jobs.mlflow.read import read_experiment
    from jobs.report import metrics

    cfg, tracker, df = streamed(tmp_path, "both")
    rows = shown(df, "both", {})
    summary = metrics.config_summary(rows)
    assert set(summary.loc[summary["policy"] == BOUND_NAME, "policy_spec"]) == {BOUND_LABEL}
    assert metrics.fraction_of_oracle(rows).empty                        # the report: no fraction at all
    tracker.finish("FINISHED", summary, metrics.speedup_vs_ar(rows))
    runs = policy_runs_by(client(cfg), cfg)
    assert {("fixed", "live"), ("gammatune:eta=0.5", "live")} <= set(runs)
    assert "across_gamma/best_gamma" in runs[("fixed", "live")].data.metrics         # its across-γ figures exist
    assert not [k for k, r in runs.items() if FRACTION in r.data.metrics]
    _, _, frac = read_experiment(cfg.experiment_name, cfg.tracking_uri)
    assert frac.empty


def test_batch_policies_at_batch_size_1_get_no_fraction_and_chain_configs_match_the_report(tmp_path):
    """A replayed ``tetris`` (a batch policy, priced on the batch surface) beside replayed chain configs: the report
    leaves it out of the fraction of oracle; MLflow's across-γ fraction and ``--experiment``'s per-config one follow,
    and the chain configs' values are the report's."""
    from jobs.mlflow.read import read_experiment
    from jobs.report import metrics
    from jobs.report.bound_scope import BATCH_POLICIES

    assert "tetris" in BATCH_POLICIES
    cfg, tracker, df = streamed(tmp_path, "replay", extra=lambda live: [renamed(replayed(live), "tetris")])
    rows = shown(df, "replay", {})
    summary = metrics.config_summary(rows)
    report = metrics.fraction_of_oracle(rows).dropna(subset=["fraction_of_oracle"])
    assert set(report["policy_spec"]) == {"fixed", "gammatune:eta=0.5"}
    tracker.finish("FINISHED", summary, metrics.speedup_vs_ar(rows))
    runs = policy_runs_by(client(cfg), cfg)
    assert ("tetris", "replay") in runs and "across_gamma/best_gamma" in runs[("tetris", "replay")].data.metrics
    assert {k for k, r in runs.items() if FRACTION in r.data.metrics} == {("fixed", "replay"),
                                                                           ("gammatune:eta=0.5", "replay")}
    thr = summary.set_index(["policy_spec", "gamma"])["throughput"]
    for spec in ("fixed", "gammatune:eta=0.5"):
        want = thr.loc[[(spec, g) for g in GAMMAS]].mean() / thr.loc[(BOUND_LABEL, 0)]
        assert runs[(spec, "replay")].data.metrics[FRACTION] == pytest.approx(want)
    _, _, frac = read_experiment(cfg.experiment_name, cfg.tracking_uri)
    assert keyed(frac, "fraction_of_oracle") == pytest.approx(keyed(report, "fraction_of_oracle"))


def test_fractions_read_back_leave_out_what_the_reports_scope_leaves_out():
    from jobs.mlflow.read import fractions

    rows = [("p", BOUND_NAME, BOUND_LABEL, 0, "replay", 20.0), ("p", "fixed", "fixed", 2, "replay", 15.0),
            ("p", "tetris", "tetris", 2, "replay", 18.0), ("p", "gt", "gt", 2, "live", 14.0),
            ("q", "oracle", "oracle", 2, "live", 10.0), ("q", "fixed", "fixed", 2, "live", 9.0),
            ("q", "tetris", "tetris", 2, "live", 8.0)]
    summary = pd.DataFrame(rows, columns=["pair", "policy", "policy_spec", "gamma", "mode", "throughput"])
    f = fractions(summary).set_index(["pair", "policy_spec", "gamma"])["fraction_of_oracle"]
    assert f.to_dict() == pytest.approx({("p", "fixed", 2): 0.75, ("q", "fixed", 2): 0.9, ("q", "tetris", 2): 0.8})


# ------------------------------------------------------------------------------ the report's files

def scripted_folder(tmp_path) -> Path:
    """A sweep output folder holding a scripted log (no model, no cost model), each row with what a PairActor's
    row also carries for the answers and the report (prompt, steps, text)."""
    from jobs.store.parquet_log import ParquetLog

    cfg = make_cfg(tmp_path)
    log = ParquetLog(cfg.output)
    log.prepare("fp", {})
    for t in tasks_of(cfg):
        rows = scripted_table(t).to_pylist()
        for r in rows:
            steps = len(r["accept_lengths"])
            r.update(prompt_ids=[1, 2, 3, 4], decoding_steps=steps, target_calls=steps + 1, text="x " * r["new_tokens"],
                     ar_timing="first" if r["policy"] == "ar" else "", tstamp=1.0e9, batch_size=1, mode="live")
        log.write(to_table(rows))
    return Path(cfg.output)


def record_replaces(monkeypatch) -> list[Path]:
    """The paths ``jobs/store/durable.py``'s synced rename puts in place (through ``write_texts``), from now on."""
    from jobs.store import output

    done, real = [], output.durable_replace

    def replace(tmp, path):
        real(tmp, path)
        done.append(Path(path))

    monkeypatch.setattr(output, "durable_replace", replace)
    return done


def read_only(monkeypatch, folder: Path) -> None:
    """Refuse every write under ``folder`` as a read-only folder does (root writes anywhere: fake the refusal)."""
    real_os_open, real_open = os.open, builtins.open
    root = folder.resolve()

    def inside(path) -> bool:
        p = Path(os.fsdecode(path)).resolve()
        return p == root or root in p.parents

    def denied(path):
        return PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))

    def os_open(path, flags, *a, **kw):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and inside(path):
            raise denied(path)
        return real_os_open(path, flags, *a, **kw)

    def py_open(file, mode="r", *a, **kw):
        if isinstance(file, (str, bytes, os.PathLike)) and set(mode) & set("wax+") and inside(file):
            raise denied(file)
        return real_open(file, mode, *a, **kw)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", py_open)
    monkeypatch.setattr(io, "open", py_open)


def test_report_dir_writes_its_file_whole(tmp_path, monkeypatch, capsys):
    from jobs.cli import main

    out = scripted_folder(tmp_path)
    replaced = record_replaces(monkeypatch)
    assert main(["report", str(out)]) == 0
    assert (out / "report.md") in replaced and (out / "report.md").read_text() == capsys.readouterr().out
    assert not [p for p in out.iterdir() if p.name.startswith(".report.md")]        # no twin left


def test_report_dir_on_a_read_only_folder_is_one_line_and_still_prints_the_report(tmp_path, monkeypatch, capsys):
    from jobs.cli import main

    out = scripted_folder(tmp_path)
    (out / "report.md").write_text("the report of an earlier run\n")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    read_only(monkeypatch, out)
    assert main(["report", str(out)]) == 2
    got = capsys.readouterr()
    assert got.out.startswith("## Noise floor") and "## Table 2" in got.out          # the report is still printed
    err = got.err.strip().splitlines()
    assert err == [f"specsweep: error: cannot write {out / 'report.md'} (Permission denied): the report above is "
                   "not saved; make the folder writable, or report a writable copy of it"], err
    monkeypatch.undo()
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before       # nothing written or left


def test_a_write_refused_while_the_report_is_built_is_one_line(tmp_path, monkeypatch, capsys):
    """A sweep's report writes ``gamma_table.csv`` into its folder as it is built (with a cost model): refused, that
    is one line naming the file too."""
    from jobs.cli import main

    out = scripted_folder(tmp_path)

    def refused(*a, **kw):
        raise PermissionError(errno.EACCES, "Permission denied", str(out / "gamma_table.csv"))

    monkeypatch.setattr("jobs.report_cli.folder_report", refused)
    assert main(["report", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"specsweep: error: cannot write {out / 'gamma_table.csv'} (Permission denied): the report writes its tables "
        "into the folder, so none is printed; make the folder writable, or report a writable copy of it"]


def test_a_sweeps_end_writes_report_md_whole(tmp_path, monkeypatch, capsys):
    from jobs.store.parquet_log import ParquetLog
    from jobs.sweep.driver import summarise

    out = scripted_folder(tmp_path)
    monkeypatch.setattr("jobs.report.figures.all_figures", lambda *a, **kw: [])     # scripted rows draw no traces
    replaced = record_replaces(monkeypatch)
    res = summarise(make_cfg(tmp_path), ParquetLog(out), None, 0)
    assert res["failed_rows"] == 0 and res["configs"]
    assert (out / "report.md") in replaced and "## Noise floor" in (out / "report.md").read_text()
    assert not [p for p in out.iterdir() if p.name.startswith(".report.md")]        # no twin left
