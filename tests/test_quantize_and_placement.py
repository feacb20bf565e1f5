"""Quantize-on-load (torchao, optimum-quanto) stays lossless; the multi-GPU memory planner on hand-worked sizes."""
import pytest
import torch

from actors.drafting.drafters import ModelDrafter
from actors.core.engine import SpecEngine
from actors.loading.models import ModelSpec, load_model
from actors.loading.placement import GB, Shape, kv_bytes, max_memory_arg, plan_max_memory, weight_bytes
from policies.errors import SpecsweepError
from policies.registry import build
from actors.loading.tiny_pair import save_tiny_pair

LLAMA2_7B = Shape(hidden=4096, intermediate=11008, layers=32, heads=32, kv_heads=32, vocab=32000)
LLAMA2_70B = Shape(hidden=8192, intermediate=28672, layers=80, heads=64, kv_heads=8, vocab=32000)


# quanto's int4 kernels are compiled at their first use on a machine (about a minute on 2 cores): the slow tier
@pytest.mark.parametrize("quant,backend", [("int8", "torchao"), ("int8", "optimum-quanto"),
                                           pytest.param("int4", "optimum-quanto", marks=pytest.mark.slow)])
def test_quantized_on_load_is_lossless(tmp_path, quant, backend):
    pytest.importorskip("torchao" if backend == "torchao" else "optimum.quanto")
    target_dir, draft_dir = save_tiny_pair(tmp_path)
    target = load_model(ModelSpec(target_dir, device="cpu", quantization=quant, quant_backend=backend))
    linear = target.model.layers[0].mlp.up_proj
    if backend == "torchao":
        assert type(linear.weight).__name__ != "Parameter" or type(linear.weight.data).__name__ != "Tensor"
    else:
        assert "QLinear" in type(linear).__name__
    draft = load_model(ModelSpec(draft_dir, device="cpu"))
    prompt = [5, 17, 30, 41, 17, 30]
    ar = SpecEngine(target).generate(prompt, build("ar"), max_new_tokens=24)
    for engine in ("eager", "static"):
        out = SpecEngine(target, ModelDrafter(draft), engine=engine, capacity=128).generate(
            prompt, build("fixed", 4), max_new_tokens=24)
        assert out.token_ids == ar.token_ids, engine


def test_quanto_int4_kernels_are_built_once_with_a_line(tmp_path, monkeypatch, capsys):
    pytest.importorskip("optimum.quanto")
    import optimum.quanto.library.extensions as quanto_ext

    from actors.loading.models import build_quanto_kernels

    class Kernels:
        build_directory, builds = str(tmp_path), 0

        @property
        def lib(self):
            Kernels.builds += 1
            (tmp_path / "pytorch_version.txt").write_text(torch.__version__)
            return object()

    monkeypatch.setattr(quanto_ext, "get_extension", lambda name: Kernels())
    monkeypatch.setattr(quanto_ext, "is_extension_available", lambda name: name == "quanto_cpp")
    build_quanto_kernels(torch.device("cpu"))
    assert Kernels.builds == 1 and "builds its int4 kernels (quanto_cpp) once" in capsys.readouterr().err
    build_quanto_kernels(torch.device("cpu"))                    # built for this torch: nothing to say or do
    assert Kernels.builds == 1 and capsys.readouterr().err == ""
    (tmp_path / "pytorch_version.txt").write_text("0.0.0")       # built for another torch: quanto rebuilds
    build_quanto_kernels(torch.device("cpu"))
    assert Kernels.builds == 2
    build_quanto_kernels(torch.device("mps"))                    # no kernels of ours to build there
    assert Kernels.builds == 2


def test_torchao_int8_changes_the_weights(tmp_path):
    """Guard against a no-op: the quantized model's logits differ (slightly) from the float model's."""
    pytest.importorskip("torchao")
    target_dir, _ = save_tiny_pair(tmp_path)
    full = load_model(ModelSpec(target_dir, device="cpu"))
    q = load_model(ModelSpec(target_dir, device="cpu", quantization="int8"))
    ids = torch.tensor([[5, 17, 30, 41]])
    with torch.no_grad():
        a, b = full(input_ids=ids).logits, q(input_ids=ids).logits
    assert not torch.equal(a, b) and torch.allclose(a, b, atol=0.2)


@pytest.mark.parametrize("kw,msg", [
    ({"quantization": "fp8", "quant_backend": "optimum-quanto"}, "fp8 needs quant_backend torchao"),
    ({"quant_backend": "bnb"}, "quant_backend 'bnb' is not valid"),
    ({"num_gpus": 0}, "num_gpus 0 is not valid"),
    ({"num_gpus": "2"}, "num_gpus '2' is not valid"),
])
def test_bad_quantization_and_gpu_specs(kw, msg):
    with pytest.raises(SpecsweepError, match=msg):
        ModelSpec("x", **kw)


def test_int4_torchao_on_cpu_is_refused_in_one_line(tmp_path):
    target_dir, _ = save_tiny_pair(tmp_path)
    with pytest.raises(SpecsweepError, match="need a CUDA GPU"):
        load_model(ModelSpec(target_dir, device="cpu", quantization="int4"))


def test_sharding_needs_gpus():
    with pytest.raises(SpecsweepError, match="num_gpus 2 needs CUDA GPUs"):
        load_model(ModelSpec("smollm2-135m-draft", device="cpu", num_gpus=2))


