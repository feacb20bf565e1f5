"""A sweep killed with SIGKILL leaves part of its local Ray cluster running (issue 30): the next sweep on the folder
finds it by the session recorded there, stops exactly those processes, says so in one line, and finishes.

Slow tier: it starts Ray twice. The sweep runs as its own process (``python -m jobs.sweep``); nothing here runs
``ray stop`` or touches a process the killed sweep did not start.
"""
from __future__ import annotations

import json
import re
import signal

import psutil
import pytest

from actors.loading.tiny_pair import save_tiny_pair
from cluster.ray_session import SESSION_FILE, stop_leftover
from tests.sweep_process import SweepProcess, lock_is_free, tiny_config


def same_and_running(rec: dict) -> bool:
    """Whether the recorded process ({pid, started}) is still that process and still runs (not a zombie)."""
    try:
        p = psutil.Process(rec["pid"])
        return round(p.create_time(), 2) == rec["started"] and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.mark.slow
def test_the_next_sweep_stops_the_cluster_a_killed_sweep_left(tmp_path_factory, tmp_path):
    target, draft = save_tiny_pair(tmp_path_factory.mktemp("pair"))
    config = tiny_config(tmp_path, target, draft, dataset={"source": "sample", "question_ids": [9001, 9021, 9023]},
                         gammas=[1, 2], block_size=1)
    out = tmp_path / "out"
    first = None
    try:
        first = SweepProcess(config)                             # the Ray backend: a new local cluster
        assert first.wait_for(r"\| 1/6 "), first.finish(signal.SIGKILL)[1][-3000:]   # a task has run
        record = json.loads((out / SESSION_FILE).read_text())
        assert record["driver"]["pid"] == first.pid
        names = {r["name"] for r in record["processes"]}
        assert {"gcs_server", "raylet"} <= names and any(n.startswith("ray::") for n in names), names
        first.finish(signal.SIGKILL)

        left = [r for r in record["processes"] if same_and_running(r)]
        assert left, "nothing of the killed sweep's cluster is left running: the case this test is about is gone"

        code, err = SweepProcess(config).finish()
        session = re.escape(record["session"].rsplit("/", 1)[-1])
        said = re.findall(rf"^specsweep: stopped the Ray cluster a killed sweep left running \(session {session}, "
                          rf"(\d+) process(?:es)?\)$", err, re.M)
        assert code == 0 and said and int(said[0]) >= 1, err[-3000:]
        assert not [r["name"] for r in left if same_and_running(r)]   # stopped, every one of them
        assert len(list((out / "log").glob("task-*.parquet"))) == 6 and (out / "report.md").exists()
        assert not (out / SESSION_FILE).exists() and lock_is_free(out)   # the second sweep shut its own cluster down
    finally:                             # a failed assertion must leave nothing of these sweeps running
        if first is not None and first.proc.poll() is None:
            first.finish(signal.SIGKILL)
        stop_leftover(out)
