"""A sweep's output folder: its marker, its one-writer lock, and what ``--fresh`` may delete.

Rules:

* A folder is a sweep output when it carries the marker file ``.specsweep`` (written
  when a sweep first writes there) or, for folders written before the marker existed,
  a ``state.json`` holding a config fingerprint.
* A sweep writes only into a new folder, an empty one, or a sweep output. A path that
  is a file, a folder holding other files, or a place that cannot be written is
  refused before anything starts.
* ``--fresh`` deletes exactly the artifacts a sweep writes (``ARTIFACTS``), and only
  in a sweep output; anything else in the folder is left alone.
* One sweep at a time per folder: an exclusive ``flock`` on ``.specsweep.lock``,
  held from before Ray starts until the sweep ends. A second sweep is refused with
  one line naming the holder (pid, host, start time). The kernel drops the lock when
  its holder dies, so a killed sweep never leaves the folder locked.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import time
from pathlib import Path

from policies.errors import SpecsweepError

MARKER = ".specsweep"
LOCK = ".specsweep.lock"
ERRORS = "errors.log"
ARTIFACTS = ("log", "answers", "figures", "token_views", "state.json", "summary.csv", "speedup_vs_ar.csv",
             "table2.csv", "actors.json", "traces", "replays", "replay_agreement.csv", "replay_bias.csv",
             "speedup_bias_corrected.csv", "report.md", "report.csv",
             ERRORS, MARKER)


def is_sweep_output(root: Path) -> bool:
    root = Path(root)
    if (root / MARKER).is_file():
        return True
    state = root / "state.json"
    if state.is_file():
        try:
            return "fingerprint" in json.loads(state.read_text())
        except (ValueError, OSError):
            return False
    return False


def _foreign_entries(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name != LOCK)


def check_usable(root: str | Path, fresh: bool = False) -> None:
    """Refuse an output path the sweep must not write to (see the module rules); writes nothing."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise SpecsweepError(f"output {root} is a file, not a folder: set output to a new or existing sweep folder")
    if root.is_dir():
        if not is_sweep_output(root) and _foreign_entries(root):
            what = "clear" if fresh else "write into"
            raise SpecsweepError(f"output folder {root} is not a specsweep output (no {MARKER} marker) and holds "
                                 f"{len(_foreign_entries(root))} other file(s); refusing to {what} it: choose a new "
                                 "or empty folder")
        if not os.access(root, os.W_OK | os.X_OK):
            raise SpecsweepError(f"output folder {root} is not writable by this user: choose another output folder")
        return
    parent = root.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise SpecsweepError(f"output {root}: {parent} is a file, not a folder: choose another output folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecsweepError(f"output {root} cannot be created ({parent} is not writable): choose another output folder")


def clear(root: str | Path) -> list[str]:
    """Delete every artifact a sweep wrote in ``root`` (a sweep output); returns the names deleted."""
    root = Path(root)
    if not root.exists():
        return []
    if not is_sweep_output(root):
        if not _foreign_entries(root):     # new or empty (the lock file aside): nothing to clear
            return []
        raise SpecsweepError(f"output folder {root} is not a specsweep output (no {MARKER} marker); "
                             "refusing to clear it with --fresh")
    gone = []
    for name in ARTIFACTS:
        p = root / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
        else:
            continue
        gone.append(name)
    return gone


def write_marker(root: str | Path, fingerprint: str) -> None:
    (Path(root) / MARKER).write_text(json.dumps({"specsweep": 1, "fingerprint": fingerprint}) + "\n")


class OutputLock:
    """Exclusive lock of one output folder (a context manager); creates the folder if needed.

    If the folder was created here and nothing but the lock file is in it on release,
    the folder is removed again, so a sweep refused after locking leaves nothing behind.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.created = False
        self._fd: int | None = None

    def acquire(self) -> "OutputLock":
        if not self.root.exists():
            self.root.mkdir(parents=True)
            self.created = True
        path = self.root / LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise SpecsweepError(f"output folder {self.root} is in use by another sweep ({holder}); wait for it "
                                 "to finish or use another output folder") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        if self.created and not _foreign_entries(self.root):
            (self.root / LOCK).unlink(missing_ok=True)
            try:
                self.root.rmdir()
            except OSError:
                pass
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        d = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        return f"pid {d['pid']} on {d['host']} since {d['since']}"
    except (ValueError, KeyError, OSError):
        return "holder unknown"
