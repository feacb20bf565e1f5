"""A sweep's output folder: its marker, its one-writer lock, and what ``--fresh`` may delete.

Rules:

* A folder is a sweep output when it carries the marker file ``.specsweep`` (written
  when a sweep first writes there) or, for folders written before the marker existed,
  a ``state.json`` holding a config fingerprint.
* A sweep writes only into a new folder, an empty one, or a sweep output. A path that
  is a file, a folder holding other files, or a place that cannot be written is
  refused before anything starts.
* Every file specsweep writes under the folder is noted first in its manifest
  (``.specsweep-manifest.jsonl``, one JSON path per line, appended with ``record_written``
  before the file is written, so a file killed mid-write is noted too). ``--fresh`` deletes
  exactly the manifest's files (and the ``.tmp`` sibling a killed atomic write left, of the files written
  that way: ``TWIN_WRITTEN``), then
  folders left empty, and only in a sweep output; anything else stays. A folder written
  before the manifest existed is cleared by known names and patterns (``KNOWN``) only, and
  the first manifest written into such a folder starts with those files.
* One sweep at a time per folder: an exclusive ``flock`` on ``.specsweep.lock``,
  held from before Ray starts until the sweep ends. A second sweep is refused with
  one line naming the holder (pid, host, start time). The kernel drops the lock when
  its holder dies, so a killed sweep never leaves the folder locked.
"""
from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from cluster.ray_session import SESSION_FILE
from jobs.store.durable import durable_replace
from policies.errors import SpecsweepError

MARKER = ".specsweep"
LOCK = ".specsweep.lock"
MANIFEST = ".specsweep-manifest.jsonl"
ERRORS = "errors.log"
RAY_SESSION = ".ray-session.json"    # the sweep's own Ray cluster while it runs (cluster/ray_session.py; never cleared)
# What a sweep (and ``report``/``replay`` on its folder) writes, by folder: names and patterns. ``--fresh`` on a
# folder without a manifest deletes only files matching these; a folder with one deletes what the manifest names.
KNOWN = {"": ("state.json", "summary.csv", "speedup_vs_ar.csv", "table2.csv", "actors.json", "replay_agreement.csv",
              "replay_bias.csv", "speedup_bias_corrected.csv", "report.md", "report.csv", ERRORS, MARKER, "state.tmp",
              "gamma_table.csv", "gamma_table-roofline-*.csv"),
         "log": ("task-*.parquet", "task-*.tmp"), "answers": ("*.jsonl", "*.tmp"), "token_views": ("*.html",),
         "figures": ("throughput_vs_gamma.png", "mal_vs_gamma.png", "throughput_bars.png", "speedup_by_category.png",
                     "trace_q*.png"),
         "traces": ("*.parquet", "*.tmp", "cost_models.json"), "replays/*": ("rows.parquet", "report.md", "report.csv",
                                                                             "source.json"),
         "tunes/*": ("report.md", "grid.csv", "source.json")}


def is_sweep_output(root: Path) -> bool:
    """Whether ``root`` carries the marker (or, written before the marker existed, a state.json with a fingerprint)."""
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
    """The names in ``root`` other than the files a starting sweep itself writes before its marker: the lock file
    and the record of the Ray cluster it started (``cluster/ray_session.py``)."""
    return sorted(p.name for p in root.iterdir() if p.name not in (LOCK, SESSION_FILE))


