"""``specsweep replay`` / ``tune`` on a scripted sweep folder (no model, no sweep run): a cost file prices only the
pairs it measured, each cost source keeps its own replay folder, and a batch policy is refused in the user's terms."""
import json

import pandas as pd
import pytest

from tests.replay_folders import COUNTS, cli, cost_dict, one_line, policies_file, scripted_sweep


# ---------------------------------------------------------------- a cost file prices only the pairs it measured
def test_a_calibrate_file_of_one_pair_is_refused_on_a_sweep_of_two(tmp_path, capsys):
    out = scripted_sweep(tmp_path, max_draft=8)                       # tune replays fixed K up to 8
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps(cost_dict(COUNTS["a"], t_verify=0.02)))
    assert cli("replay", out, "--policies", policies_file(tmp_path), "--costs", costs) == 2
    line = one_line(capsys)
    assert "pair b " in line and "draft 200 parameters" in line and "draft 100 parameters" in line, line
    assert "only pairs a (`pairs:`" in line and "`--pair` in tune" in line and "specsweep calibrate" in line, line
    assert not (out / "replays").exists()
    # tune replays the same way: refused too, not priced with pair a's model
    assert cli("tune", out, "--policy", "fixed", "--costs", costs) == 2
    assert "pair b " in one_line(capsys)
    # `pairs:` keeps the pair the file measured: replayed under that file
    pol = policies_file(tmp_path, "policies: [fixed]\ngammas: [2]\npairs: [a]\n", "only-a")
    assert cli("replay", out, "--policies", pol, "--costs", costs) == 0
    rows = pd.read_parquet(out / "replays" / "only-a-costs-costs" / "rows.parquet")
    assert set(rows["pair"]) == {"a"} and len(rows[rows["policy"] == "fixed"]) == 2
    capsys.readouterr()
    # tune's --pair keeps it too: tuned under the file, in a folder named after it
    assert cli("tune", out, "--policy", "fixed", "--costs", costs, "--pair", "a") == 0
    tuned = out / "tunes" / "fixed-costs-costs"
    text = (tuned / "report.md").read_text()
    assert "--pair a" in text.splitlines()[0] and "\n| a |" in text and "\n| b |" not in text, text
    assert json.loads((tuned / "source.json").read_text())["pairs"] == ["a"]
    capsys.readouterr()
    assert cli("tune", out, "--policy", "fixed", "--pair", "c") == 2
    assert "pair 'c' has no traces" in one_line(capsys) and not (out / "tunes" / "fixed").exists()
    # a name without traces, or a malformed list: one line naming what is valid
    for text, needle in (("pairs: [c]", "valid pairs: a, b"), ("pairs: a", "expected a non-empty list")):
        assert cli("replay", out, "--policies", policies_file(tmp_path, f"policies: [fixed]\n{text}\n", "bad")) == 2
        assert needle in one_line(capsys)


def test_a_cost_file_that_measured_the_pair_still_prices_a_one_pair_sweep(tmp_path, capsys):
    out = scripted_sweep(tmp_path, pairs=("a",))
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps(cost_dict(COUNTS["a"], t_verify=0.02)))
    assert cli("replay", out, "--policies", policies_file(tmp_path), "--costs", costs) == 0
    rows = pd.read_parquet(out / "replays" / "f-costs-costs" / "rows.parquet")
    ar = rows[rows["policy"] == "ar"]
    assert set(ar["mode"]) == {"replay"} and (ar["wall_time"] < 0.42).all()     # priced by the file's faster model
    capsys.readouterr()
    costs.write_text(json.dumps(cost_dict({}, t_verify=0.02)))        # no counts recorded: one pair, nothing to confuse
    assert cli("replay", out, "--policies", policies_file(tmp_path), "--costs", costs) == 0
    capsys.readouterr()
    costs.write_text(json.dumps(cost_dict(COUNTS["b"], t_verify=0.02)))   # another pair's models: refused
    assert cli("replay", out, "--policies", policies_file(tmp_path), "--costs", costs) == 2
    assert "pair a " in one_line(capsys)


def test_a_cost_file_without_counts_cannot_price_several_pairs(tmp_path, capsys):
    out = scripted_sweep(tmp_path)
    costs = tmp_path / "old.json"
    costs.write_text(json.dumps(cost_dict({})))
    assert cli("replay", out, "--policies", policies_file(tmp_path), "--costs", costs) == 2
    assert "cannot be matched to pairs a, b" in one_line(capsys)
    # another sweep's actors.json names every pair: each pair takes its own entry
    assert cli("replay", out, "--policies", policies_file(tmp_path), "--costs", out / "actors.json") == 0


