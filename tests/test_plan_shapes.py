"""Plans from config.json: a config's own ``head_dim`` sizes attention and the KV cache, and a sweep is planned at its
largest batch size."""
import json
import math
from types import SimpleNamespace

import pytest
import yaml

from actors.drafting.head_files import expected_shapes
from actors.loading.placement import Shape, kv_bytes
from actors.plan.gpus import GPUS
from actors.plan.memory_plan import REFERENCE, model_plan
from actors.plan.roofline import roofline_cost_model
from jobs.cli import main
from jobs.config.lists import load_configs
from jobs.sweep.plan import describe_plan

L8, L1 = "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"
QWEN3_06B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
             "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
             "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": True, "max_position_embeddings": 40960,
             "torch_dtype": "bfloat16"}
QWEN3_KV_PER_POSITION = 2 * 28 * 8 * 128 * 2          # K and V × layers × kv heads × head_dim × bf16 = 114,688 B


def _qwen3_folder(tmp_path):
    folder = tmp_path / "qwen3-0.6b"                    # config only: a plan reads no weights
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN3_06B))
    return str(folder)


def _config(tmp_path, pairs, batch_sizes=None, name="plan"):
    cfg = {"name": name, "output": str(tmp_path / "out"), "tracking_uri": f"sqlite:///{tmp_path}/m.db", "pairs": pairs,
           "dataset": {"source": "sample", "limit_per_category": 1}, "policies": ["fixed"], "gammas": [1]}
    if batch_sizes:
        cfg["batch_sizes"] = batch_sizes
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_head_dim_comes_from_the_config_when_it_names_one():
    sizes = dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, vocab_size=151936)
    assert Shape.of(SimpleNamespace(**sizes, head_dim=128)).head_dim == 128
    assert Shape.of(SimpleNamespace(**sizes)).head_dim == 64                 # no head_dim: hidden // heads
    assert Shape.of(SimpleNamespace(**sizes, head_dim=None)).head_dim == 64
    assert Shape(hidden=4096, intermediate=1, layers=1, heads=32, kv_heads=8, vocab=1).head_dim == 128


def test_attention_params_agree_with_the_head_file_rule():
    """q/o are heads·head_dim wide and k/v kv_heads·head_dim, as ``expected_shapes`` checks an EAGLE head's tensors."""
    sizes = dict(hidden_size=1024, intermediate_size=3072, num_attention_heads=16, num_key_value_heads=8, head_dim=128)
    shapes = expected_shapes(sizes)
    attention = sum(math.prod(shapes[f"layers.0.self_attn.{p}_proj.weight"]) for p in "qkvo")
    shape = Shape(hidden=1024, intermediate=3072, layers=1, heads=16, kv_heads=8, vocab=1, head_dim=128)
    assert shape.attention_params_per_layer() == attention == 2 * 1024 * 16 * 128 + 2 * 1024 * 8 * 128


def test_qwen3_plan_counts_its_head_dim(tmp_path):
    p = model_plan(_qwen3_folder(tmp_path), "bfloat16", None, positions=4096)
    assert p.kv_bytes_per_token == QWEN3_KV_PER_POSITION == 114_688
    assert p.kv_bytes == QWEN3_KV_PER_POSITION * 4096
    assert p.params["attention"] == 28 * (2 * 1024 * 2048 + 2 * 1024 * 1024)
    non_embedding = p.total_params - p.params["embeddings"]
    assert non_embedding / 1e9 == pytest.approx(0.44, rel=0.01)              # Qwen3-0.6B: 0.44 B non-embedding
    assert p.total_params / 1e9 == pytest.approx(0.596, rel=0.01)
    assert kv_bytes(Shape.of(SimpleNamespace(**QWEN3_06B)), 1) == QWEN3_KV_PER_POSITION


