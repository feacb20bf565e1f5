"""``generate --answers`` writes through a twin no user file can have; a ``--costs`` file is reused only on the same
machine and engine setup (engine, Inductor, static capacity), and the line for one that is not says what happens
instead; a sweep's preflight refuses calibration settings by the rule its actors' probe runs under."""
import json
import os

import pytest

from actors.costs import machine
from actors.loading.tiny_pair import save_tiny_pair
from actors.pair import Pair, PairConfig
from jobs import batch_generate
from tests.helpers import run_cli as run
from jobs.config import parse_config
from jobs.sweep import preflight
from policies.costs import CostModel
from policies.errors import SpecsweepError

NEW = 6


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen_costs")
    target, draft = save_tiny_pair(root)
    questions = root / "questions.jsonl"
    questions.write_text("".join(json.dumps({"question_id": q, "category": "qa", "turns": t}) + "\n"
                                 for q, t in ((1, ["hi", "and then?"]), (2, ["two words"]))))
    return {"root": root, "target": target, "draft": draft, "questions": questions}


# ---------------------------------------------------------------- 1. --answers' temporary twin

@pytest.mark.parametrize("extra", [[], ["--batch-size", 2]], ids=["one-by-one", "batched"])
def test_answers_leave_a_users_tmp_file_beside_them_alone(tiny, tmp_path, extra):
    answers, mine = tmp_path / "answers.jsonl", tmp_path / "answers.tmp"
    mine.write_text("my own notes\n")
    code, out, err = run("generate", "--dataset", tiny["questions"], "--target", tiny["target"], "--draft",
                         tiny["draft"], "--policy", "ar", "--max-new-tokens", NEW, "--answers", answers, *extra)
    assert code == 0, err
    assert mine.read_text() == "my own notes\n"
    assert [json.loads(line)["question_id"] for line in answers.read_text().splitlines()] == [1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.jsonl", "answers.tmp"]     # no twin left


def test_answer_file_is_synced_renamed_and_its_folder_synced(tmp_path, monkeypatch):
    from jobs.store import durable

    synced = []
    real = durable.sync_file
    monkeypatch.setattr(durable, "sync_file", lambda p: (synced.append(str(p)), real(p)))
    path = tmp_path / "a.jsonl"
    path.write_text("old\n")
    batch_generate.write_answer_file(path, [{"question_id": 7}, {"question_id": 8}])
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"question_id": 7}, {"question_id": 8}]
    twin, folder = synced
    assert os.path.dirname(twin) == str(tmp_path) and os.path.basename(twin).startswith(".a.jsonl.")
    assert folder == str(tmp_path) and not os.path.exists(twin)


# ---------------------------------------------------------------- 2./3. --costs: what is compared, what is said

def _facts_here(target: str, draft: str, **cfg) -> dict:
    """The machine facts of this pair on this machine, with its engine setup read off the loaded engine."""
    pair = Pair(PairConfig(target=target, draft=draft, device="cpu", **cfg))
    runner = pair.engine.runner
    return {**machine.machine_facts(pair.target.device, pair.cfg.dtype, machine.engine_models(pair.engine)),
            "engine": pair.engine.engine, "inductor": bool(getattr(runner, "inductor", False)),
            "capacity": getattr(runner, "capacity", None)}


def _cost_file(path, facts: dict):
    m = CostModel.measured(t_draft=0.002, t_verify={1: 0.01, 2: 0.011, 4: 0.012, 8: 0.015, 16: 0.02}, context=64)
    m.machine = dict(facts)
    path.write_text(json.dumps(m.to_dict()))
    return path


def _generate(tiny, costs, policy: str):
    return run("generate", "--prompt", "hello", "--target", tiny["target"], "--draft", "ngram", "--policy", policy,
               "--max-new-tokens", NEW, "--costs", costs, "--json")


