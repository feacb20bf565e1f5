"""A temperature list in a sweep config (the GT paper's Figure 3 from one config): one config per temperature into
``OUTPUT/T<t>`` named ``NAME-T<t>``, in the listed order; a scalar config unchanged; each bad list refused in one line
before anything runs; greedy-only policies refused when any listed temperature is above 0; the Figure 3 table from
the temperatures' CSVs; and one tiny end-to-end run of the driver over two temperatures."""
from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from actors.loading.tiny_pair import save_tiny_pair
from jobs.config import parse_config
from jobs.config.lists import parse_configs
from jobs.report.temperatures import figure3_table, figure3_text
from policies.errors import SpecsweepError
from tests.sweep_process import tiny_raw

RULE = "0 (greedy) or a number >= 0.0001 and <= 100"


def raw(folder: Path = Path("/tmp/ts"), temperature=(0.0, 1.0), target="smollm2-135m", draft="smollm2-135m-draft",
        **over) -> dict:
    """A tiny sweep config as a mapping, ``generation.temperature`` as given (a tuple becomes a list)."""
    t = list(temperature) if isinstance(temperature, tuple) else temperature
    return tiny_raw(folder, target, draft, generation={"max_new_tokens": 8, "temperature": t}, **over)


def refusal(config: dict) -> str:
    """The one-line message ``parse_configs`` refuses ``config`` with."""
    with pytest.raises(SpecsweepError) as e:
        parse_configs(config)
    message = str(e.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------------------------------------- expansion


def test_a_list_gives_one_config_per_temperature_in_the_listed_order():
    base = raw(temperature=(0.6, 0, 0.25, 1.0), experiment="fig3")
    cfgs = parse_configs(base)
    assert [c.generation["temperature"] for c in cfgs] == [0.6, 0, 0.25, 1.0]
    assert [c.output for c in cfgs] == [f"{base['output']}/T{t}" for t in ("0.6", "0", "0.25", "1")]
    assert [c.name for c in cfgs] == [f"{base['name']}-T{t}" for t in ("0.6", "0", "0.25", "1")]
    assert [c.experiment_name for c in cfgs] == [f"fig3-T{t}" for t in ("0.6", "0", "0.25", "1")]
    # everything else is the config as written
    scalar = parse_config({**base, "generation": {"max_new_tokens": 8, "temperature": 0.6}}).plain()
    for key in ("output", "name", "experiment"):
        scalar.pop(key)
    first = cfgs[0].plain()
    assert {k: v for k, v in first.items() if k not in ("output", "name", "experiment")} == scalar


def test_a_scalar_temperature_or_a_list_of_one_is_the_config_unchanged():
    for config in (raw(temperature=0.7), raw(temperature=(0.7,)), raw(temperature=0)):
        cfgs = parse_configs(config)
        expected = parse_config({**config, "generation": {"max_new_tokens": 8,
                                                          "temperature": cfgs[0].generation["temperature"]}})
        assert len(cfgs) == 1 and cfgs[0].model_dump() == expected.model_dump()
        assert cfgs[0].output == config["output"] and cfgs[0].name == config["name"]
    assert parse_configs(raw(temperature=(0.7,)))[0].generation["temperature"] == 0.7


# ---------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("listed, index, shown", [
    (["hot"], 0, "'hot'"), ([0.5, True], 1, "True"), ([0.2, None], 1, "None"), ([0.0, [0.5]], 1, "[0.5]"),
    ([0.1, -0.1], 1, "-0.1"), ([101], 0, "101"), ([0.0, float("nan")], 1, "nan"), ([1.0, float("inf")], 1, "inf"),
])
def test_a_listed_value_that_is_no_temperature_is_refused_naming_it_and_the_rule(listed, index, shown):
    message = refusal(raw(temperature=listed))
    assert message == f"config generation.temperature[{index}]: must be {RULE}, got {shown}"


def test_an_empty_list_is_refused_in_one_line():
    message = refusal(raw(temperature=[]))
    assert message.startswith("config generation.temperature: is an empty list; list at least one temperature")


