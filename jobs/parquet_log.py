"""The durable result log: one Parquet file per finished task under ``OUTPUT/log/``.

A task's file is named by the hash of its task key and written atomically
(temporary file + rename), so a crash never leaves a partial file and a re-run of
the same task replaces its file: every row exists exactly once. ``state.json``
holds the sweep's config fingerprint; a folder holding another config's log is
refused unless the caller asks to start fresh.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from jobs.schema import SCHEMA
from policies.errors import SpecsweepError


class ParquetLog:
    def __init__(self, folder: str | Path):
        self.root = Path(folder)
        self.dir = self.root / "log"

    def check(self, fingerprint: str, fresh: bool = False) -> None:
        """Refuse a folder holding another config's log (unless starting fresh); writes nothing."""
        state = self.root / "state.json"
        if not fresh and state.exists():
            old = json.loads(state.read_text()).get("fingerprint")
            if old != fingerprint:
                raise SpecsweepError(f"output folder {self.root} holds the log of a different config ({old}); "
                                     "use another output folder or pass --fresh to start over")

    def prepare(self, fingerprint: str, config: dict, fresh: bool = False) -> None:
        self.check(fingerprint, fresh)
        state = self.root / "state.json"
        if fresh and self.root.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
            state.unlink(missing_ok=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"fingerprint": fingerprint, "config": config}, indent=1, default=str))

    @staticmethod
    def file_name(task_key: str) -> str:
        return "task-" + hashlib.sha256(task_key.encode()).hexdigest()[:24] + ".parquet"

    def write(self, table: pa.Table) -> Path:
        keys = set(table.column("task_key").to_pylist())
        if len(keys) != 1:
            raise ValueError(f"a task table must hold exactly one task_key, got {len(keys)}")
        path = self.dir / self.file_name(keys.pop())
        tmp = path.with_suffix(".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, path)
        return path

    def done_keys(self) -> set[str]:
        """Task keys whose file holds only successful rows (failed tasks are retried on resume)."""
        done = set()
        for f in self.dir.glob("task-*.parquet"):
            t = pq.read_table(f, columns=["task_key", "status"])
            if all(s == "ok" for s in t.column("status").to_pylist()):
                done.add(t.column("task_key")[0].as_py())
        return done

    def read(self) -> pd.DataFrame:
        files = sorted(self.dir.glob("task-*.parquet"))
        if not files:
            return SCHEMA.empty_table().to_pandas()
        return pa.concat_tables([pq.read_table(f) for f in files]).to_pandas()