def test_engine_setup_is_recorded_and_compared(tiny):
    pair = Pair(PairConfig(target=tiny["target"], draft="ngram", device="cpu"))
    recorded = machine.machine_facts("cpu", "float32", machine.engine_models(pair.engine), pair.engine)
    eager = _facts_here(tiny["target"], "ngram")
    assert machine.machine_differences(recorded, eager) == []
    static = _facts_here(tiny["target"], "ngram", engine="static", max_context=300)
    assert {k: eager[k] for k in ("engine", "inductor", "capacity")} == {"engine": "eager", "inductor": False,
                                                                         "capacity": None}
    assert {k: static[k] for k in ("engine", "inductor", "capacity")} == {"engine": "static", "inductor": False,
                                                                          "capacity": 300}
    assert {"engine", "inductor", "capacity"} <= set(machine.COMPARED)
    assert machine.machine_differences(eager, static) == ["engine: 'eager' → 'static'", "capacity: None → 300"]
    smaller = _facts_here(tiny["target"], "ngram", engine="static", max_context=200)
    assert machine.machine_differences(static, smaller) == ["capacity: 300 → 200"]


def test_calibration_records_the_engine_setup(tiny):
    pair = Pair(PairConfig(target=tiny["target"], draft="ngram", device="cpu", engine="static", max_context=128))
    model = pair.calibrate(context=16, max_tokens=4, repeats=1, judge=False)
    assert (model.machine["engine"], model.machine["inductor"], model.machine["capacity"]) == ("static", False, 128)
    assert machine.machine_differences(model.machine, _facts_here(tiny["target"], "ngram", engine="static",
                                                                  max_context=128)) == []


def test_a_matching_cost_file_is_reused_without_a_line(tiny, tmp_path):
    costs = _cost_file(tmp_path / "c.json", _facts_here(tiny["target"], "ngram"))
    code, out, err = _generate(tiny, costs, "goodput")
    assert code == 0, err
    assert "another machine" not in err and "measuring" not in err
    assert json.loads(out)["costs"]["machine"] == json.loads(costs.read_text())["machine"]     # the file's model


def test_a_cost_file_of_another_engine_is_not_reused(tiny, tmp_path):
    facts = {**_facts_here(tiny["target"], "ngram"), "engine": "static", "capacity": 2048}
    code, out, err = _generate(tiny, _cost_file(tmp_path / "c.json", facts), "fixed")
    assert code == 0, err
    lines = [line for line in err.splitlines() if "c.json" in line]
    assert len(lines) == 1 and "engine: 'static' → 'eager'" in lines[0] and "capacity: 2048 → None" in lines[0]
    assert json.loads(out)["costs"] is None


def test_a_cost_file_without_the_engine_facts_is_measured_again_with_a_line(tiny, tmp_path):
    facts = {k: v for k, v in _facts_here(tiny["target"], "ngram").items()
             if k not in ("engine", "inductor", "capacity")}
    costs = _cost_file(tmp_path / "old.json", facts)
    code, out, err = _generate(tiny, costs, "goodput")
    assert code == 0, err
    said = [line for line in err.splitlines() if "old.json" in line]
    assert len(said) == 1 and "engine: None → 'eager'" in said[0]
    assert "measuring the pair's step costs again here" in said[0]
    assert sum("measuring" in line for line in err.splitlines()) == 1          # one line, not two
    assert json.loads(out)["costs"]["machine"]["engine"] == "eager"            # measured here, on this engine


def test_a_foreign_cost_file_says_nothing_is_measured_when_the_policy_reads_no_costs(tiny, tmp_path):
    facts = {**_facts_here(tiny["target"], "ngram"), "threads": -1}
    code, out, err = _generate(tiny, _cost_file(tmp_path / "c.json", facts), "fixed")
    assert code == 0, err
    said = [line for line in err.splitlines() if "c.json" in line]
    assert len(said) == 1 and "threads: -1 →" in said[0]
    assert "not using it; nothing is measured instead (policy fixed reads no cost model)" in said[0]
    assert "measuring" not in err


# ---------------------------------------------------------------- 4. the sweep's preflight: the actor's probe rule

def _config(tiny, tmp_path, calibrate=(32, 4, 1), **pair):
    """A sweep config of the tiny target (ngram draft unless ``pair`` says), ``calibrate`` = (context, max_tokens,
    repeats) or None (the section left out)."""
    raw = {"name": "pf", "output": str(tmp_path / "out"), "tracking_uri": f"sqlite:///{tmp_path}/m.db",
           "pairs": [{"name": "tiny", "target": tiny["target"], "draft": "ngram", "device": "cpu", **pair}],
           "dataset": {"source": "sample", "question_ids": [9001]}, "policies": ["fixed"],
           "gammas": [2], "warmup": 0, "generation": {"max_new_tokens": 8}}
    if calibrate is not None:
        raw["calibrate"] = dict(zip(("context", "max_tokens", "repeats"), calibrate), judge=False)
    return parse_config(raw)


