"""The local Ray cluster a sweep starts, recorded in its output folder so that a killed sweep's cluster is stopped.

Ray ties its GCS, raylet and helper processes to the driver that started them, but a driver killed with SIGKILL
still leaves some running (the raylet's dashboard and runtime-env agents outlive it, listening on their ports).
Rules:

* Only a cluster the sweep starts itself (``connect`` with no address: a new local cluster) is recorded; a cluster
  it joins never is, and is never stopped.
* The record, ``OUTPUT/.ray-session.json``, names the Ray session folder, the driver and every process of the
  cluster: each descendant of the driver whose command line or open files are inside that session folder, by pid
  and start time. It is written once Ray is up and again once the actors are up; after the sweep it shuts its
  cluster down and deletes the record.
* The next sweep on the folder (holding its lock) reads a record left behind. If its driver is gone, it stops
  exactly the recorded processes that still run as the same processes — same pid, same start time, this user,
  still inside that session folder — with SIGTERM, then SIGKILL after a grace period, and says so in one line.
  Never ``ray stop``, never a process of another session or user.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import psutil

from cluster.ray_setup import connect, shutdown, target_address

SESSION_FILE = ".ray-session.json"
GRACE_S = 3.0          # how long a leftover process gets to exit on SIGTERM before SIGKILL


def _started(p: psutil.Process) -> float:
    """A process's start time (with its pid, what tells it from a later process given the same pid)."""
    return round(p.create_time(), 2)


def _alive(p: psutil.Process) -> bool:
    """Whether ``p`` still runs (a zombie has exited: only its parent has not collected it)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _in_session(p: psutil.Process, session: str) -> bool:
    """Whether ``p``'s command line names the session folder or it holds a file open inside it."""
    try:
        return session in " ".join(p.cmdline()) or any(f.path.startswith(session + os.sep) for f in p.open_files())
    except psutil.Error:
        return False


def _same(rec: dict, session: str | None = None) -> psutil.Process | None:
    """The running process ``rec`` ({pid, started}) names, if it is still that process (and, given ``session``,
    this user's and inside that session folder); else None."""
    try:
        p = psutil.Process(int(rec["pid"]))
        if _started(p) != rec["started"] or not _alive(p):
            return None
        if session is not None and (p.uids().real != os.getuid() or not _in_session(p, session)):
            return None
        return p
    except (psutil.Error, KeyError, TypeError, ValueError):
        return None


def cluster_processes(session: str) -> list[psutil.Process]:
    """This process's descendants inside the folder ``session`` (a Ray session: GCS, raylet, agents, workers)."""
    return [p for p in psutil.Process().children(recursive=True) if _in_session(p, session)]


def stop_leftover(folder: str | Path) -> str | None:
    """Stop the Ray cluster a killed sweep left running, as recorded in ``folder``; returns the line saying so
    (None when there was nothing to stop). A record whose driver still runs is left alone."""
    path = Path(folder) / SESSION_FILE
    try:
        rec = json.loads(path.read_text())
        session, driver, procs = str(rec["session"]), rec["driver"], list(rec["processes"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):     # unreadable: nothing in it can be trusted to stop
        path.unlink(missing_ok=True)
        return None
    if _same(driver) is not None:           # its sweep is still finishing: not ours to stop
        return None
    found = [p for p in (_same(r, session) for r in procs) if p is not None]
    _stop(found)
    path.unlink(missing_ok=True)
    if not found:
        return None
    return (f"stopped the Ray cluster a killed sweep left running (session {Path(session).name}, "
            f"{len(found)} process{'es' * (len(found) != 1)})")


def _stop(procs: list[psutil.Process]) -> None:
    """SIGTERM ``procs``, then SIGKILL those still running after the grace period."""
    for p in procs:
        _signal(p, signal.SIGTERM)
    left = _wait_gone(procs, GRACE_S)
    for p in left:
        _signal(p, signal.SIGKILL)
    _wait_gone(left, GRACE_S)


def _signal(p: psutil.Process, sig: int) -> None:
    """Send ``sig`` to ``p`` if it is still there."""
    try:
        p.send_signal(sig)
    except psutil.Error:
        pass


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to ``timeout`` s for ``procs`` to exit; returns those still running."""
    deadline = time.monotonic() + timeout
    left = [p for p in procs if _alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if _alive(p)]
    return left


class SweepCluster:
    """The Ray cluster of one sweep on output folder ``folder`` (a context manager around the sweep).

    Entering stops what a killed sweep left running there (one line on stderr); :meth:`connect` connects as
    ``cluster.ray_setup.connect`` does and, when that starts a new local cluster, records it (:meth:`record`);
    leaving shuts that cluster down and deletes the record.
    """

    def __init__(self, folder: str | Path):
        """Nothing is read or started yet."""
        self.path = Path(folder) / SESSION_FILE
        self.session: str | None = None          # the session folder of the cluster this sweep started

    def __enter__(self) -> "SweepCluster":
        """Stop a killed sweep's leftover cluster (saying so in one line)."""
        line = stop_leftover(self.path.parent)
        if line:
            sys.stderr.write(f"specsweep: {line}\n")        # one write: a signal cannot split it
        return self

    def connect(self, address: str | None) -> dict:
        """Connect (or start a local cluster) and record a started cluster; returns the cluster's resources."""
        import ray  # heavy: ray

        starts = not ray.is_initialized() and target_address(address) is None
        try:
            resources = connect(address)
        except BaseException:            # refused, or interrupted mid-start: stop what had started already
            if starts:
                self._stop_partial()
            raise
        if starts:
            node = getattr(ray._private.worker, "_global_node", None)
            self.session = node.get_session_dir_path() if node is not None else None
            self.record()
        return resources

    def _stop_partial(self) -> None:
        """After a local start that failed or was interrupted: shut down what Ray knows of, then stop this
        process's descendants that live in Ray's temporary folder (the half-started cluster, nothing else)."""
        shutdown()
        try:
            from ray._common.utils import get_default_ray_temp_dir  # heavy: ray

            temp = get_default_ray_temp_dir()
        except Exception:                   # a private helper: fall back to Ray's default place
            temp = os.path.join(tempfile.gettempdir(), "ray")
        _stop(cluster_processes(temp))

    def record(self) -> None:
        """(Re)write the record: the driver and every process of the cluster this sweep started (none: no-op)."""
        if self.session is None:
            return
        me, procs = psutil.Process(), []
        for p in cluster_processes(self.session):
            try:
                procs.append({"pid": p.pid, "started": _started(p), "name": p.name()})
            except psutil.Error:              # exited meanwhile
                continue
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"session": self.session, "driver": {"pid": me.pid, "started": _started(me)},
                                   "processes": procs}, indent=1))
        os.replace(tmp, self.path)

    def __exit__(self, *exc) -> None:
        """Shut down the cluster this sweep started, then delete its record."""
        if self.session is not None:
            shutdown()
            self.path.unlink(missing_ok=True)
            self.session = None
