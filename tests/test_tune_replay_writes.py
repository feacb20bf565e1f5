"""``specsweep tune`` / ``replay`` (jobs/tune/cli.py, jobs/replay_cli.py): a grid is checked value by value and
combination by combination (an invalid combination is skipped, never the whole grid), a range is bounded before it is
made, the result folder is checked writable before anything is replayed and written whole or not at all (one line,
exit 2, no partial result), and ``tune --policy fixed`` chooses among the grid's γ values only."""
import errno
import json
import time
from pathlib import Path

import pandas as pd
import pytest

from actors.rollouts import Rollout, Trace, write_traces
from jobs.tune.cli import parse_grid
from policies.costs import CostModel
from tests.replay_folders import COUNTS, CONFIG, REFERENCE, cli, one_line, policies_file, scripted_sweep


# ---------------------------------------------------------------- the grid: each value alone, each combination together
def test_each_value_is_checked_alone_and_each_combination_together(capsys):
    sets, gammas = parse_grid("gammatune", "gamma_min=12,gamma_max=16")           # 12 > the default 10: still valid
    assert [(s["gamma_min"], s["gamma_max"]) for s in sets] == [(12, 16)] and gammas == [1, 2, 3, 4, 6, 8]
    assert capsys.readouterr().err == ""
    sets, _ = parse_grid("gammatune", "gamma_min=1/4,gamma_max=3/8,gamma=2")
    assert [(s["gamma_min"], s["gamma_max"]) for s in sets] == [(1, 3), (1, 8), (4, 8)]     # (4, 3) skipped
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "skips 1 of 4" in err[0] and "gamma_min=4, gamma_max=3" in err[0], err
    assert "exceeds" in err[0] and "3 remain" in err[0]


def test_a_grid_without_a_valid_combination_is_refused_in_one_line(tmp_path, capsys):
    assert cli("tune", tmp_path, "--policy", "gammatune", "--params", "gamma_min=12/14,gamma_max=4/6") == 2
    line = one_line(capsys)
    assert "no combination is valid" in line and "gamma_min=12, gamma_max=4" in line and "valid together" in line
    assert list(tmp_path.iterdir()) == []
    assert cli("tune", tmp_path, "--policy", "gammatune", "--params", "gamma_min=0/2") == 2   # a value's own bound
    assert "gamma_min='0' is out of range" in one_line(capsys)


def test_a_range_beyond_the_cap_is_refused_before_it_is_made(tmp_path, capsys):
    t0 = time.perf_counter()
    assert cli("tune", tmp_path, "--policy", "threshold", "--params", "tau=0:1:1000000000000") == 2
    line = one_line(capsys)
    assert "n=1000000000000" in line and "at most 4096" in line and "give n <= 4096" in line
    assert time.perf_counter() - t0 < 10 and list(tmp_path.iterdir()) == []
    assert [s["interval"] for s in parse_grid("ema-steps", "interval=3:1:4096,gamma=1")[0]] == [3, 2, 1]  # in order


# ---------------------------------------------------------------- the result folder: checked first, written whole
def _report_and_rows(out: Path, folder: str) -> dict:
    d = out / "replays" / folder
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())} if d.is_dir() else {}


@pytest.mark.parametrize("command", ["replay", "tune"])
@pytest.mark.parametrize("blocked", ["root", "folder", "file"])
def test_something_in_the_way_of_the_results_is_one_line_before_any_replay(tmp_path, capsys, command, blocked):
    """OUTPUT/replays (tunes) a file, the result folder a file, or a result file a folder: refused before replaying."""
    out = scripted_sweep(tmp_path, pairs=("a",), max_draft=8)
    root = out / ("replays" if command == "replay" else "tunes")
    folder = root / ("f" if command == "replay" else "fixed")
    if blocked == "root":
        root.write_text("in the way\n")
    elif blocked == "folder":
        root.mkdir()
        folder.write_text("in the way\n")
    else:
        (folder / "report.md").mkdir(parents=True)
    args = ["--policies", policies_file(tmp_path)] if command == "replay" else ["--policy", "fixed"]
    assert cli(command, out, *args) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specsweep: error: "), err
    assert ("report.md is a folder" if blocked == "file" else "is a file, not a folder") in err[0], err
    assert f"`specsweep {command}` writes its results there; move what is in the way" in err[0]
    assert captured.out == ""                            # refused before the replay: no report printed
    in_the_way = {"root": [root], "folder": [root, folder], "file": [root, folder, folder / "report.md"]}[blocked]
    left = {p for p in out.rglob("*") if p.parent != out / "traces"}
    assert left == {out / "traces", out / "actors.json", *in_the_way}           # nothing made, nothing moved


def _no_space(*_a, **_k):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_replay_that_cannot_write_its_rows_leaves_nothing_and_says_so(tmp_path, capsys, monkeypatch):
    out = scripted_sweep(tmp_path, pairs=("a",))
    monkeypatch.setattr(pd.DataFrame, "to_parquet", _no_space)
    assert cli("replay", out, "--policies", policies_file(tmp_path)) == 2
    line = one_line(capsys)
    assert "could not write its results" in line and "No space left on device" in line
    assert not (out / "replays").exists()                # no source.json or report without rows, no empty folder


