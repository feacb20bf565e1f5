"""Model loading options, quantization, and the n-gram drafter's rule."""
import pytest

from actors.drafting.drafters import NgramDrafter
from actors.loading.models import ModelSpec, load_model
from policies.errors import SpecsweepError
from actors.loading.tiny_pair import save_tiny_pair


def test_ngram_most_recent_match_and_overlapping_copy():
    d = NgramDrafter(n_max=2, n_min=1)
    # last bigram (1, 2) occurred at 0 and 4: the most recent (4) continues with 9
    assert d.continuation([1, 2, 3, 0, 1, 2, 9, 5, 1, 2], 3) == [9, 5, 1]
    # a match running into the tail keeps copying (periodic continuation)
    assert d.continuation([7, 7, 7], 4) == [7, 7, 7, 7]
    assert d.continuation([1, 2, 3], 3) == []


def test_load_local_folder_with_options(tmp_path):
    target, _ = save_tiny_pair(tmp_path)
    m = load_model(ModelSpec(target, dtype="bfloat16", device="cpu"))
    assert str(next(m.parameters()).dtype) == "torch.bfloat16" and not m.training
    q = load_model(ModelSpec(target, device="cpu", quantization="int8", quant_backend="optimum-quanto"))
    assert "QLinear" in type(q.model.layers[0].mlp.up_proj).__name__


@pytest.mark.parametrize("kw,msg", [
    ({"name": ""}, "model name is empty"), ({"name": "x", "dtype": "fp8"}, "dtype"),
    ({"name": "x", "quantization": "int3"}, "quantization"), ({"name": "x", "device": "tpu"}, "device"),
])
def test_bad_model_specs(kw, msg):
    with pytest.raises(SpecsweepError, match=msg):
        ModelSpec(**kw)