def test_qwen3_plan_cli_prints_the_kv_cache_of_its_head_dim(tmp_path, capsys):
    path = _config(tmp_path, [{"name": "qwen3", "target": _qwen3_folder(tmp_path), "draft": None,
                               "dtype": "bfloat16", "num_gpus": 1, "device": "cuda", "max_context": 4096}])
    assert main(["plan", path]) == 0
    out = capsys.readouterr().out
    assert "KV cache 114.7 kB/position × 4096 positions × 1 row(s)" in out, out


def test_roofline_attention_terms_use_the_config_head_dim(tmp_path):
    g = GPUS["h100"]
    model = roofline_cost_model("h100", _qwen3_folder(tmp_path), None)
    assert model.table["per_kctx"] == pytest.approx(1000.0 * QWEN3_KV_PER_POSITION / g.bandwidth)
    assert model.table["per_token_kctx"] == pytest.approx(1000.0 * 4.0 * 28 * 16 * 128 / g.bf16_flops)


def _llama_8b_1b(tmp_path, batch_sizes):
    return _config(tmp_path, [{"name": "l8-l1", "target": L8, "draft": L1, "dtype": "bfloat16", "num_gpus": 1,
                               "device": "cuda", "max_context": 8192}], batch_sizes, name=f"b{max(batch_sizes)}")


def test_plan_sizes_the_cache_at_the_largest_batch(tmp_path, capsys):
    assert main(["plan", _llama_8b_1b(tmp_path, [1]), "--json"]) == 0
    [one] = json.loads(capsys.readouterr().out)
    assert one["fits"]["l4"] and one.get("batch", 1) == 1              # ~21 GB at one row
    path = _llama_8b_1b(tmp_path, [1, 64])
    assert main(["plan", path, "--json"]) == 0
    [plan] = json.loads(capsys.readouterr().out)
    assert not plan["fits"]["l4"] and not plan["fits"]["h100"] and plan["fits"]["h200"], plan["fits"]
    assert plan["target"]["kv_bytes"] == 2 * 32 * 8 * 128 * 2 * 8192 * 64        # 64 rows of 8192 positions
    assert plan["batch"] == 64
    assert main(["plan", path]) == 0
    out = capsys.readouterr().out
    assert "num_gpus 1, batch 64" in out and "× 8192 positions × 64 row(s)" in out, out
    assert "L4 24 GB: no" in out
    text = describe_plan(load_configs(path)[0], [], [])
    assert "on GPU 0 at batch 64; fits h200 (" in text, text


def test_sweep_preflight_refuses_a_batch_that_fits_no_gpu(tmp_path, capsys):
    folder = tmp_path / "llama8b"                        # config only: preflight needs no weights for this check
    folder.mkdir()
    (folder / "config.json").write_text((REFERENCE / "llama-3.1-8b-instruct" / "config.json").read_text())
    path = _config(tmp_path, [{"name": "big", "target": str(folder), "draft": None, "dtype": "bfloat16",
                               "num_gpus": 1, "device": "cuda", "max_context": 8192}], [1, 128])
    assert main(["sweep", path, "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pairs[0]: pair big needs" in err[0] and "at batch 128" in err[0], err
    assert "lower batch_sizes" in err[0], err
    assert not (tmp_path / "out").exists()


def test_an_eagle3_heads_wider_attention_inputs_count_the_config_head_dim():
    """An EAGLE-3 head's q, k and v read 2h inputs: beyond a decoder layer's count, h more rows of each projection,
    q being heads · head_dim wide (not h) when the config names its head_dim."""
    from actors.drafter_kinds.eagle3 import _plan_params

    shape = Shape(hidden=1024, intermediate=3072, layers=1, heads=16, kv_heads=8, vocab=1000, head_dim=128)
    params = {"attention": 0, "norms": 0}
    _plan_params(params, shape, {"vocab_size": 1000, "draft_vocab_size": 100})
    assert params["attention"] == 1024 * 16 * 128 + 2 * 1024 * 8 * 128