@pytest.mark.parametrize("listed, index, first, label", [
    ([0.0, 0.5, 0.5], 2, 1, "T0.5"), ([0, 1.0, 0.0], 2, 0, "T0"), ([1, 1.0], 1, 0, "T1"),
    ([0.1234567, 0.1234568], 1, 0, "T0.123457"),       # one folder name: one temperature
])
def test_a_temperature_listed_twice_is_refused_naming_both_places(listed, index, first, label):
    message = refusal(raw(temperature=listed))
    assert message == (f"config generation.temperature[{index}]: temperature {listed[index]!r} is already listed at "
                       f"generation.temperature[{first}] (both are {label}); list each once")


@pytest.mark.parametrize("policy, temperatures", [("oracle", (0.0, 0.5)), ("oracle", (0.5, 0.0)),
                                                  ("tetris", (0.0, 0.2, 1.0))])
def test_a_greedy_only_policy_is_refused_when_any_listed_temperature_is_above_0(policy, temperatures):
    message = refusal(raw(temperature=temperatures, policies=["fixed", policy]))
    hot = ", ".join(f"{t:g}" for t in temperatures if t > 0)
    assert message.startswith(f"config policies: {policy} is defined for greedy decoding only")
    assert message.endswith(f"generation.temperature lists {hot}: list only 0 or drop it")
    assert len(parse_configs(raw(temperature=(0.0,), policies=["fixed", policy]))) == 1   # greedy alone: fine


def test_a_scalar_temperature_keeps_its_greedy_only_message():
    message = refusal(raw(temperature=0.5, policies=["oracle"]))
    assert message == "config policies: oracle is defined for greedy decoding only; set generation.temperature: 0 " \
                      "or drop it"


def run_main(*args) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of the sweep driver's ``main`` run in this process."""
    from jobs.sweep.command import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_the_driver_refuses_a_bad_list_in_one_line_before_anything_runs(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(raw(tmp_path, temperature=[0.0, 0.5, "hot"])))
    code, out, err = run_main(path, "--backend", "inprocess")
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"specsweep: error: config generation.temperature[2]: must be {RULE}, got 'hot'"]
    assert not (tmp_path / "out").exists() and not (tmp_path / "mlflow.db").exists()


# ---------------------------------------------------------------------------------------------- Figure 3 table

SPEEDUP = ("pair,policy_spec,gamma,policy,qa,qa_lo,qa_hi,overall,overall_lo,overall_hi\n"
           "p,eagle2,1,eagle2,{a},0.9,1.5,{a},{alo},{ahi}\n"
           "p,gt-dynamic,1,gt-dynamic,{b},1.0,1.6,{b},{blo},{bhi}\n")
SUMMARY = ("pair,policy_spec,gamma,policy,throughput,mean_accepted_length,mal_lo,mal_hi\n"
           "p,ar,0,ar,100.0,1.0,1.0,1.0\n"
           "p,gt-dynamic,1,gt-dynamic,130.0,{gt},2.0,3.0\n"
           "p,eagle2,1,eagle2,120.0,{e2},2.0,3.0\n")


def folder(root: Path, name: str, speed: dict | None, lengths: dict | None = None) -> Path:
    """An output folder holding a hand-written speedup_vs_ar.csv and (with ``lengths``) summary.csv."""
    f = root / name
    f.mkdir()
    if speed is not None:
        (f / "speedup_vs_ar.csv").write_text(SPEEDUP.format(**speed))
    if lengths is not None:
        (f / "summary.csv").write_text(SUMMARY.format(**lengths))
    return f


