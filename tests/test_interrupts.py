"""SIGINT and SIGTERM at every stage of a sweep (issue 30): exit status 130 or 143, one line on stderr, no
traceback, the output lock released, finished tasks kept, and the next run resumes exactly where it stopped.

Each stage is reached by waiting for what the sweep process shows there, never by sleeping: its SIGTERM handler
in /proc (start-up: the driver and torch are still being imported), the tokenizer library mapped (the model
checks of preflight), its progress lines on stderr (actors starting with the lock held, the first finished task,
the report and MLflow stage, Ray's GCS process). Fast tier: the stages before the output folder is touched;
slow tier: the stages after the lock (four sweeps) and Ray's start (with the Ray backend).
"""
from __future__ import annotations

import signal
import time

import psutil
import pyarrow.parquet as pq
import pytest

from actors.loading.tiny_pair import save_tiny_pair
from tests.sweep_process import SweepProcess, lock_is_free, other_lines, tiny_config

STOPPED = {signal.SIGINT: (130, "specsweep: interrupted; finished tasks are kept in the log: run again to resume"),
           signal.SIGTERM: (143, "specsweep: terminated (SIGTERM); finished tasks are kept in the log: run again to "
                                 "resume")}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny target/draft pair (``actors.loading.tiny_pair``), saved once for the module."""
    return save_tiny_pair(tmp_path_factory.mktemp("pair"))


def stop_at(config, sig, reached, *args: str) -> str:
    """Start the sweep (``args``; default the in-process backend), wait until ``reached(sweep)``, send ``sig``;
    check the stop (exit status, one line, no traceback) and return stderr."""
    sweep = SweepProcess(config, *(args or ("--backend", "inprocess")))
    assert reached(sweep), sweep.finish(signal.SIGKILL)[1][-3000:]
    code, err = sweep.finish(sig)
    assert (code, other_lines(err)) == (STOPPED[sig][0], [STOPPED[sig][1]]), err[-3000:]
    assert "Traceback" not in err
    return err


def task_files(out):
    """The task files of the output folder's log."""
    return sorted((out / "log").glob("task-*.parquet"))


def test_a_signal_before_the_output_folder_is_touched_stops_at_once(tiny, tmp_path):
    config = tiny_config(tmp_path, *tiny)
    # start-up: the handler is in, the driver (torch) still importing
    stop_at(config, signal.SIGTERM, lambda s: s.poll_until(lambda: s.catches(signal.SIGTERM)))
    # preflight: the tokenizers are loading (models and tokenizers are checked before the folder is touched)
    stop_at(config, signal.SIGINT, lambda s: s.poll_until(lambda: s.has_loaded("tokenizers")))
    assert not (tmp_path / "out").exists() and not (tmp_path / "mlflow.db").exists()


@pytest.mark.slow           # four sweeps of the tiny pair, MLflow on: about a minute on 2 busy cores
def test_a_signal_after_the_lock_keeps_finished_tasks_and_the_next_run_resumes(tiny, tmp_path):
    config = tiny_config(tmp_path, *tiny, dataset={"source": "sample", "question_ids": [9001, 9021, 9023]},
                         gammas=[1, 2], block_size=1)
    out = tmp_path / "out"
    total = 6                                            # 3 questions × 2 configs, one config per task

    # the lock is held and the actors are starting: nothing is lost, the folder is free again
    stop_at(config, signal.SIGINT, lambda s: s.wait_for(r"specsweep: starting \d+ actor"))
    assert not task_files(out) and lock_is_free(out)

    # the first task has finished: it stays in the log; the rest is not run
    stop_at(config, signal.SIGTERM, lambda s: s.wait_for(r"\| 1/6 "))
    kept = {f.name: f.stat().st_mtime_ns for f in task_files(out)}
    assert 1 <= len(kept) < total and lock_is_free(out)

    # every task done, the report and MLflow being written: resumed exactly (only the missing tasks ran)
    err = stop_at(config, signal.SIGINT, lambda s: s.wait_for(r"specsweep: \d+ task\(s\) done in"))
    assert f"{total - len(kept)} task(s) to run" in err
    assert {f.name: f.stat().st_mtime_ns for f in task_files(out) if f.name in kept} == kept
    assert len(task_files(out)) == total and lock_is_free(out)

    # and a last run finishes from there: every row once, nothing run again
    code, err = SweepProcess(config, "--backend", "inprocess").finish()
    assert code == 0, err[-3000:]
    assert "task(s) to run" not in err and "Traceback" not in err
    keys = [k for f in task_files(out) for k in pq.read_table(f, columns=["task_key"]).column(0).to_pylist()]
    assert len(set(keys)) == total and (out / "report.md").exists() and lock_is_free(out)


