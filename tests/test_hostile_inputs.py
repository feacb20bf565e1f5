"""Hostile inputs (issue 40, items 3 and 4): each listed input gives ONE ``specsweep: error:`` line naming the file or
field, exit status 2, and leaves no file behind — refused where it is read, before a weight loads, MLflow opens or
Ray starts. Tiny random-weight models (``actors/loading/tiny_pair.py``) only; no network.
"""
from __future__ import annotations

import json
import math
import os
import socket
import time
from pathlib import Path

import pytest
import yaml

from actors.loading.tiny_pair import save_tiny_pair
from jobs.config import parse_config
from policies.errors import SpecsweepError
from tests.sweep_process import tiny_raw

NAN, INF = float("nan"), float("inf")


# --------------------------------------------------------------------------------------- inputs

def _head(root: Path, target: str) -> Path:
    """A valid EAGLE head for the tiny target, in the release layout."""
    from actors.drafting.eagle_head import init_head, save_head
    from actors.loading.models import ModelSpec, load_model

    return save_head(init_head(load_model(ModelSpec(target)), seed=1), root / "head")


def _variant(src: Path, dst: Path, config: dict | None = None, state=None, files: dict | None = None) -> str:
    """A copy of the model or head folder ``src`` with its config.json updated by ``config``, its weights replaced by
    the tensors ``state(old)`` returns, and ``files`` (name → bytes or text) written; returns its path."""
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dst)
    if config is not None:
        c = json.loads((dst / "config.json").read_text())
        (dst / "config.json").write_text(json.dumps({**c, **config}))
    if state is not None:
        save_file(state(load_file(str(dst / "model.safetensors"))), str(dst / "model.safetensors"))
    for name, data in (files or {}).items():
        (dst / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(dst)


def _cost(**change) -> dict:
    """A stored cost model (``specsweep calibrate --out`` format) with ``change`` applied to its fields."""
    from policies.costs import CostModel

    d = CostModel.measured(0.01, {1: 0.05, 2: 0.08, 5: 0.09}).to_dict()
    for key, value in change.items():
        if key == "values":
            d["verify"] = {**d["verify"], "values": value}
        else:
            d[key] = value
    return d


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Every hostile file of the battery, built once: (root, target, draft, paths by name)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("hostile")
    target, draft = save_tiny_pair(root / "pair")
    head = _head(root, target)
    p = {"head": str(head)}
    q = "layers.0.self_attn.q_proj.weight"
    p["head_q"] = _variant(head, root / "head_q", state=lambda s: {**s, q: s[q][:16].clone()})
    p["head_3"] = _variant(head, root / "head_3", config={"num_attention_heads": 3, "num_key_value_heads": 3,
                                                           "head_dim": None})
    p["head_badjson"] = _variant(head, root / "head_badjson", files={"draft_vocab.json": "{kept_ids: [1,"})
    p["head_strid"] = _variant(head, root / "head_strid", files={"draft_vocab.json": '{"kept_ids": [1, "5"]}'})
    p["head_nokept"] = _variant(head, root / "head_nokept", files={"draft_vocab.json": '{"ids": [1, 2]}'})
    weights = (Path(draft) / "model.safetensors").read_bytes()
    p["draft_cut"] = _variant(Path(draft), root / "draft_cut", files={"model.safetensors": weights[:len(weights) // 2]})
    p["notok"] = _variant(Path(draft), root / "notok")
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"):
        (Path(p["notok"]) / f).unlink(missing_ok=True)
    p["draft_vmap"] = _variant(Path(draft), root / "draft_vmap",
                               files={"vocab_map.json": '{"kept_ids": [0, "x"], "full_vocab_size": 99}'})
    for name, change in {"verify_str": {"verify": "fast"}, "nan": {"values": [NAN, 0.08, 0.09]},
                         "neg": {"values": [-0.05, 0.08, 0.09]}, "zero": {"values": [0.0, 0.08, 0.09]},
                         "inf": {"values": [INF, 0.08, 0.09]}, "overhead": {"overhead": -1.0},
                         "draft_nan": {"draft": {"per_proposal": NAN}}, "ok": {}}.items():
        (root / f"cost-{name}.json").write_text(json.dumps(_cost(**change)))
    for name, change in {"str": {"hidden_size": "32"}, "huge": {"hidden_size": 1e308}, "neg": {"hidden_size": -32},
                         "layers0": {"num_hidden_layers": 0}, "heads7": {"hidden_size": 8192, "num_attention_heads": 7},
                         "vocab0": {"vocab_size": 0}}.items():
        folder = root / f"cfg-{name}"
        folder.mkdir()
        c = json.loads((Path(target) / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**c, **change}))
        p[f"cfg_{name}"] = str(folder)
    good = pa.table({"a": list(range(1000))})
    for name in ("cut", "random", "empty", "foreign"):
        (root / f"rep-{name}" / "traces").mkdir(parents=True)
    pq.write_table(good, root / "rep-foreign" / "traces" / "t.parquet")
    data = (root / "rep-foreign" / "traces" / "t.parquet").read_bytes()
    (root / "rep-cut" / "traces" / "t.parquet").write_bytes(data[: len(data) // 2])
    (root / "rep-random" / "traces" / "t.parquet").write_bytes(bytes(range(256)) * 8)
    (root / "rep-empty" / "traces" / "t.parquet").write_bytes(b"")
    (root / "pol.yaml").write_text("policies: [fixed]\n")
    (root / "afile").write_text("x")
    (root / "binary.txt").write_bytes(b"\xff\xfe\x00\x81binary")
    os.symlink(root / "loop", root / "loop")
    return root, target, draft, p


def cli_cases(root: Path, target: str, draft: str, p: dict, port: int) -> list[tuple[list[str], str]]:
    """(arguments, text the one error line must hold) for every hostile input of issue 40 items 3 and 4."""
    def conf(file, **over):
        path = root / f"{file}.yaml"
        path.write_text(yaml.safe_dump(tiny_raw(root, target, draft, prefix="hostile", **over)))
        return str(path)

    def pair(**over):
        return [{"name": "tiny", "target": target, "draft": draft, "actors": 1, "device": "cpu", **over}]

    gen = ["generate", "--prompt", "x", "--target", target]
    cost = lambda name: ["--costs", str(root / f"cost-{name}.json")]  # noqa: E731
    trace = lambda name: root / f"rep-{name}" / "traces" / "t.parquet"  # noqa: E731
    replay = lambda name, *more: ["replay", str(root / f"rep-{name}"), "--policies", str(root / "pol.yaml"),  # noqa: E731
                                  *more]
    plan = lambda name: ["plan", conf(f"plan-{name}", pairs=[{"target": p[f"cfg_{name}"], "draft": "ngram"}])]  # noqa: E731
    distill = ["distill", "--kind", "eagle", "--target", target]
    q = "layers.0.self_attn.q_proj.weight has shape [16, 32] but the head's config.json implies [32, 32]"
    return [
        # EAGLE heads, reduced vocabularies
        (gen + ["--draft", f"eagle:{p['head_q']}"], q),
        (gen + ["--draft", f"eagle:{p['head_3']}"], "num_attention_heads 3 does not divide hidden_size 32"),
        (gen + ["--draft", f"eagle:{p['head_badjson']}"],
         "draft_vocab.json (reduced vocabulary) is unreadable or not valid JSON"),
        (gen + ["--draft", f"eagle:{p['head_strid']}"], "kept_ids[1] is '5'; token ids are integers"),
        (gen + ["--draft", f"eagle:{p['head_nokept']}"], "draft_vocab.json lacks kept_ids"),
        (gen + ["--draft", p["draft_vmap"]], "kept_ids[1] is 'x'"),
        # cost files: types and times
        (gen + ["--draft", draft] + cost("verify_str"), "verify is 'fast'; expected a table"),
        (gen + ["--draft", draft] + cost("nan"), "verify.values[0] is 'nan'; times are finite numbers of seconds > 0"),
        (gen + ["--draft", draft] + cost("neg"), "verify.values[0] is '-0.05'; times are finite"),
        (gen + ["--draft", draft] + cost("zero"), "verify.values[0] is '0.0'; times are finite numbers of seconds > 0"),
        (gen + ["--draft", draft] + cost("inf"), "verify.values[0] is 'inf'"),
        (gen + ["--draft", draft] + cost("overhead"), "overhead is '-1.0'; times are finite numbers of seconds >= 0"),
        (gen + ["--draft", draft] + cost("draft_nan"), "draft.per_proposal is 'nan'; expected a finite number"),
        (replay("random", *cost("nan")), "verify.values[0] is 'nan'"),
        (replay("random", *cost("zero")), "verify.values[0] is '0.0'"),
        # trace Parquet files
        (replay("cut", *cost("ok")), f"trace file {trace('cut')} is not a readable Parquet file"),
        (replay("random", *cost("ok")), f"trace file {trace('random')} is not a readable Parquet file"),
        (replay("empty", *cost("ok")), f"trace file {trace('empty')} is not a readable Parquet file (Parquet file size is 0"),
        (replay("foreign", *cost("ok")), "t.parquet: trace file has version ?"),
        # model configs in plan (and an EAGLE head plan would size but the sweep refuses)
        (plan("str"), "plan-str.yaml pairs[0].target: model config "),
        (plan("str"), "hidden_size is '32'; model sizes are integers >= 1"),
        (plan("huge"), "hidden_size is 1e+308; model sizes are integers"),
        (plan("neg"), "hidden_size is -32"),
        (plan("layers0"), "num_hidden_layers is 0"),
        (plan("heads7"), "num_attention_heads 7 does not divide hidden_size 8192"),
        (plan("vocab0"), "vocab_size is 0"),
        (["plan", conf("plan-headq", pairs=[{"target": target, "draft": f"eagle:{p['head_q']}"}])],
         "plan-headq.yaml pairs[0].draft: eagle head"),
        (["plan", conf("plan-headq", pairs=[{"target": target, "draft": f"eagle:{p['head_q']}"}])], q),
        (["plan", conf("plan-head3", pairs=[{"target": target, "draft": f"eagle:{p['head_3']}"}])],
         "num_attention_heads 3 does not divide"),
        # distill
        (distill + ["--out", str(root / "afile" / "sub")], "afile is a file, not a folder"),
        (distill + ["--extra-text", str(root / "binary.txt"), "--out", str(root / "d1")], "is not UTF-8 text"),
        (distill + ["--unroll", "1000", "--steps", "2", "--out", str(root / "d2")], "--unroll must be >= 1 and <= 16"),
        (distill + ["--batch-size", "100000", "--out", str(root / "d3")], "--batch-size must be >= 1 and <= 4096"),
        (distill + ["--max-new-tokens", "1000000", "--out", str(root / "d4")],
         "--max-new-tokens must be >= 1 and <= 8192"),
        (distill + ["--steps", str(10 ** 9), "--out", str(root / "d5")], "--steps must be >= 1 and <= 10000000"),
        (["calibrate", "--target", target, "--draft", "ngram", "--out", str(root / "afile" / "c.json")],
         "afile is not an existing folder: give a JSON file path"),
        (["calibrate", "--target", target, "--draft", "ngram", "--out", str(root)], "is a folder: give a JSON file path"),
        # model folders
        (gen + ["--draft", p["draft_cut"]], "model.safetensors is cut short"),
        (["generate", "--prompt", "x", "--target", p["notok"], "--draft", "ngram"],
         f"model {p['notok']}: the folder has no tokenizer files"),
        (gen + ["--draft", p["notok"]], f"model {p['notok']}: the folder has no tokenizer files"),
        # policy parameters
        (gen + ["--draft", draft, "--policy", "gt:cap=inf"],
         "gt: cap='inf' is not an integer: must be an integer >= 1"),
        (gen + ["--draft", draft, "--policy", "gt:cap=nan"], "gt: cap='nan' is not an integer"),
        (["sweep", conf("capinf", policies=["gt:cap=inf"])], "config policies[0]: gt: cap='inf' is not an integer"),
        # sweep configs: GPUs, names
        (["sweep", conf("gpu15", pairs=pair(num_gpus=1.5))], "config pairs[0].num_gpus: input should be a valid integer"),
        (["sweep", conf("gpu0", pairs=pair(num_gpus=0, device="cuda"))],
         "config pairs[0].num_gpus: is 0 with device cuda"),
        (["sweep", conf("nul", name="a\x00b")], "config name: holds the control character U+0000 at position 1"),
        (["sweep", conf("nl", name="a\nb")], "config name: holds the control character U+000A"),
        (["sweep", conf("bidi", name="abc\u202edcb")], "config name: holds the control character U+202E"),
        (["sweep", conf("long", name="n" * 100_000)], "config name: is 100000 characters long; use at most 200"),
        (["sweep", conf("pnul", pairs=pair(name="t\x00"))], "config pairs[0].name: holds the control character U+0000"),
        (["sweep", conf("pbidi", pairs=pair(name="t\u2066x"))], "config pairs[0].name: holds the control character U+2066"),
        (["sweep", conf("ptab", pairs=pair(name="t\tx"))], "config pairs[0].name: holds the control character U+0009"),
        (["sweep", conf("ls", experiment="a\u2028b")], "config experiment: holds the control character U+2028"),
        (["sweep", conf("loop", output=str(root / "loop"))], "cannot be used (Too many levels of symbolic links)"),
        # sweep preflight: drafter files before MLflow or Ray
        (["sweep", conf("eq", pairs=pair(draft=f"eagle:{p['head_q']}"))], "config pairs[0].draft: eagle head"),
        (["sweep", conf("e3", pairs=pair(draft=f"eagle:{p['head_3']}"))], "config pairs[0].draft: eagle head"),
        (["sweep", conf("ev", pairs=pair(draft=f"eagle:{p['head_strid']}"))], "config pairs[0].draft: "),
        (["sweep", conf("cut", pairs=pair(draft=p["draft_cut"]))], "config pairs[0].draft: "),
        (["sweep", conf("notok", pairs=pair(draft=p["notok"]))], "config pairs[0].draft: model "),
        (["sweep", conf("dry", pairs=pair(target=str(root / "nope"))), "--dry-run"],
         f"config pairs[0].target: model path {root / 'nope'} does not exist"),
        (["sweep", conf("addr"), "--address", f"127.0.0.1:{port}"],
         f"'127.0.0.1:{port}' accepts connections but is not a Ray cluster"),
        # flags: one line, not the usage text
        (gen + ["--seed", "1.5"], "argument --seed: invalid int value: '1.5'"),
        (["calibrate", "--out", str(root / "c.json"), "--context", "x"], "argument --context: invalid int value: 'x'"),
        (["distill", "--unroll", "abc"], "argument --unroll: invalid int value: 'abc'"),
        (["plan"], "the following arguments are required: config"),
        (["replay", str(root)], "the following arguments are required: --policies"),
        (["report", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
        (["nosuch"], "invalid choice: 'nosuch'"),
    ]


def _tree(root: Path) -> set:
    return {str(q.relative_to(root)) for q in root.rglob("*")}


def test_hostile_inputs_battery(inputs, capsys, monkeypatch):
    """Every case: exit 2, one ``specsweep: error:`` line holding the expected text (< 400 characters), no file
    written; a sweep's refusal comes before MLflow or Ray (seconds, not the ~18 s an actor start takes)."""
    from jobs.cli import main

    root, target, draft, p = inputs
    monkeypatch.chdir(root)
    listener = socket.socket()                       # a plain TCP port: accepts connections, never speaks gRPC
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    try:
        cases = cli_cases(root, target, draft, p, listener.getsockname()[1])
        for args, msg in cases:
            before = _tree(root)
            t = time.monotonic()
            code = main(args)
            took = time.monotonic() - t
            err = capsys.readouterr().err
            lines = [ln for ln in err.splitlines() if ln.strip()]
            assert code == 2, (args[:3], err[-600:])
            one = len(lines) == 1 and lines[0].startswith("specsweep: error: ")
            assert one and msg in lines[0], (args[:3], err[-600:])
            assert len(lines[0]) < 500, lines[0][:600]
            assert not _tree(root) - before, (args[:3], _tree(root) - before)
            assert took < 15, (args[:3], took)
    finally:
        listener.close()
    assert len(cases) >= 60


def test_a_50_mb_name_is_refused_without_printing_it():
    for raw, path in (({"name": "n" * 50_000_000}, "name"),
                      ({"pairs": [{"target": "t", "name": "p" * 50_000_000}]}, "pairs[0].name"),
                      ({"dtype_of": "x" * 10_000_000}, "dtype_of")):
        t = time.monotonic()
        with pytest.raises(SpecsweepError) as e:
            parse_config({"name": "x", "pairs": [{"target": "t"}], "policies": ["fixed"], **raw})
        assert str(e.value).startswith(f"config {path}:") and len(str(e.value)) < 300, str(e.value)[:400]
        assert time.monotonic() - t < 5


def test_a_config_file_past_the_size_limit_is_refused(tmp_path):
    from jobs.config import load_config

    path = tmp_path / "big.yaml"
    path.write_text("name: " + "n" * (2 ** 20 + 1) + "\npairs: [{target: t}]\npolicies: [fixed]\n")
    with pytest.raises(SpecsweepError, match="a config is at most 1048576 bytes"):
        load_config(str(path))


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"])
def test_prompt_file_lines_end_at_newline_only(tmp_path, sep):
    from jobs.batch_generate import read_prompt_file

    path = tmp_path / "prompts.txt"
    path.write_bytes(f"one{sep}still one\r\ntwo\n\n".encode())
    assert read_prompt_file(str(path)) == [(1, f"one{sep}still one"), (2, "two")]


def test_policy_parameters_are_finite():
    from policies.registry import build

    for spec in ("gt:cap=inf", "gt:cap=-inf", "gt:cap=nan", "gt:cap=1.5", "oracle:cap=1e400",
                 "ema-steps:up_hysteresis=nan", "ema-steps:down_hysteresis=inf"):
        with pytest.raises(SpecsweepError, match="is not an integer|is not a finite number"):
            build(spec, 4)
    assert build("gt:cap=8.0", 4).cap == 8


def test_cost_times_are_checked_where_a_model_is_read():
    from policies.costs import CostModel

    assert CostModel.from_dict(_cost()).verify(1) == pytest.approx(0.05)
    for bad in ({"values": [NAN, 1, 1]}, {"values": [1, 1]}, {"verify": {"knots": [2, 1], "values": [1, 1]}},
                {"t_verify": None}, {"batch": {"2": {"knots": [1], "values": [0.1], "draft": -0.01}}},
                {"batch": {"2": {"knots": [1], "values": [0.1], "draft": 0, "overhead": NAN}}},
                {"batch": {"2": {"knots": [1, 2], "values": [0.1, 0.2], "raw": [-1.0, 0.2], "draft": 0}}},
                {"batch": {"2": {"knots": [1, 2], "values": [0.1, 0.2], "raw": [0.1], "draft": 0}}},
                {"raw_verify": {"1": NAN}}):
        d = _cost(**bad)
        if "t_verify" in bad:                       # the curve stored before the format: t_draft, t_verify
            d = {"t_draft": 0.01, "t_verify": {"1": -0.05}}
        with pytest.raises(SpecsweepError):
            CostModel.from_dict(d)
    lookup = _cost(batch={"2": {"knots": [1], "values": [0.1], "draft": 0, "draft_base": 0, "overhead": 0.001}})
    assert CostModel.from_dict(lookup).batch_draft(2, 3) == 0.0     # a drafter whose levels cost nothing measurable
    fitted = {**_cost(values=[-0.001, 0.08, 0.09]), "n_steps": 40}     # a fitted table's knots are coefficients
    assert math.isfinite(CostModel.from_dict(fitted).verify(1))


def test_model_config_rule():
    from actors.loading.model_files import check_model_config

    ok = {"hidden_size": 64, "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": 2,
          "intermediate_size": 128, "vocab_size": 100}
    assert check_model_config(ok, "c")["hidden_size"] == 64
    assert check_model_config({"n_embd": 32, "n_head": 4, "n_inner": None}, "gpt2")["num_attention_heads"] == 4
    for change, msg in (({"num_key_value_heads": 3}, "does not divide num_attention_heads"),
                        ({"hidden_size": True}, "hidden_size is True"), ({"vocab_size": 2 ** 40}, "<= 16777216"),
                        ({"num_attention_heads": 7}, "does not divide hidden_size")):
        with pytest.raises(SpecsweepError, match=msg):
            check_model_config({**ok, **change}, "c")
    with pytest.raises(SpecsweepError, match="vocab_size is missing"):
        check_model_config({"hidden_size": 8}, "c", ("vocab_size",))


def test_a_pickled_head_of_another_shape_is_one_line(inputs, tmp_path):
    """A ``pytorch_model.bin`` head's shapes are known only once it is read: the size mismatch is still one line
    naming the tensor and both shapes."""
    import torch
    from safetensors.torch import load_file

    from actors.drafting.eagle_head import load_head
    from actors.loading.models import ModelSpec, load_model

    _, target, _, p = inputs
    folder = tmp_path / "binhead"
    folder.mkdir()
    (folder / "config.json").write_text((Path(p["head"]) / "config.json").read_text())
    state = load_file(str(Path(p["head"]) / "model.safetensors"))
    key = "layers.0.self_attn.q_proj.weight"
    torch.save({**state, key: state[key][:16].clone()}, folder / "pytorch_model.bin")
    with pytest.raises(SpecsweepError) as e:
        load_head(folder, load_model(ModelSpec(target)))
    msg = str(e.value)
    assert "\n" not in msg and key in msg and "[16, 32]" in msg and "[32, 32]" in msg, msg


def test_the_sweep_module_gives_one_line_for_a_bad_flag(capsys):
    from jobs.sweep.command import main

    assert main(["c.yaml", "--backend", "gpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specsweep: error: argument --backend: invalid choice"), err


@pytest.mark.slow
def test_a_real_ray_cluster_answers_the_address_probe():
    """The probe that refuses a port that is not Ray lets a real GCS through (starts a local cluster: slow tier)."""
    ray = pytest.importorskip("ray")
    from cluster.ray_setup import check_address, connect

    if ray.is_initialized():
        ray.shutdown()
    connect(None, num_cpus=1, object_store_mb=100)
    try:
        t = time.monotonic()
        check_address(ray.get_runtime_context().gcs_address)
        assert time.monotonic() - t < 2
    finally:
        ray.shutdown()