def _actor(cfg):
    """A PairActor built exactly as the sweep builds it (``jobs/sweep/driver.py``)."""
    from actors.pair_actor import PairActor
    from jobs.sweep.driver import actor_specs

    return PairActor(**actor_specs(cfg, None)[0].kwargs)


def test_preflight_refuses_a_static_cache_the_probe_does_not_fit(tiny, tmp_path):
    # ngram at max_tokens 4, repeats 1: k ≤ 2, 2 kept steps of 3 tokens + 1 = 7 positions past the 32-token context
    cfg = _config(tiny, tmp_path, engine="static", max_context=38)
    with pytest.raises(SpecsweepError) as e:
        preflight.check_pairs(cfg, local_cluster=False)
    msg = str(e.value)
    assert msg.startswith("config calibrate.context: pairs[0]: the calibration probe needs 39 positions")
    assert "which exceeds the 38 positions the static KV cache holds (pairs[0].max_context 38)" in msg
    assert "\n" not in msg
    assert "pairs[0].max_context >= 39" in msg and "calibrate.context <= 31" in msg
    preflight.check_pairs(_config(tiny, tmp_path, engine="static", max_context=39), local_cluster=False)
    preflight.check_pairs(_config(tiny, tmp_path, max_context=38), local_cluster=False)     # eager: no cache bound


def test_what_preflight_accepts_the_actor_runs_and_what_it_refuses_the_actor_cannot(tiny, tmp_path):
    fits = _config(tiny, tmp_path, engine="static", max_context=39)
    preflight.check_pairs(fits, local_cluster=False)
    assert _actor(fits).pair.costs.machine["capacity"] == 39
    short = _config(tiny, tmp_path, engine="static", max_context=30)
    with pytest.raises(SpecsweepError, match="calibration probe needs 39 positions"):
        preflight.check_pairs(short, local_cluster=False)
    with pytest.raises(ValueError, match="static KV cache of 30 positions is full"):
        _actor(short)


def test_preflight_counts_the_tree_probe_and_the_actors_max_draft(tiny, tmp_path):
    import inspect

    from actors.costs.calibrate import calibrate
    from actors.drafting.drafters import ModelDrafter, NgramDrafter
    from jobs.sweep.driver import actor_specs

    unset = _config(tiny, tmp_path, calibrate=None)
    given = actor_specs(unset, None)[0].kwargs["calibrate"]            # what the actor calibrates with when unset
    defaults = {k: p.default for k, p in inspect.signature(calibrate).parameters.items()}
    assert {**defaults, **given} == {**defaults, **unset.calibrate.model_dump()}      # what preflight checks
    cfg = _config(tiny, tmp_path, draft=tiny["draft"], engine="static", max_context=68)
    assert preflight.actor_max_draft(cfg.gammas) == actor_specs(cfg, None)[0].kwargs["pair"]["max_draft"]
    assert ModelDrafter.supports_trees and not NgramDrafter.supports_trees
    # a draft LM grows trees: the largest tree shape (16 nodes, depth 4) over 4 steps fills 4·5 + 16 + 1 = 37
    with pytest.raises(SpecsweepError, match="probe needs 69 positions"):
        preflight.check_pairs(cfg, local_cluster=False)
    preflight.check_pairs(_config(tiny, tmp_path, draft=tiny["draft"], engine="static", max_context=69),
                          local_cluster=False)
    # the actors draft up to 32 (not the CLI's 24): at max_tokens 64, k = 32 runs, 6 kept steps of 33 tokens + 1
    wide = _config(tiny, tmp_path, calibrate=(256, 64, 3), engine="static", max_context=400)
    with pytest.raises(SpecsweepError, match=r"needs 455 positions \(calibrate.context 256 \+ up to 199 "):
        preflight.check_pairs(wide, local_cluster=False)
