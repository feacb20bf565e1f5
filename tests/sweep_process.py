"""A sweep run as its own process (``python -m jobs.sweep``), watched as it runs: its stderr read as it comes,
its signal handlers and loaded libraries read from /proc, its output lock tried (not a test module itself)."""
from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "RAY_USAGE_STATS_ENABLED": "0"}
PROGRESS = re.compile(r"specsweep: (starting \d+ actor|actors ready in|\d+ task\(s\) done in|report, answers"
                      r"|\d+ of \d+ actor\(s\) ready after|[\w.@-]+: (models loaded in|measuring the cost model|ready in))")


def tiny_raw(folder: Path, target: str, draft: str, prefix: str = "s", **over) -> dict:
    """A sweep config (as a mapping) for the tiny pair (``actors.loading.tiny_pair``) writing into ``folder/out``."""
    c = {"name": f"{prefix}-{folder.name}", "output": str(folder / "out"), "tracking_uri": f"sqlite:///{folder}/mlflow.db",
         "pairs": [{"name": "tiny", "target": target, "draft": draft, "actors": 1, "device": "cpu"}],
         "dataset": {"source": "sample", "question_ids": [9021, 9023]},
         "generation": {"max_new_tokens": 8}, "policies": ["fixed"], "gammas": [2], "warmup": 0,
         "calibrate": {"context": 16, "max_tokens": 4, "repeats": 1, "judge": False}}
    c.update(over)
    return c


def tiny_config(folder: Path, target: str, draft: str, **over) -> Path:
    """:func:`tiny_raw` written to ``folder/sweep.yaml``; returns its path."""
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(tiny_raw(folder, target, draft, **over)))
    return path


def _default_sigint() -> None:
    """In the child before it runs: SIGINT as a terminal sends it (a shell starts background jobs with SIGINT
    ignored, and Python then leaves it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class SweepProcess:
    """``python -m jobs.sweep CONFIG ARGS…`` started now; stderr collected by a thread as it arrives."""

    def __init__(self, config: Path, *args: str):
        """Start the sweep (stdout discarded, stderr collected)."""
        self.proc = subprocess.Popen([sys.executable, "-m", "jobs.sweep", str(config), *args], env=ENV, cwd=ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_default_sigint)
        self.pid = self.proc.pid
        self.err = ""
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Append stderr as it comes (progress bars end in carriage returns, not newlines)."""
        fd = self.proc.stderr.fileno()
        while chunk := os.read(fd, 65536):
            with self._cond:
                self.err += chunk.decode(errors="replace")
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float = 240) -> bool:
        """Wait until stderr matches ``pattern``; False if the process ended or the time ran out first."""
        rx, deadline = re.compile(pattern), time.monotonic() + timeout
        with self._cond:
            while not rx.search(self.err):
                if not self._reader.is_alive() or time.monotonic() > deadline:
                    return bool(rx.search(self.err))
                self._cond.wait(0.5)
        return True

    def poll_until(self, check, timeout: float = 240) -> bool:
        """Poll ``check()`` every 5 ms until true; False if the process ended or the time ran out first."""
        deadline = time.monotonic() + timeout
        while not check():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def catches(self, sig: int) -> bool:
        """Whether the process has a handler installed for ``sig`` (``SigCgt`` in /proc/PID/status)."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
        except OSError:
            pass
        return False

    def has_loaded(self, library: str) -> bool:
        """Whether a shared library whose path contains ``library`` is mapped into the process."""
        try:
            return library in Path(f"/proc/{self.pid}/maps").read_text()
        except OSError:
            return False

    def finish(self, sig: int | None = None, timeout: float = 240) -> tuple[int, str]:
        """Send ``sig`` (if any) and wait for the end; returns (exit status, all of stderr)."""
        if sig is not None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=30)
        return self.proc.returncode, self.err


def lock_is_free(output: Path) -> bool:
    """Whether the output folder's lock can be taken now (nobody holds it); takes and drops it at once."""
    path = Path(output) / ".specsweep.lock"
    if not path.exists():
        return True
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def lock_is_held(output: Path) -> bool:
    """Whether some process holds the output folder's lock now."""
    return (Path(output) / ".specsweep.lock").exists() and not lock_is_free(output)


def other_lines(err: str) -> list[str]:
    """The ``specsweep`` lines of stderr that are not progress lines (what a stopped sweep may say)."""
    lines = [ln.strip() for chunk in err.split("\r") for ln in chunk.splitlines()]
    return [ln for ln in lines if ln.startswith("specsweep") and not PROGRESS.match(ln)]