def test_a_failed_rewrite_keeps_the_previous_result_whole(tmp_path, capsys, monkeypatch):
    out = scripted_sweep(tmp_path, pairs=("a",))
    assert cli("replay", out, "--policies", policies_file(tmp_path)) == 0
    before = _report_and_rows(out, "f")
    assert sorted(before) == ["report.md", "rows.parquet", "source.json"]          # no twin left behind
    monkeypatch.setattr(pd.DataFrame, "to_parquet", _no_space)
    capsys.readouterr()
    assert cli("replay", out, "--policies", policies_file(tmp_path)) == 2
    assert "No space left on device" in one_line(capsys)
    assert _report_and_rows(out, "f") == before


def test_a_rename_that_fails_removes_what_the_call_created(tmp_path, capsys, monkeypatch):
    out = scripted_sweep(tmp_path, pairs=("a",))
    monkeypatch.setattr("jobs.replay_cli.durable_replace", _no_space, raising=False)
    assert cli("replay", out, "--policies", policies_file(tmp_path)) == 2
    assert "could not write its results" in one_line(capsys)
    assert not (out / "replays").exists()


def test_a_twin_a_killed_replay_left_is_cleared_by_fresh(tmp_path, monkeypatch):
    from jobs.store.output import clear, write_marker

    class Killed(BaseException):
        """SIGKILL's stand-in between the twin's write and its rename: nothing on the way cleans up."""

    def killed(*args):
        raise Killed

    out = scripted_sweep(tmp_path, pairs=("a",))
    write_marker(out, "f" * 16)                             # a sweep output: its writes are noted in the manifest
    monkeypatch.setattr("jobs.replay_cli.durable_replace", killed)
    with pytest.raises(Killed):
        cli("replay", out, "--policies", policies_file(tmp_path))
    (twin,) = (out / "replays").rglob(".rows.parquet.tmp")
    clear(out)
    assert not twin.exists()


def test_tune_writes_its_report_grid_and_source_together_or_not_at_all(tmp_path, capsys, monkeypatch):
    import tempfile

    out = scripted_sweep(tmp_path, pairs=("a",), max_draft=8)
    real = tempfile.mkstemp

    def mkstemp(*a, prefix="", **k):                   # the second text (grid.csv) cannot be written
        if prefix.startswith(".grid.csv"):
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*a, prefix=prefix, **k)

    monkeypatch.setattr("jobs.store.output.tempfile.mkstemp", mkstemp)
    assert cli("tune", out, "--policy", "fixed") == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specsweep: error: `specsweep tune` could not write its results"), err
    assert "Read-only file system" in err[0] and captured.out == ""        # no report for a result not written
    assert not (out / "tunes").exists()


# ---------------------------------------------------------------- tune --policy fixed: the grid's γ only
def _perfect_sweep(root: Path) -> Path:
    """Two questions whose draft always proposes the reference, at a flat step cost: the longest K is the fastest."""
    out = root / "out"
    for name in ("target", "draft-a"):
        (root / "models" / name).mkdir(parents=True, exist_ok=True)
        (root / "models" / name / "config.json").write_text(json.dumps(CONFIG))
    traces = []
    for qid in (1, 2):
        rollouts = [Rollout([REFERENCE[min(j + i, 7)] for i in range(8)], [0.6] * 8, [0.7] * 8, [1.0] * 8)
                    for j in range(8)]
        traces.append(Trace(prompt_ids=[1, 2, 3], reference=list(REFERENCE), finished_by_eos=False, max_new_tokens=8,
                            max_draft=8, eos_ids=[9], rollouts=rollouts, pair="a", target=str(root / "models/target"),
                            draft=str(root / "models/draft-a"), prefill_time=0.02, ar_step_times=[0.05] * 8,
                            ar_wall_time=0.42, key=f"a|q{qid}|t0", meta={"question_id": qid, "turn": 0,
                                                                            "category": "qa"}))
    write_traces(out / "traces" / "a.parquet", traces)
    model = CostModel.measured(1e-4, {m: 0.05 for m in (1, 2, 4, 8, 16)})     # a step costs the same at any K
    model.trust, model.params = {"reliable": True, "reasons": []}, dict(COUNTS["a"])
    (out / "actors.json").write_text(json.dumps({"a": [{"costs": model.to_dict(), "cost_model": model.to_dict()}]}))
    return out


def test_tuning_fixed_chooses_among_the_grid_gammas_only(tmp_path, capsys):
    out = _perfect_sweep(tmp_path)
    assert cli("tune", out, "--policy", "fixed", "--params", "gamma=2/3") == 0
    grid = pd.read_csv(out / "tunes" / "fixed" / "grid.csv")
    assert set(grid["gamma"]) == {1, 2, 3, 4, 5, 6, 8}                      # every K replayed and listed
    chosen = grid[grid["chosen"]]
    assert len(chosen) == 1 and chosen["gamma"].iloc[0] in (2, 3), chosen
    assert "(K = 8)" in capsys.readouterr().out                             # the reference line still uses every K


def test_the_fixed_candidates_are_the_grid_gammas_the_reference_every_k():
    from jobs.tune.cli import tune
    from tests.replay_folders import tune_rows

    res, grid = tune(tune_rows(), "fixed", "fixed", 0, gammas=[1])         # γ 4 (5 s) beats γ 1 (9 s)
    assert res["gamma"].iloc[0] == 1 and res["best_fixed_gamma"].iloc[0] == 4
    assert sorted(zip(grid["gamma"], grid["chosen"])) == [(1, True), (4, False)]
