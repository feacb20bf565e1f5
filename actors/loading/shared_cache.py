"""Files and folders that several processes may create at once, written once and safely.

The rule (every shared cache entry follows it):
- An entry is complete exactly when its final name exists: it is built under a private temporary
  name beside it (``.NAME.part-PID-RANDOM``) and renamed into place in one step, so no process
  ever sees half an entry under the final name.
- Builders take an exclusive lock first (an OS file lock, released by the kernel when its holder
  dies) and look again once they hold it: the first process builds, the others wait, say so in one
  line on stderr, and then find the entry ready.
- A builder killed halfway leaves only its ``.part-…`` temporary; the next holder of the lock removes
  such leftovers (nobody else can be writing them) and builds again.

Locks live in ``<cache root>/locks/`` so that user folders (an output folder, the folder holding an
MLflow database) gain no lock files.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from filelock import FileLock, Timeout

WAIT_POLL_S = 0.5


def cache_root() -> Path:
    """Folder for specsweep's caches: ``$SPECSWEEP_CACHE``, else ``~/.cache/specsweep``."""
    return Path(os.environ.get("SPECSWEEP_CACHE", Path.home() / ".cache" / "specsweep"))


def lock_path(key: str) -> Path:
    """The lock file for ``key`` (any string; long or odd keys are hashed into a safe file name)."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in key)[:80]
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return cache_root() / "locks" / f"{safe}-{digest}.lock"


@contextmanager
def exclusive(key: str, what: str) -> Iterator[None]:
    """Hold the lock for ``key``; when another process holds it, say once on stderr that we wait for ``what``."""
    path = lock_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"specsweep: waiting for another process to finish writing {what}", file=sys.stderr, flush=True)
        lock.acquire(poll_interval=WAIT_POLL_S)
    try:
        yield
    finally:
        lock.release()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def part_name(final: Path) -> Path:
    """A private temporary name beside ``final`` for this process."""
    return final.with_name(f".{final.name}.part-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def leftovers(final: Path) -> list[Path]:
    """Temporaries of ``final`` that earlier (killed) builders left behind."""
    if not final.parent.is_dir():
        return []
    return sorted(final.parent.glob(f".{final.name}.part-*"))


def build_once(final: Path, build: Callable[[Path], None], what: str,
               ready: Callable[[Path], bool] | None = None) -> Path:
    """Return ``final``, building it first if it is not ``ready`` (default: it exists).

    ``build(tmp)`` writes the entry (a file or a folder) at the path it is given; it is renamed to
    ``final`` only after ``build`` returns. An existing ``final`` that is not ``ready`` (an older,
    incomplete layout) is replaced. Several processes calling this at once build it once.
    """
    final = Path(final)
    ready = ready or (lambda p: p.exists())
    if ready(final):
        return final
    with exclusive(str(final.resolve()), what):
        if ready(final):                       # another process built it while we waited
            return final
        final.parent.mkdir(parents=True, exist_ok=True)
        for old in leftovers(final):           # a killed builder's temporary: nobody else can be writing it
            _remove(old)
        tmp = part_name(final)
        try:
            build(tmp)
            if final.exists() or final.is_symlink():
                _remove(final)
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                _remove(tmp)
    return final