def can_create_in(folder: Path) -> bool:
    """Whether this process can create a file in ``folder``: permission bits first, then a hidden file created and
    removed at once (root passes every permission check, yet cannot create files in /proc or on a read-only mount)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".specsweep-probe-")
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def check_writable(path: str | Path, name: str, *, folder: bool = True, what: str = "folder",
                   beside: tuple = ()) -> Path:
    """``path`` as a Path when specsweep can write there, else one line naming ``name`` (the flag or setting), the
    path, what is wrong and what to give instead; nothing is created. The one rule for every place a command writes:

    * a **folder** (``folder=True``; ``what`` names it, e.g. "output folder"): an existing folder this user can
      write into, or one that can be created — not a symlink to nothing, not a symlink loop, not a file, no file on
      the way (``afile/sub``), and the nearest existing folder above it writable;
    * a **file** (``folder=False``; ``what`` names it, e.g. "JSON file path"): not a folder, in an existing folder,
      and writable — the file itself when it exists, its folder when not; the same for each path in ``beside``
      (files written next to it).

    A folder counts as writable when :func:`can_create_in` it (a hidden probe file, removed at once).
    """
    path = Path(path)
    if not folder:
        parent = path.parent
        if path.is_dir():
            raise SpecsweepError(f"{name} {path} is a folder: give a {what}")
        if parent.exists() and not parent.is_dir():
            raise SpecsweepError(f"{name} {path}: {parent} is not an existing folder: give a {what} in an existing "
                                 "folder")
        if not parent.is_dir():
            raise SpecsweepError(f"{name} {path}: folder {parent} does not exist: give a {what} in an existing folder")
        for p in (path, *map(Path, beside)):
            if p.is_dir():
                raise SpecsweepError(f"{name} {path}: {p} is a folder: give a {what} whose {p.name} is free or a file")
            if p.exists() and not p.is_file():
                raise SpecsweepError(f"{name} {path}: {p} is not a regular file: give a {what}")
            if (p.exists() and not os.access(p, os.W_OK)) or (not p.exists() and not can_create_in(parent)):
                raise SpecsweepError(f"{name} {path}: {p} is not writable: give a {what} this user can write")
        return path
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        if path.is_symlink():
            raise SpecsweepError(f"{name} {path} is a symlink to nothing: point it at a folder or remove it") from None
    except OSError as e:          # a symlink loop (ELOOP) and its like: the first write would fail
        raise SpecsweepError(f"{name} {path} cannot be used ({e.strerror or type(e).__name__}): choose another "
                             f"{what}") from None
    if path.exists() and not path.is_dir():
        raise SpecsweepError(f"{name} {path} is a file, not a folder: choose a new or existing {what}")
    if path.is_dir():
        if not can_create_in(path):
            raise SpecsweepError(f"{name} {path} is not writable by this user: choose another {what}")
        return path
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise SpecsweepError(f"{name} {path}: {parent} is a file, not a folder: choose another {what}")
    if not can_create_in(parent):
        raise SpecsweepError(f"{name} {path} cannot be created ({parent} is not writable): choose another {what}")
    return path


def write_texts(files: dict) -> None:
    """Write each ``{path: text}`` whole or not at all: every text goes to a hidden temporary file beside its path
    first, and only when all are written do they replace their paths; on an error the temporary files are removed and
    the paths keep what they held (a file the command did not write is never deleted)."""
    temps = {}
    try:
        for path, text in files.items():
            path = Path(path)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps[path] = Path(tmp)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, path.stat().st_mode & 0o777 if path.is_file() else 0o666 & ~_umask())
        for path, tmp in temps.items():
            durable_replace(tmp, path)
    finally:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)


def _umask() -> int:
    """The process's file mode creation mask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_usable(root: str | Path, fresh: bool = False) -> None:
    """Refuse an output path the sweep must not write to (see the module rules; the path itself by
    :func:`check_writable`, then a folder that is not a sweep output and holds other files); writes nothing."""
    root = Path(root)
    if root.is_dir() and not is_sweep_output(root) and _foreign_entries(root):
        what = "clear" if fresh else "write into"
        raise SpecsweepError(f"output folder {root} is not a specsweep output (no {MARKER} marker) and holds "
                             f"{len(_foreign_entries(root))} other file(s); refusing to {what} it: choose a new "
                             "or empty folder")
    check_writable(root, "output", what="output folder")


@dataclass
class Cleared:
    """What ``clear`` did: the files it deleted and the other files it left (paths relative to the folder)."""

    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for the console, e.g. ``--fresh removed 37 files specsweep wrote (log/, figures/, …); kept 2
        other files``."""
        tops = list(dict.fromkeys(r.split("/")[0] + ("/" if "/" in r else "") for r in self.removed))
        tops.sort(key=lambda t: (not t.endswith("/"), t.startswith("."), t))      # folders, files, dotfiles
        shown = ", ".join(tops[:6]) + (", …" if len(tops) > 6 else "")
        n, k = len(self.removed), len(self.kept)
        return (f"--fresh removed {n} file{'s' * (n != 1)} specsweep wrote ({shown}); kept {k} other "
                f"file{'s' * (k != 1)}" + (f" ({', '.join(self.kept[:3])}{', …' if k > 3 else ''})" if k else ""))


def record_written(path: str | Path, root: str | Path | None = None) -> None:
    """Note in the output folder's manifest that specsweep writes ``path``; call it before writing the file.

    ``root``: the output folder; None finds it as the nearest folder above ``path`` (three levels at most) that
    carries the marker, and does nothing when there is none (a file written outside any sweep output).
    """
    path = Path(path)
    if root is None:
        root = next((d for d in list(path.parents)[:3] if (d / MARKER).is_file()), None)
        if root is None:
            return
    root = Path(root)
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return                                       # not under the folder: nothing of the folder's to note
    manifest = root / MANIFEST
    if not manifest.exists():                        # a folder written before manifests: it starts with those files
        _append(manifest, _known_files(root) if is_sweep_output(root) else [])
    _append(manifest, [rel])


def _append(manifest: Path, rels: list[str]) -> None:
    """Append ``rels`` to the manifest, one JSON string per line (O_APPEND: writers never interleave a line)."""
    fd = os.open(manifest, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, "".join(json.dumps(r) + "\n" for r in rels).encode())
    finally:
        os.close(fd)


def _manifest_files(root: Path) -> list[str] | None:
    """The manifest's paths (relative, inside the folder, no duplicates); None when the folder has no manifest."""
    try:
        text = (root / MANIFEST).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    out = []
    for line in text.splitlines():
        try:
            rel = json.loads(line)
        except ValueError:                           # a line cut short by a crash
            continue
        if isinstance(rel, str) and rel and not rel.startswith("/") and ".." not in rel.split("/"):
            out.append(rel)
    return list(dict.fromkeys(out))


