"""Writes that keep a sweep's results through a crash or a power cut: a file's bytes reach the disk before its final
name does (the temporary twin is flushed and synced, renamed over the path, then the folder's entry is synced), so
after any stop the path holds either the old file or the whole new one, never an empty or torn one."""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq


def sync_file(path: str | Path) -> None:
    """Force ``path``'s bytes to the disk (fsync)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def durable_replace(tmp: str | Path, path: str | Path) -> None:
    """Rename the written ``tmp`` over ``path`` once its bytes are on the disk, then sync the folder's entry."""
    sync_file(tmp)
    os.replace(tmp, path)
    try:
        sync_file(Path(path).parent)
    except OSError:  # a file system that cannot sync a folder (some network mounts): the rename itself stands
        pass


def write_parquet(table, path: Path) -> Path:
    """``table`` written to ``path`` through ``path.tmp`` (:func:`durable_replace`); returns ``path``."""
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp)
    durable_replace(tmp, path)
    return path
