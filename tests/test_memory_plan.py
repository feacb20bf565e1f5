"""`specsweep plan` and roofline what-if costs: arithmetic on config.json files, checked against published sizes."""
import json

import pytest
import yaml

from actors.plan.gpus import GB, GPUS, gpu
from actors.plan.memory_plan import REFERENCE, WORKSPACE_BYTES, model_plan
from actors.plan.roofline import OVERHEAD_PER_LAYER, parse, roofline_cost_model
from jobs.cli import main
from policies.errors import SpecsweepError

L70, L8, L1 = "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"


@pytest.mark.parametrize("name, quant, published_gb", [
    (L70, None, 141.1),     # 70.6 B parameters × 2 bytes
    (L70, "int4", 40.0),    # int4 weight-only checkpoints of it: 35–40 GB
    (L8, None, 16.06),      # 8.03 B × 2
    (L1, None, 2.47),       # 1.24 B × 2 (tied embeddings)
])
def test_reference_sizes_within_five_percent(name, quant, published_gb):
    plan = model_plan(name, "bfloat16", quant, positions=1)
    assert plan.weight_bytes / GB == pytest.approx(published_gb, rel=0.05)
    assert "reference config" in plan.source


def test_kv_cache_and_the_eagle_head_counted_by_their_rules():
    p = model_plan(L70, "bfloat16", None, positions=4096, batch=2)
    assert p.kv_bytes_per_token == 2 * 80 * 8 * 128 * 2          # K and V × layers × kv heads × head_dim × bf16
    assert p.kv_bytes == p.kv_bytes_per_token * 4096 * 2
    head = model_plan("smollm2-135m-eagle", "float32", None, positions=1)
    assert head.params["embeddings"] == 0 and head.params["fusion"] == 2 * 576 * 576   # the target's embeddings
    assert head.total_params == pytest.approx(4.2e6, rel=0.01)


def _config(tmp_path, pairs, name="plan"):
    cfg = {"name": name, "output": str(tmp_path / "out"), "tracking_uri": f"sqlite:///{tmp_path}/m.db", "pairs": pairs,
           "dataset": {"source": "sample", "limit_per_category": 1}, "policies": ["fixed"], "gammas": [1]}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_plan_cli_prints_the_fit_per_gpu_kind(capsys):
    assert main(["plan", "jobs/configs/llama70b_int4.yaml"]) == 0
    out = capsys.readouterr().out
    assert "pair llama70b-int4-8b" in out and "weights 40.57 GB (int4" in out
    assert "H100 80 GB: fits (fewest 1)" in out and "A100 40 GB: no (fewest 2)" in out
    assert main(["plan", "jobs/configs/llama70b_int4.yaml", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)
    assert [p["fits"]["h100"] for p in plans] == [True, True]
    assert plans[0]["per_gpu_bytes"] > plans[0]["target"]["weight_bytes"] + WORKSPACE_BYTES


def test_a_pair_that_fits_no_gpu_is_refused_in_one_line(tmp_path, capsys):
    path = _config(tmp_path, [{"name": "big", "target": L70, "draft": L8, "dtype": "bfloat16", "num_gpus": 1,
                               "device": "cuda"}])
    assert main(["plan", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pair big needs" in err[0] and "H100 80 GB: 3" in err[0] and "int4" in err[0], err


def test_sweep_preflight_refuses_the_same_before_ray_starts(tmp_path, capsys):
    folder = tmp_path / "llama70b"                      # config only: preflight needs no weights for this check
    folder.mkdir()
    (folder / "config.json").write_text((REFERENCE / "llama-3.1-70b-instruct" / "config.json").read_text())
    path = _config(tmp_path, [{"name": "big", "target": str(folder), "dtype": "bfloat16", "num_gpus": 1,
                               "device": "cuda"}])
    assert main(["sweep", path, "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pairs[0]: pair big needs" in err[0], err
    assert not (tmp_path / "out").exists()


def test_unknown_model_and_gpu_kind_are_one_line_errors():
    with pytest.raises(SpecsweepError, match="no config.json for model 'nobody/nothing'.*reference configs"):
        model_plan("nobody/nothing", "bfloat16", None, positions=1)
    with pytest.raises(SpecsweepError, match="unknown GPU kind 'v100': valid are h100, h200"):
        gpu("v100")


def test_roofline_spec_parsing():
    assert parse("roofline:H100") == ("h100", None)
    assert parse("roofline:a100-40:int4") == ("a100-40", "int4")
    assert parse("runs/x/actors.json") is None and parse(None) is None
    with pytest.raises(SpecsweepError, match="quantization 'q3'"):
        parse("roofline:l4:q3")


def test_roofline_verify_time_is_bytes_over_bandwidth_at_batch_one():
    m = roofline_cost_model("h200", "lmsys/vicuna-7b-v1.3", "double7/vicuna-68m")
    weights = model_plan("lmsys/vicuna-7b-v1.3", "bfloat16", None, 1).weight_bytes
    assert weights / GB == pytest.approx(13.48, abs=0.01)            # the 7B shape bench.gpu measured
    assert m.verify(1) == pytest.approx(weights / GPUS["h200"].bandwidth + 32 * OVERHEAD_PER_LAYER)
    assert m.verify(64) / m.verify(1) < 1.01                         # memory-bound: 64 tokens cost what one does
    assert 0 < m.c < 0.1 and m.device == "roofline:h200" and m.label == "what-if (roofline h200)"
    assert m.verify_time(1, 2048) > m.verify(1)                      # the KV read grows with the context


def test_roofline_turns_compute_bound_for_a_quantized_70b_at_long_verifies():
    m = roofline_cost_model("h100", L70, L8, quantization="int4")
    assert m.verify(8) / m.verify(1) < 1.01
    flops = 2 * (68.45e9 + 1.05e9) * 256 / 989e12                       # linear + output head, 256 tokens
    assert m.verify(256) == pytest.approx(flops + 80 * OVERHEAD_PER_LAYER, rel=0.02)
    assert m.verify(256) / m.verify(1) > 2.5
    assert roofline_cost_model("h100", L70, "ngram").t_draft == 0.0