# ---------------------------------------------------------------- one replay folder per cost source
def test_each_cost_source_writes_its_own_replay_folder(tmp_path, capsys):
    from jobs.replay_cli import replay_folder

    assert replay_folder("x/f.yaml", None, None) == "f"
    assert replay_folder("f.yaml", "roofline:h100", ("h100", None)) == "f-roofline-h100"
    assert replay_folder("f.yaml", "roofline:h100:int4", ("h100", "int4")) == "f-roofline-h100-int4"
    assert replay_folder("f.yaml", "other/actors.json", None) == "f-costs-actors"
    out = scripted_sweep(tmp_path, pairs=("a",))
    costs = tmp_path / "quiet.json"
    costs.write_text(json.dumps(cost_dict(COUNTS["a"], t_verify=0.02)))
    pol = policies_file(tmp_path)
    walls = {}
    for source, folder in ((None, "f"), ("roofline:h100", "f-roofline-h100"),
                           ("roofline:h100:int4", "f-roofline-h100-int4"), (costs, "f-costs-quiet")):
        assert cli("replay", out, "--policies", pol, *(["--costs", source] if source else [])) == 0
        rows = pd.read_parquet(out / "replays" / folder / "rows.parquet")
        walls[folder] = rows.loc[rows["policy"] == "fixed", "wall_time"].sum()
    capsys.readouterr()
    assert sorted(p.name for p in (out / "replays").iterdir()) == sorted(walls)
    assert len(set(walls.values())) == 4                     # four cost sources, four sets of predicted times


def test_a_cost_file_of_the_same_stem_never_replaces_another_files_replay(tmp_path, capsys):
    out = scripted_sweep(tmp_path, pairs=("a",))
    pol = policies_file(tmp_path)
    walls = []
    for sub, t_verify in (("x", 0.02), ("y", 0.03), ("x", 0.02)):      # two files named costs.json, then x again
        (tmp_path / sub).mkdir(exist_ok=True)
        costs = tmp_path / sub / "costs.json"
        costs.write_text(json.dumps(cost_dict(COUNTS["a"], t_verify=t_verify)))
        assert cli("replay", out, "--policies", pol, "--costs", costs) == 0
        walls.append({p.name: pd.read_parquet(p / "rows.parquet").query("policy == 'fixed'")["wall_time"].sum()
                      for p in (out / "replays").iterdir()})
    capsys.readouterr()
    assert list(walls[0]) == ["f-costs-costs"]
    assert sorted(walls[1]) == ["f-costs-costs", "f-costs-costs-2"] and walls[1]["f-costs-costs"] == walls[0][
        "f-costs-costs"] and walls[1]["f-costs-costs-2"] > walls[0]["f-costs-costs"]     # y's slower verify, kept apart
    assert walls[2] == walls[1]                                 # x rerun: its own folder again, nothing new
    src = json.loads((out / "replays" / "f-costs-costs-2" / "source.json").read_text())
    assert src == {"policies": str(pol.resolve()), "costs": str((tmp_path / "y" / "costs.json").resolve())}


# ---------------------------------------------------------------- a batch policy, in the user's terms
@pytest.mark.parametrize("command", ["replay", "tune"])
def test_a_batch_policy_is_refused_naming_it_and_the_valid_chain_policies(tmp_path, capsys, command):
    out = scripted_sweep(tmp_path, pairs=("a",))
    args = (["--policies", policies_file(tmp_path, "policies: [tetris]\n")] if command == "replay"
            else ["--policy", "tetris"])
    assert cli(command, out, *args) == 2
    line = one_line(capsys)
    assert "policy tetris is a batch policy" in line and "per-sequence chain policies" in line, line
    assert "valid: fixed, hf-heuristic" in line and "ema-steps" in line and "SequencePolicy" not in line
    assert "base=0" not in line and "tetris," not in line.split("valid:")[1]


def test_check_replayable_names_the_policy_as_written():
    from actors.tracing.replay import chain_policy_names, check_replayable
    from policies.errors import SpecsweepError
    from policies.registry import build

    assert "fixed" in chain_policy_names() and not {"ar", "tetris", "gt-batch", "sequoia"} & set(chain_policy_names())
    with pytest.raises(SpecsweepError, match=r"^policy gt-batch:cap=4 is a batch policy: "):
        check_replayable(build(("gt-batch", {"cap": 4}), 2), spec="gt-batch:cap=4")
    with pytest.raises(SpecsweepError, match=r"^policy sequoia cannot be replayed \(static trees"):
        check_replayable(build("sequoia", 2))
