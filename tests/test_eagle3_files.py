"""Head folders before and while loading (issue 42, item 5): malformed heads in each release layout — a missing key,
a wrong shape, pickled code in a ``.bin``, a bad vocabulary map or layer list — are refused in one line naming the key,
its shape and the expected one, with nothing executed; and the ``eagle3`` kind through the registry: names, file
checks, the memory plan, serving names, a pair from ``eagle3:PATH`` and replay."""
import builtins
import json

import pytest
import torch

from actors.core.engine import SpecEngine
from actors.costs.batch_costs import measure_batch_costs
from actors.drafter_kinds import eagle, eagle3
from actors.drafter_kinds.registry import check_draft_files, kind_of, kind_of_drafter
from actors.drafting.eagle3_head import load_eagle3_head, random_eagle3_head, write_head_folder
from actors.drafting.eagle_head import init_head, load_head, read_state, save_head
from actors.loading.tiny_pair import llama, sharpen
from policies import build
from policies.errors import SpecsweepError
from policies.fixed import TargetOnly


def _target(vocab=12, layers=5, seed=5):
    return sharpen(llama(vocab=vocab, layers=layers, hidden=32, seed=seed))


class _Planted:
    """Pickled, it asks the unpickler to run code that writes a marker file (weights_only must refuse it)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (builtins.exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _one_line(fn, *args) -> str:
    with pytest.raises(SpecsweepError) as e:
        fn(*args)
    msg = str(e.value)
    assert "\n" not in msg and "Traceback" not in msg, msg
    return msg


def _edit(src, dst, config=None, drop=(), change=None, bin_file=False):
    """A copy of head folder ``src`` with tensors dropped/changed or the config edited."""
    cfg = json.loads((src / "config.json").read_text())
    cfg.update(config or {})
    state = {k: v for k, v in read_state(src).items() if k not in drop}
    state.update(change or {})
    return write_head_folder(dst, cfg, state, bin_file)


# ---------------------------------------------------------------- EAGLE-3 refusals
@pytest.mark.parametrize("bin_file", [False, True])
def test_eagle3_missing_key_and_wrong_shape_name_the_key_and_shapes(bin_file, tmp_path):
    target = _target()
    good = random_eagle3_head(target, tmp_path / "good", draft_vocab=9, seed=1)
    tcfg = target.config.to_dict()
    for drop, change, words in (
            (("midlayer.self_attn.q_proj.weight",), None, ["midlayer.self_attn.q_proj.weight is missing", "[32, 64]"]),
            (("d2t",), None, ["d2t is missing", "[9]"]),
            ((), {"fc.weight": torch.zeros(32, 64)}, ["fc.weight has shape [32, 64]", "expect [32, 96]"]),
            ((), {"lm_head.weight": torch.zeros(12, 32)}, ["lm_head.weight has shape [12, 32]", "[9, 32]"]),
            ((), {"midlayer.mlp.up_proj.weight": torch.zeros(64, 16)}, ["up_proj.weight has shape [64, 16]", "[64, 32]"]),
            ((), {"midlayer.extra.weight": torch.zeros(3)}, ["midlayer.extra.weight is not an EAGLE-3 tensor"])):
        bad = _edit(good, tmp_path / "bad", drop=drop, change=change, bin_file=bin_file)
        msg = _one_line(load_eagle3_head, bad, target)
        assert all(w in msg for w in words), (words, msg)
        if not bin_file:      # safetensors: the header alone refuses it, before any weight (files, plan, preflight)
            assert _one_line(check_draft_files, f"eagle3:{bad}", tcfg) == msg


def test_eagle3_config_and_vocabulary_map_refusals(tmp_path):
    target = _target()
    good = random_eagle3_head(target, tmp_path / "good", draft_vocab=9, seed=1)
    d2t = read_state(good)["d2t"]
    cases = (({"target_hidden_size": 64}, None, "target_hidden_size 64 but the target's hidden size is 32"),
             ({"vocab_size": 20}, None, "vocab_size 20 but the target's vocabulary is 12"),
             ({"eagle_aux_hidden_state_layer_ids": [1, 9]}, None, "layer 9, outside the target's decoder layers 0 … 4"),
             ({"draft_vocab_size": 40}, None, "draft_vocab_size 40"),
             (None, {"d2t": d2t + 12}, "outside the target's vocabulary of 12 tokens"),
             (None, {"d2t": d2t[0] - torch.arange(9)}, "same target id"),
             (None, {"t2d": torch.zeros(12, dtype=torch.bool)}, "t2d marks 0 target ids"))
    for config, change, words in cases:
        bad = _edit(good, tmp_path / "bad", config=config, change=change)
        assert words in _one_line(load_eagle3_head, bad, target), words


@pytest.mark.parametrize("layout", ["eagle12", "eagle3"])
def test_pickled_code_in_a_bin_is_refused_and_never_runs(layout, tmp_path):
    target = _target()
    marker = tmp_path / "ran.txt"
    if layout == "eagle3":
        good = random_eagle3_head(target, tmp_path / "good", seed=1)
        load = load_eagle3_head
    else:
        good = save_head(init_head(target, seed=1), tmp_path / "good")
        load = load_head
    evil = _edit(good, tmp_path / "evil", change={"norm.weight" if layout == "eagle3" else "fc.bias": _Planted(marker)},
                 bin_file=True)
    msg = _one_line(load, evil, target)
    assert "weights_only=True" in msg and not marker.exists()


def test_eagle12_missing_key_and_wrong_shape_in_one_line(tmp_path):
    target = _target()
    good = save_head(init_head(target, seed=1), tmp_path / "good")
    missing = _edit(good, tmp_path / "m", drop=("layers.0.mlp.up_proj.weight",), bin_file=True)
    assert "layers.0.mlp.up_proj.weight" in _one_line(load_head, missing, target)
    wrong = _edit(good, tmp_path / "w", change={"layers.0.self_attn.q_proj.weight": torch.zeros(32, 16)})
    msg = _one_line(check_draft_files, f"eagle:{wrong}", target.config.to_dict())
    assert "q_proj.weight has shape [32, 16]" in msg and "[32, 32]" in msg


def test_an_unmarked_eagle3_folder_named_eagle_is_told_its_name(tmp_path):
    target = _target()
    good = random_eagle3_head(target, tmp_path / "good", seed=1)
    cfg = json.loads((good / "config.json").read_text())
    for key in ("architectures", "draft_vocab_size"):
        cfg.pop(key)
    plain = write_head_folder(tmp_path / "plain", cfg, read_state(good))
    assert kind_of(f"eagle:{plain}") is eagle.KIND
    assert f"eagle3:{plain}" in _one_line(load_head, plain, target)


# ---------------------------------------------------------------- the kind in the registry
def test_eagle3_names_resolve_and_serve(tmp_path):
    target = _target()
    folder = random_eagle3_head(target, tmp_path / "h", seed=1)
    assert kind_of(f"eagle3:{folder}") is eagle3.KIND and kind_of(f"eagle:{folder}") is eagle3.KIND
    assert kind_of("eagle:/no/such/folder") is eagle.KIND and kind_of("smollm2-135m-eagle") is eagle.KIND
    serving = kind_of(f"eagle3:{folder}").serving(f"eagle3:{folder}")
    assert serving.methods == {"vllm": "eagle3", "sglang": "EAGLE3", "trtllm": "Eagle3"} and serving.model == str(folder)
    drafter = eagle3.KIND.load(type("C", (), {"draft": f"eagle3:{folder}"})(), target, None)
    assert kind_of_drafter(drafter) is eagle3.KIND and drafter.needs_features and eagle3.KIND.reads_features
    assert eagle3.KIND.draft_module(drafter, None) is drafter.head
    surface = measure_batch_costs(SpecEngine(target, drafter), sizes=(2,), widths=(1, 2), context=6, repeats=1)
    assert surface[2]["draft"] > 0                                       # a batched head level, on the engine's path
    for name, msg in ((f"eagle3:{tmp_path / 'nope'}", "does not exist"), ("eagle3:", "names no folder")):
        assert msg in _one_line(check_draft_files, name, None)


def test_memory_plan_entry_of_an_eagle3_head(tmp_path):
    from actors.plan.memory_plan import model_plan

    folder = random_eagle3_head(_target(), tmp_path / "h", seed=1)
    plan = model_plan(f"eagle3:{folder}", "float32", None, 128)
    h = 32
    assert plan.params["embeddings"] == 0 and plan.params["fusion"] == 3 * h * h
    assert plan.params["attention"] == 3 * h * h + 4 * h * 16          # q, k, v over 2h inputs (kv width 16), o
    assert plan.weight_bytes > 0 and plan.kv_bytes > 0


def test_pair_from_eagle3_path_generates_and_replays(tmp_path):
    from actors.loading.models import ModelSpec, load_model
    from actors.pair import Pair, PairConfig
    from actors.tracing.replay import replay
    from actors.rollouts import record_trace
    from actors.loading.tiny_pair import save_tiny_pair

    target_path, _ = save_tiny_pair(tmp_path / "pair")                       # 2 decoder layers: name the ids
    folder = random_eagle3_head(load_model(ModelSpec(target_path)), tmp_path / "head", layers=[0, 1, 1], seed=2,
                                draft_vocab=50)
    pair = Pair(PairConfig(target=target_path, draft=f"eagle3:{folder}"))
    assert pair.cfg.drafter_kind == "eagle3" and pair.drafter.name == "eagle3"
    ids = pair.tokenizer("hello there")["input_ids"]
    ar = pair.engine.generate(ids, TargetOnly(), max_new_tokens=12).token_ids
    for spec in ("fixed", "eagle2:depth=3,topk=2,n=6"):
        assert pair.engine.generate(ids, build(spec, 4), max_new_tokens=12).token_ids == ar
    rows = pair.engine.generate_batch([ids, ids[:3]], [build("fixed", 3) for _ in range(2)], max_new_tokens=8)
    assert rows[0].token_ids == ar[:8]
    trace = record_trace(pair.engine, ids, max_new_tokens=12, pair="tiny", tokenizer_hash="h")
    assert trace.meta["method"] == "eagle3"
    live = pair.engine.generate(ids, build("fixed", 3), max_new_tokens=12)
    rep = replay(trace, build("fixed", 3))
    assert rep.token_ids == live.token_ids and rep.accepted == live.accepted


@pytest.mark.slow
def test_a_sweep_runs_an_eagle3_pair_live_and_replayed_at_b1_and_b4(tmp_path):
    """``mode: both`` in process: every row succeeds at B = 1 and B = 4 (chains and the eagle2 tree), and each replayed
    chain row equals its live twin token for token."""
    import contextlib
    import io

    from actors.loading.models import ModelSpec, load_model
    from actors.loading.tiny_pair import save_tiny_pair
    from jobs.config import parse_config
    from jobs.store.parquet_log import ParquetLog
    from jobs.sweep.driver import run_sweep

    target_path, _ = save_tiny_pair(tmp_path / "pair")
    folder = random_eagle3_head(load_model(ModelSpec(target_path)), tmp_path / "head", layers=[0, 1, 1], seed=2,
                                draft_vocab=50)
    cfg = parse_config({"name": "e3", "output": str(tmp_path / "out"), "tracking_uri": f"sqlite:///{tmp_path}/m.db",
                        "pairs": [{"name": "tiny", "target": target_path, "draft": f"eagle3:{folder}"}],
                        "dataset": {"source": "sample", "question_ids": [9017, 9021]},
                        "generation": {"max_new_tokens": 8}, "policies": ["fixed", "eagle2"], "gammas": [2],
                        "warmup": 0, "batch_sizes": [1, 4], "mode": "both",
                        "calibrate": {"context": 16, "max_tokens": 4, "repeats": 1, "judge": False}})
    with contextlib.redirect_stderr(io.StringIO()):
        res = run_sweep(cfg, backend="inprocess", log_mlflow=False)
    df = ParquetLog(cfg.output).read()
    assert res["failed_rows"] == 0, df[df["status"] != "ok"]["error"].tolist()
    assert set(df["batch_size"]) == {1, 4} and {"fixed", "eagle2"} <= set(df["policy"])
    part = df[(df["policy"] == "fixed")]
    live, rep = part[part["mode"] == "live"], part[part["mode"] == "replay"]
    keys = ["config_key", "question_id", "turn", "repeat"]
    twins = live.merge(rep, on=keys, suffixes=("_live", "_replay"))
    assert len(twins) > 0
    assert all(list(a) == list(b) for a, b in zip(twins["token_ids_live"], twins["token_ids_replay"]))
