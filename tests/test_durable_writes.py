"""A result file's bytes are on the disk before its name is (fsync of the twin, rename, fsync of the folder), so a
power cut never leaves an empty or torn task file, answer file or state under its final name."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.store import durable


def _recording(monkeypatch) -> list:
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", str(src), str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(durable.os, "fsync", fsync)
    monkeypatch.setattr(durable.os, "replace", replace)
    return events


def test_a_parquet_file_is_synced_before_its_rename_and_its_folder_after(tmp_path, monkeypatch):
    events = _recording(monkeypatch)
    path = durable.write_parquet(pa.table({"x": [1, 2, 3]}), tmp_path / "task-1.parquet")
    tmp = str(tmp_path / "task-1.tmp")
    assert events == [("fsync", tmp), ("replace", tmp, str(path)), ("fsync", str(tmp_path))]
    assert pq.read_table(path).column("x").to_pylist() == [1, 2, 3] and not (tmp_path / "task-1.tmp").exists()


def test_the_sweep_writers_go_through_the_durable_rename(tmp_path, monkeypatch):
    from jobs.store.answers import write_answers
    from jobs.store.output import write_texts
    from jobs.store.parquet_log import ParquetLog

    events = _recording(monkeypatch)
    log = ParquetLog(str(tmp_path / "out"))
    log.prepare("f" * 16, {"name": "x"})
    write_answers(tmp_path / "out" / "answers" / "a.jsonl", [{"question_id": 1}])
    write_texts({tmp_path / "out" / "report.md": "# report\n"})
    renamed = [e[2] for e in events if e[0] == "replace"]
    assert [os.path.basename(p) for p in renamed] == ["state.json", "a.jsonl", "report.md"], renamed
    for name in renamed:  # each rename is preceded by its twin's fsync and followed by its folder's
        i = events.index(next(e for e in events if e[0] == "replace" and e[2] == name))
        assert events[i - 1] == ("fsync", events[i][1]) and events[i + 1] == ("fsync", os.path.dirname(name))
