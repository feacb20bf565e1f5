"""``--fresh`` deletes only what specsweep wrote (issue 30): every file a sweep writes into its output folder is
noted first in the folder's manifest; ``--fresh`` deletes exactly those files (and folders left empty), keeps the
user's own files, and says in one line what it removed and kept. A folder written before the manifest existed is
cleared by specsweep's own names and patterns only; nothing outside the folder is ever touched."""
from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

from actors.loading.tiny_pair import save_tiny_pair
from jobs.config import parse_config
from jobs.store.output import LOCK, MANIFEST, MARKER, clear, record_written
from tests.sweep_process import tiny_config


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny target/draft pair (``actors.loading.tiny_pair``), saved once for the module."""
    return save_tiny_pair(tmp_path_factory.mktemp("pair"))


def manifest(root) -> set[str]:
    """The paths the folder's manifest names."""
    return {json.loads(line) for line in (root / MANIFEST).read_text().splitlines()}


def files(root) -> set[str]:
    """Every file under ``root``, relative."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_fresh_removes_what_the_sweep_wrote_and_keeps_the_users_files(tiny, tmp_path, capsys):
    import yaml

    from jobs.cli import main as cli_main
    from jobs.sweep.driver import run_sweep

    raw = yaml.safe_load(tiny_config(tmp_path, *tiny).read_text())
    out = tmp_path / "out"
    run_sweep(parse_config(raw), backend="inprocess", log_mlflow=False)
    assert cli_main(["report", "--parquet", str(out), "--format", "csv"]) == 0
    wrote = files(out) - {LOCK, MANIFEST}
    assert {"log", "answers", "figures", "token_views"} <= {w.split("/")[0] for w in wrote}
    assert {"report.md", "report.csv", "summary.csv", "actors.json", "state.json", MARKER} <= wrote
    assert manifest(out) == wrote                         # every writer noted its file, and nothing else is noted
    assert "answers/tiny__fixed__g2__r0.jsonl" in wrote

    (out / "notes.txt").write_text("my notes")
    (out / "figures" / "my_plot.png").write_bytes(b"my plot")
    (out / "log" / "README").write_text("what these runs were")
    (out / "summary.tmp").write_text("my draft")          # a .tmp beside a file specsweep writes whole: the user's
    task = sorted((out / "log").glob("task-*.parquet"))[0]
    task.with_suffix(".tmp").write_bytes(b"a killed write")  # what a killed atomic write of the log leaves
    capsys.readouterr()
    run_sweep(parse_config({**raw, "gammas": [3]}), backend="inprocess", log_mlflow=False, fresh=True)
    said = [ln for ln in capsys.readouterr().err.splitlines() if "--fresh" in ln]

    assert (out / "notes.txt").read_text() == "my notes" and (out / "figures" / "my_plot.png").read_bytes() == b"my plot"
    assert (out / "log" / "README").read_text() == "what these runs were"
    assert (out / "summary.tmp").read_text() == "my draft" and not task.with_suffix(".tmp").exists()
    n = len(wrote) + 1                                    # the killed write's twin
    assert said == [f"specsweep: --fresh removed {n} files specsweep wrote (answers/, figures/, log/, token_views/, "
                    "acceptance_by_position.parquet, accepted_length_histogram.parquet, …); kept 4 other files "
                    "(figures/my_plot.png, log/README, notes.txt, …)"]
    assert not (out / "answers" / "tiny__fixed__g2__r0.jsonl").exists() and not (out / "report.csv").exists()
    gammas = {g for f in (out / "log").glob("task-*.parquet") for g in pq.read_table(f).column("gamma").to_pylist()}
    assert gammas == {0, 3}                               # the log holds the new config's rows only (ar is γ 0)
    assert manifest(out) == files(out) - {LOCK, MANIFEST, "notes.txt", "figures/my_plot.png", "log/README",
                                          "summary.tmp"}


def test_a_folder_from_before_the_manifest_is_cleared_by_specsweeps_names_only(tmp_path):
    out = tmp_path / "out"
    ours = ["state.json", MARKER, "summary.csv", "report.md", "errors.log", "log/task-ab.parquet", "log/task-cd.tmp",
            "answers/p__fixed__g2__r0.jsonl", "figures/throughput_vs_gamma.png", "figures/trace_q9021.png",
            "token_views/p_fixed_g2_q1_t0.html", "traces/cost_models.json", "replays/new/rows.parquet",
            "replays/new/report.md"]
    mine = ["notes.txt", "figures/my_plot.png", "answers/README.md", "replays/new/notes.txt", "draft.csv"]
    for rel in ours + mine:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text("x")
    (out / "token_views" / "sub").mkdir()                 # an empty folder of the user's
    done = clear(out)
    assert sorted(done.removed) == sorted(ours) and done.kept == sorted(mine)
    assert files(out) == set(mine) and not (out / "log").exists() and (out / "token_views" / "sub").is_dir()


def test_the_first_manifest_in_an_older_folder_starts_with_what_specsweep_wrote_there(tmp_path):
    out = tmp_path / "out"
    (out / "log").mkdir(parents=True)
    (out / MARKER).write_text("{}")
    (out / "log" / "task-old.parquet").write_text("x")     # a task an older specsweep logged
    (out / "notes.txt").write_text("mine")
    record_written(out / "log" / "task-new.parquet")       # the first write of this specsweep there
    assert manifest(out) == {MARKER, "log/task-old.parquet", "log/task-new.parquet"}
    (out / "log" / "task-new.parquet").write_text("x")
    assert clear(out).kept == ["notes.txt"] and files(out) == {"notes.txt"}


def test_the_manifest_never_reaches_outside_the_folder(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / MARKER).write_text("{}")
    for name in ("victim.txt", "linked.png"):
        (elsewhere / name).write_text("not specsweep's")
    (out / "figures").symlink_to(elsewhere, target_is_directory=True)   # a folder that links out
    (out / "notes.txt").write_text("mine")
    lines = ["../elsewhere/victim.txt", str(elsewhere / "victim.txt"), "figures/linked.png", "notes.txt\\n",
             "figures/../../elsewhere/victim.txt"]
    (out / MANIFEST).write_text("".join(json.dumps(x) + "\n" for x in lines) + '"cut short')
    clear(out)
    assert sorted(os.listdir(elsewhere)) == ["linked.png", "victim.txt"]
    assert (out / "notes.txt").exists() and (out / "figures").is_symlink()
