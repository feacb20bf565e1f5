"""The durable result log: one Parquet file per finished task under ``OUTPUT/log/``.

A task's file is named by the hash of its task key and written atomically
(temporary file + rename), so a crash never leaves a partial file and a re-run of
the same task replaces its file: every row exists exactly once. ``state.json``
holds the sweep's config fingerprint; a folder holding another config's results
is refused unless the caller asks to start fresh. A folder whose log holds no task
file yet (a sweep that failed before finishing any task) belongs to no config: the
next sweep, corrected or not, may take it over.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from actors.loading.schema import SCHEMA, upgrade
from jobs.store.durable import durable_replace, write_parquet
from jobs.store.output import Cleared, clear, record_written, write_marker
from policies.errors import SpecsweepError


class ParquetLog:
    """The task files of one output folder (``OUTPUT/log/task-*.parquet``) and its ``state.json``."""

    def __init__(self, folder: str | Path):
        """The log of output folder ``folder`` (nothing is read or written yet)."""
        self.root = Path(folder)
        self.dir = self.root / "log"

    def check(self, fingerprint: str, fresh: bool = False) -> None:
        """Refuse a folder holding another config's log (unless starting fresh); writes nothing."""
        state = self.root / "state.json"
        if fresh or not state.exists() or not self.has_results():
            return
        try:
            old = json.loads(state.read_text()).get("fingerprint")
        except (ValueError, OSError, AttributeError):
            raise SpecsweepError(f"{state} is unreadable or not a specsweep state file; pass --fresh to start over "
                                 "in this folder or use another output folder") from None
        if old != fingerprint:
            raise SpecsweepError(f"output folder {self.root} holds the log of a different config ({old}); "
                                 "use another output folder or pass --fresh to start over")

    def has_results(self) -> bool:
        """Whether the log holds any task file."""
        return self.dir.is_dir() and any(self.dir.glob("task-*.parquet"))

    def prepare(self, fingerprint: str, config: dict, fresh: bool = False) -> Cleared | None:
        """Check, clear on ``fresh`` (only what specsweep wrote), mark the folder and record the config; returns
        what ``--fresh`` deleted and kept (None without ``fresh``)."""

        self.check(fingerprint, fresh)
        cleared = clear(self.root) if fresh else None
        self.dir.mkdir(parents=True, exist_ok=True)
        write_marker(self.root, fingerprint)
        state = self.root / "state.json"
        record_written(state, self.root)
        tmp = state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"fingerprint": fingerprint, "config": config}, indent=1, default=str))
        durable_replace(tmp, state)
        return cleared

    @staticmethod
    def file_name(task_key: str) -> str:
        """The file name of a task's rows: ``task-`` and a hash of its key."""
        return "task-" + hashlib.sha256(task_key.encode()).hexdigest()[:24] + ".parquet"

    def write(self, table: pa.Table) -> Path:
        """Write one task's rows atomically (noted in the folder's manifest first); returns the file."""
        keys = set(table.column("task_key").to_pylist())
        if len(keys) != 1:
            raise ValueError(f"a task table must hold exactly one task_key, got {len(keys)}")
        path = self.dir / self.file_name(keys.pop())
        record_written(path, self.root)
        return write_parquet(table, path)

    def done_keys(self) -> set[str]:
        """Task keys whose file holds only successful rows (failed tasks are retried on resume)."""
        done = set()
        for f in self.dir.glob("task-*.parquet"):
            try:
                t = pq.read_table(f, columns=["task_key", "status"])
            except (OSError, pa.ArrowException):   # unreadable file: its task runs again and replaces it
                continue
            if all(s == "ok" for s in t.column("status").to_pylist()):
                done.add(t.column("task_key")[0].as_py())
        return done

    def read(self) -> pd.DataFrame:
        """Every logged row (older files upgraded to the current schema); one line naming unreadable files."""
        files = sorted(self.dir.glob("task-*.parquet"))
        if not files:
            return SCHEMA.empty_table().to_pandas()
        tables, bad = [], []
        for f in files:
            try:
                tables.append(upgrade(pq.read_table(f)))
            except (OSError, pa.ArrowException):
                bad.append(f.name)
        if bad:
            raise SpecsweepError(f"{len(bad)} unreadable task file(s) in {self.dir} ({', '.join(bad[:3])}"
                                 f"{', ...' if len(bad) > 3 else ''}): delete them; running the sweep again re-runs "
                                 "their tasks")
        return pa.concat_tables(tables, promote_options="default").to_pandas()


def existing_log(folder: str | Path) -> ParquetLog:
    """The log of the sweep whose output folder is ``folder``; one line when ``folder`` is a file, missing, or holds
    no sweep log."""
    path = Path(folder)
    if path.is_file():
        raise SpecsweepError(f"{folder} is a file, not a sweep's output folder: give the folder a sweep wrote "
                             "(its config's `output:`)")
    if not path.is_dir():
        raise SpecsweepError(f"{folder} does not exist: give a sweep's output folder (its config's `output:`)")
    log = ParquetLog(path)
    if not log.dir.exists():
        raise SpecsweepError(f"{folder} holds no sweep log (expected {log.dir})")
    return log