def _known_files(root: Path) -> list[str]:
    """Files under ``root`` that match ``KNOWN`` (what an older specsweep wrote there)."""
    out = []
    for folder, patterns in KNOWN.items():
        for d in (root.glob(folder) if folder else [root]):
            if d.is_dir() and not d.is_symlink():
                out += [(p.relative_to(root)).as_posix() for p in sorted(d.iterdir())
                        if (p.is_file() or p.is_symlink()) and any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns)]
    return out


def _all_files(root: Path) -> list[str]:
    """Every file under ``root`` but the lock, the manifest and the running sweep's Ray record, relative, sorted."""
    ours = (LOCK, MANIFEST, RAY_SESSION)
    return sorted(rel for p in root.rglob("*") if (p.is_file() or p.is_symlink())
                  and (rel := p.relative_to(root).as_posix()) not in ours)


def clear(root: str | Path) -> Cleared:
    """Delete what specsweep wrote in ``root`` (a sweep output; see the module rules); returns what it did."""
    root = Path(root)
    if not root.exists():
        return Cleared()
    if not is_sweep_output(root):
        if not _foreign_entries(root):     # new or empty (the lock file aside): nothing to clear
            return Cleared()
        raise SpecsweepError(f"output folder {root} is not a specsweep output (no {MARKER} marker); "
                             "refusing to clear it with --fresh")
    listed = _manifest_files(root)
    rels = _known_files(root) if listed is None else listed
    real = root.resolve()
    done, folders = [], set()
    for rel in rels:
        p = root / rel
        twin = [p.with_suffix(".tmp")] if p.suffix != ".tmp" and _writes_a_twin(rel) else []
        for q in [p] + twin:                                  # and what a killed atomic write left
            inside = q.parent.resolve() == real or real in q.parent.resolve().parents   # never through a link out
            if inside and (q.is_symlink() or q.is_file()):
                q.unlink()
                done.append(q.relative_to(root).as_posix())
        folders |= {d for d in p.parents if d != root and root in d.parents}
    for d in sorted(folders, key=lambda d: -len(d.parts)):      # folders left empty, deepest first
        if d.is_dir() and not d.is_symlink() and not any(d.iterdir()):
            d.rmdir()
    (root / MANIFEST).unlink(missing_ok=True)
    return Cleared(done, _all_files(root))


# files specsweep writes as NAME.tmp then renames (a killed write leaves the twin): the Parquet log and its state,
# the traces, the answers; anything else's .tmp sibling is the user's and stays
TWIN_WRITTEN = ("state.json", "log/task-*.parquet", "traces/*.parquet", "answers/*.jsonl")


def _writes_a_twin(rel: str) -> bool:
    return any(fnmatch.fnmatch(Path(rel).as_posix(), pattern) for pattern in TWIN_WRITTEN)


def write_marker(root: str | Path, fingerprint: str) -> None:
    """Mark ``root`` as a sweep output (the marker names the config's fingerprint)."""
    record_written(Path(root) / MARKER, root)
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
        """Take the lock (creating the folder if needed) or refuse in one line naming its holder."""
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
        """Drop the lock; a folder created for it and still empty is removed again."""
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
        """Acquire (see :meth:`acquire`)."""
        return self.acquire()

    def __exit__(self, *exc) -> None:
        """Release (see :meth:`release`)."""
        self.release()


def _read_holder(fd: int) -> str:
    """The lock holder as written by :meth:`OutputLock.acquire`: pid, host and start time."""
    try:
        d = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        return f"pid {d['pid']} on {d['host']} since {d['since']}"
    except (ValueError, KeyError, OSError):
        return "holder unknown"
