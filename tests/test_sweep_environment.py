"""The machine, not the config, stops a sweep: a full disk or a read-only folder mid-sweep is one line (exit 2,
finished tasks kept) even when the error log cannot be written either; a prompt longer than the target's positions
fails its task with the reason (exit 3) instead of being recorded as ok."""
from __future__ import annotations

import errno
import json
import shutil

from actors.loading.tiny_pair import save_tiny_pair
from tests.sweep_process import tiny_raw


def test_a_full_disk_is_one_line_and_exit_2_and_the_error_log_never_raises(tmp_path, capsys, monkeypatch):
    from jobs.store import failures
    from jobs.sweep import command

    def full():
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out" / "log" / "task-1.tmp"))

    assert command._guarded(full)[0] == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write" in err[0] and "task-1.tmp: No space left on device" in err[0], err
    assert "run the same command again to resume" in err[0]

    def unwritable(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(failures, "record_error", unwritable)
    monkeypatch.setattr(failures.tempfile, "mkstemp", unwritable)
    assert failures.internal_error_log(None, RuntimeError("x")) is None

    def no_ray():
        raise ModuleNotFoundError("No module named 'ray'", name="ray")

    assert command._guarded(no_ray)[0] == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the package 'ray' is not installed" in err[0], err

    def bug():
        raise RuntimeError("a bug")

    assert command._guarded(bug)[0] == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["specsweep: internal error: RuntimeError: a bug (its traceback could not be written either)"]


def test_a_prompt_past_the_targets_positions_fails_its_task_with_the_reason(tmp_path, capsys):
    from jobs.store.parquet_log import ParquetLog
    from jobs.sweep.command import main

    target, draft = save_tiny_pair(tmp_path / "pair")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question_id": 1, "category": "qa", "turns": ["Why is the sky blue?"]}) + "\n"
                         + json.dumps({"question_id": 2, "category": "qa", "turns": ["why " * 300]}) + "\n")
    raw = tiny_raw(tmp_path, target, draft, dataset={"source": str(questions)}, block_size=1)
    (tmp_path / "sweep.yaml").write_text(json.dumps(raw))
    assert main([str(tmp_path / "sweep.yaml"), "--backend", "inprocess"]) == 3
    df = ParquetLog(str(tmp_path / "out")).read()
    long, short = df[df["question_id"] == 2], df[df["question_id"] == 1]
    assert (long["status"] != "ok").all() and (short["status"] == "ok").all() and len(short)
    assert long["error"].str.contains("exceed the 1024 positions").all(), long["error"].tolist()
    assert "exceed the 1024 positions" in capsys.readouterr().err


def test_a_file_where_the_log_folder_goes_is_one_line_naming_it(tmp_path, capsys):
    from jobs.sweep.command import main

    target, draft = save_tiny_pair(tmp_path / "pair")
    raw = tiny_raw(tmp_path, target, draft)
    (tmp_path / "sweep.yaml").write_text(json.dumps(raw))
    assert main([str(tmp_path / "sweep.yaml"), "--backend", "inprocess"]) == 0
    shutil.rmtree(tmp_path / "out" / "log")                 # the user moved the log away and left a note there
    (tmp_path / "out" / "log").write_text("the user's notes\n")
    capsys.readouterr()
    assert main([str(tmp_path / "sweep.yaml"), "--backend", "inprocess"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("specsweep: ")]
    assert len(err) == 1 and "cannot write" in err[0] and "log" in err[0], err
    assert "move the file away or choose another output folder" in err[0], err
    assert (tmp_path / "out" / "log").read_text() == "the user's notes\n"