def descendants(pid: int) -> list:
    """The processes below ``pid`` now."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def name(p) -> str:
    """A process's name ("" once it is gone)."""
    try:
        return p.name()
    except psutil.Error:
        return ""


def runs(p) -> bool:
    """Whether a process still runs (a zombie has exited; only its parent has not collected it)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def all_gone(procs, timeout: float = 30) -> bool:
    """Wait until none of ``procs`` runs any more."""
    deadline = time.monotonic() + timeout
    while any(runs(p) for p in procs):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.slow           # starts Ray twice
def test_a_signal_while_ray_or_its_actors_start_stops_cleanly_and_leaves_no_ray_process(tiny, tmp_path):
    config = tiny_config(tmp_path, *tiny)
    out = tmp_path / "out"
    seen: list = []
    names: set = set()

    def ray_starting(s):                 # the lock is held and ray.init has started the GCS: it is still starting
        return s.poll_until(lambda: "gcs_server" in seen_now(s))

    def seen_now(s):
        seen[:] = descendants(s.pid)
        names.clear()
        names.update(name(p) for p in seen)
        return names

    # while Ray starts, its own handler turns SIGTERM into SystemExit(15) (exit 15, no line, before the fix)
    stop_at(config, signal.SIGTERM, ray_starting, "--backend", "ray")
    assert seen and all_gone(seen), [name(p) for p in seen if runs(p)]
    assert not out.exists()                              # created for the lock only: removed again

    # Ray is up (its cluster recorded) and the actors are starting
    stop_at(config, signal.SIGINT, lambda s: s.wait_for(r"specsweep: starting \d+ actor") and seen_now(s),
            "--backend", "ray")
    assert "raylet" in names and all_gone(seen), [name(p) for p in seen if runs(p)]
    assert lock_is_free(out) and not (out / ".ray-session.json").exists() and not task_files(out)


def test_an_interrupt_swallowed_in_a_destructor_is_raised_at_the_next_checkpoint(capsys):
    """A signal landing in a ``__del__`` or weakref callback (seen: an import's module-lock clean-up) is swallowed
    by Python; the sweep's hook keeps the report off stderr and the next checkpoint raises it."""
    import gc

    from jobs.sweep import signals

    class DiesInterrupted:
        def __del__(self):
            raise signals.Terminated()

    import sys

    before = sys.unraisablehook
    previous = signals.install()
    try:
        signals.raise_if_swallowed()                                # nothing swallowed: nothing raised
        DiesInterrupted()
        gc.collect()
        with pytest.raises(signals.Terminated):
            signals.raise_if_swallowed()
        signals.raise_if_swallowed()                                # raised once
    finally:
        signals.restore(previous)
    assert "Exception ignored" not in capsys.readouterr().err
    assert sys.unraisablehook is before                              # restored


def test_an_interrupt_swallowed_while_the_report_is_written_still_stops_the_sweep(capsys):
    """The last checkpoint is the sweep's end: a Ctrl-C swallowed while its report and MLflow runs were written
    (SQLAlchemy cleans up in weakref callbacks) exits 130 with the stop line, not 0."""
    import gc

    from jobs.sweep import signals

    class DiesInterrupted:
        def __del__(self):
            raise KeyboardInterrupt()

    def sweep() -> int:
        DiesInterrupted()
        gc.collect()
        return 0                                                    # everything written

    assert signals.run_main(lambda: sweep) == signals.EXIT_SIGINT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specsweep:") and "Exception ignored" not in err[0]
    assert signals.run_main(lambda: lambda: 0) == 0                 # nothing swallowed: the sweep's own code