def test_weight_and_kv_sizes_match_the_published_parameter_counts():
    # Llama-2-7B: 6.74 B parameters -> 13.48 GB in bf16; Llama-2-70B: 68.98 B -> 137.95 GB
    assert weight_bytes(LLAMA2_7B) == pytest.approx(13.48 * GB, rel=2e-3)
    assert weight_bytes(LLAMA2_70B) == pytest.approx(137.95 * GB, rel=2e-3)
    # int8: 68.45 B linear weights at ~1 B + 1.05 GB bf16 embeddings/head
    assert weight_bytes(LLAMA2_70B, quantization="int8") == pytest.approx(69.54 * GB, rel=2e-3)
    assert weight_bytes(LLAMA2_70B, quantization="int4") == pytest.approx(37.42 * GB, rel=2e-3)
    # KV: 2 × 80 layers × 8 kv heads × 128 × 4096 tokens × 2 B = 1.342 GB
    assert kv_bytes(LLAMA2_70B, 4096) == 2 * 80 * 8 * 128 * 4096 * 2
    assert kv_bytes(LLAMA2_7B, 4096) == 2 * 32 * 32 * 128 * 4096 * 2


H100 = 80 * GB
A100_40 = 40 * GB
DRAFT = int(0.136 * GB)       # a 68M-parameter bf16 draft


def test_plan_one_gpu():
    kv = kv_bytes(LLAMA2_7B, 4096)
    caps = plan_max_memory(weight_bytes(LLAMA2_7B), 1, H100, kv, DRAFT)
    # 80 × 0.95 − 2.147 − 0.136 = 73.717 GB
    assert caps == {0: int(76 * GB - kv - DRAFT)}
    assert caps[0] == pytest.approx(73.717 * GB, rel=1e-4)
    plan_max_memory(weight_bytes(LLAMA2_70B, quantization="int4"), 1, H100, kv_bytes(LLAMA2_70B, 4096), DRAFT)
    plan_max_memory(weight_bytes(LLAMA2_70B, quantization="int8"), 1, H100, kv_bytes(LLAMA2_70B, 4096), DRAFT)


def test_plan_refuses_what_cannot_fit():
    with pytest.raises(SpecsweepError, match="raise num_gpus or quantize"):
        plan_max_memory(weight_bytes(LLAMA2_70B), 1, H100, kv_bytes(LLAMA2_70B, 4096), DRAFT)
    with pytest.raises(SpecsweepError, match="1 GPU\\(s\\) of 40 GB"):
        plan_max_memory(weight_bytes(LLAMA2_70B, quantization="int8"), 1, A100_40, kv_bytes(LLAMA2_70B, 4096), DRAFT)


def test_plan_two_and_eight_gpus():
    kv = kv_bytes(LLAMA2_70B, 4096)                  # 1.342 GB, half on each GPU
    caps = plan_max_memory(weight_bytes(LLAMA2_70B), 2, H100, kv, DRAFT)
    assert caps[0] == int(76 * GB - kv / 2 - DRAFT) and caps[1] == int(76 * GB - kv / 2)
    assert caps[0] == pytest.approx(75.193 * GB, rel=1e-4) and sum(caps.values()) > weight_bytes(LLAMA2_70B)
    caps = plan_max_memory(weight_bytes(LLAMA2_70B, quantization="int8"), 2, A100_40, kv, DRAFT, draft_gpu=1)
    assert caps[1] < caps[0]                         # the draft sits on GPU 1
    caps = plan_max_memory(weight_bytes(LLAMA2_70B), 8, H100, kv, DRAFT)
    assert len(caps) == 8 and caps[3] == int(76 * GB - kv / 8)
    assert max_memory_arg({0: 2 ** 30})[0] == "1024MiB"
    with pytest.raises(SpecsweepError, match="draft_gpu 2"):
        plan_max_memory(1, 2, H100, draft_gpu=2)


def test_the_caps_spread_a_7b_target_over_two_gpus_as_from_pretrained_places_it():
    """Sharding as far as a CPU can test it: our per-GPU caps, handed to the placer ``from_pretrained(device_map="auto",
    max_memory=…)`` runs (accelerate's ``infer_auto_device_map``), put a Llama-2-7B shape (built on the meta device:
    no memory) on both GPUs and nothing on the CPU or disk; the decoder layers stay in order, GPU 0 first."""
    from accelerate import infer_auto_device_map, init_empty_weights
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                      num_key_value_heads=32, vocab_size=32000)
    with init_empty_weights():
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    caps = plan_max_memory(weight_bytes(LLAMA2_7B), 2, 10 * GB, kv_bytes(LLAMA2_7B, 2048))
    where = infer_auto_device_map(model, max_memory=max_memory_arg(caps), no_split_module_classes=["LlamaDecoderLayer"])
    assert set(where.values()) == {0, 1}                       # both GPUs, no CPU or disk offload
    layers = [where[f"model.layers.{i}"] for i in range(32) if f"model.layers.{i}" in where]
    assert layers == sorted(layers) and layers[0] == 0 and layers[-1] == 1
    with pytest.raises(SpecsweepError, match="raise num_gpus or quantize"):     # one GPU of 10 GB cannot hold it
        plan_max_memory(weight_bytes(LLAMA2_7B), 1, 10 * GB, kv_bytes(LLAMA2_7B, 2048))