def test_figure3_table_reads_each_temperature_in_order_with_intervals_and_accepted_lengths(tmp_path):
    t0 = folder(tmp_path, "T0", dict(a=1.2, alo=1.1, ahi=1.3, b=1.4, blo=1.25, bhi=1.55), dict(e2=2.5, gt=2.75))
    t1 = folder(tmp_path, "T1", dict(a=1.05, alo=0.95, ahi=1.15, b=1.1, blo=1.0, bhi=1.2))    # no summary.csv
    empty = folder(tmp_path, "T0.5", None)                                                     # no speedup CSV
    df = figure3_table([(0.0, t0), (0.5, empty), (1.0, t1)])
    assert list(df.columns) == ["temperature", "pair", "policy_spec", "policy", "gamma", "speedup", "speedup_lo",
                                "speedup_hi", "mean_accepted_length"]
    assert list(zip(df["temperature"], df["policy_spec"])) == [(0.0, "eagle2"), (0.0, "gt-dynamic"),
                                                               (1.0, "eagle2"), (1.0, "gt-dynamic")]
    assert df[["speedup", "speedup_lo", "speedup_hi"]].values.tolist() == [
        [1.2, 1.1, 1.3], [1.4, 1.25, 1.55], [1.05, 0.95, 1.15], [1.1, 1.0, 1.2]]
    assert df["mean_accepted_length"].tolist()[:2] == [2.5, 2.75]          # matched by config, not by row order
    assert all(math.isnan(v) for v in df["mean_accepted_length"].tolist()[2:])
    assert set(df["gamma"]) == {1} and set(df["pair"]) == {"p"}

    text = figure3_text(df)
    assert text.startswith("Figure 3: speedup vs ar by sampling temperature (95 % interval), mean accepted length\n")
    lines = text.splitlines()
    assert len(lines) == 1 + 2 + 4
    assert "| 0 " in lines[3] and "1.20 [1.10, 1.30]" in lines[3] and "2.50" in lines[3]
    assert "| 1 " in lines[6] and "1.10 [1.00, 1.20]" in lines[6] and "–" in lines[6]


def test_figure3_without_any_speedup_csv_is_an_empty_table_saying_so(tmp_path):
    df = figure3_table([(0.0, folder(tmp_path, "T0", None)), (1.0, tmp_path / "missing")])
    assert df.empty and "temperature" in df.columns
    assert "no speedup vs ar in any temperature's output folder" in figure3_text(df)


# ---------------------------------------------------------------------------------------------- end to end


def test_the_driver_runs_each_temperature_into_its_folder_and_writes_figure3(tmp_path):
    """Two temperatures, one question, 8 tokens, fixed γ = 2 on the tiny random-weight pair (about 30 s, 2 busy
    cores): each folder written, figure3.csv with a row per temperature, exit status 0; the dry run writes nothing."""
    target, draft = save_tiny_pair(tmp_path / "pair")
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(raw(tmp_path, temperature=[0.0, 1.0], target=target, draft=draft,
                                       dataset={"source": "sample", "question_ids": [9021]})))
    out = tmp_path / "out"

    code, plan, err = run_main(path, "--backend", "inprocess", "--dry-run")
    assert code == 0 and not out.exists()
    assert plan.count("sweep 's-") == 2 and "-T0'" in plan and "-T1'" in plan

    code, stdout, err = run_main(path, "--backend", "inprocess", "--json")
    assert code == 0, err[-3000:]
    progress = [line for line in err.splitlines() if line.startswith("specsweep: temperature ")]
    assert progress == [f"specsweep: temperature 1/2: T=0 → {out}/T0", f"specsweep: temperature 2/2: T=1 → {out}/T1"]
    for t in ("T0", "T1"):
        assert (out / t / "speedup_vs_ar.csv").is_file() and (out / t / "report.md").is_file()
    fig = pd.read_csv(out / "figure3.csv")
    assert fig["temperature"].tolist() == [0.0, 1.0]
    assert set(fig["pair"]) == {"tiny"} and set(fig["policy"]) == {"fixed"} and set(fig["gamma"]) == {2}
    assert fig["speedup"].gt(0).all() and fig["mean_accepted_length"].ge(1).all()
    assert "Figure 3: speedup vs ar by sampling temperature" in err and "Traceback" not in err
    result = json.loads(stdout)
    assert [(r["temperature"], r["output"], r["failed_rows"]) for r in result["temperatures"]] == [
        (0.0, f"{out}/T0", 0), (1.0, f"{out}/T1", 0)]
