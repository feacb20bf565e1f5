"""A model folder's files checked without loading a weight: sizes in config.json, safetensors headers, tokenizer
files and reduced-vocabulary maps. Every refusal is one line naming the file, the field, what it holds and what is
valid.

Rules (one checker each, used by ``specsweep plan``, the sweep's preflight and model/head loading):

* **sizes** (:func:`check_model_config`): every size a config names (hidden size, layers, heads, KV heads, head
  dim, intermediate size, vocabulary) is an integer in [1, :data:`MAX_SIZE`], the positions in
  [1, :data:`MAX_POSITIONS`]; the attention heads divide the hidden size and the KV heads divide the attention heads.
* **weights** (:func:`safetensors_shapes`): a ``.safetensors`` file's header is a JSON table of tensors whose data
  ends within the file, so a file cut short is refused before anything maps it.
* **tokenizer** (:func:`check_tokenizer_files`): a model folder holds at least one of :data:`TOKENIZER_FILES`.
* **reduced vocabulary** (:func:`read_kept_ids`): ``{"kept_ids": [...]}`` lists distinct integer token ids inside
  the vocabulary (``vocab_map.json`` of a draft also names its ``full_vocab_size``).
"""
from __future__ import annotations

import json
from pathlib import Path

from policies.errors import SpecsweepError

MAX_SIZE = 2 ** 24
MAX_POSITIONS = 2 ** 31 - 1               # context lengths run far past the other sizes
SIZE_KEYS = {"hidden_size": ("hidden_size", "n_embd", "d_model"),
             "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers"),
             "num_attention_heads": ("num_attention_heads", "n_head", "num_heads"),
             "num_key_value_heads": ("num_key_value_heads",),
             "head_dim": ("head_dim",),
             "intermediate_size": ("intermediate_size", "n_inner", "ffn_dim"),
             "vocab_size": ("vocab_size",),
             "max_position_embeddings": ("max_position_embeddings", "n_positions")}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model",
                   "sentencepiece.bpe.model")
MAX_HEADER_BYTES = 100 * 2 ** 20          # safetensors' own limit on the JSON header


def clip(value, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a hostile value is never printed whole)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def config_sizes(config: dict) -> dict[str, object]:
    """The sizes a config names, by their Llama-style name (GPT-2's ``n_embd`` read as ``hidden_size``, …);
    absent and null sizes are left out."""
    out = {}
    for key, names in SIZE_KEYS.items():
        for name in names:
            if config.get(name) is not None:
                out[key] = config[name]
                break
    return out


def check_model_config(config, where: str, required: tuple[str, ...] = ()) -> dict[str, int]:
    """The sizes of ``config`` (a parsed config.json) when they follow the module's rule; one line naming ``where``
    and the field otherwise. ``required`` sizes must be present. A multimodal config's ``text_config`` is read."""
    if not isinstance(config, dict):
        raise SpecsweepError(f"{where}: expected a JSON object of model settings, got {type(config).__name__}")
    if isinstance(config.get("text_config"), dict):
        config = config["text_config"]
    sizes = config_sizes(config)
    for key in required:
        if key not in sizes:
            raise SpecsweepError(f"{where}: {key} is missing; a model config names its sizes as integers >= 1")
    for key, v in sizes.items():
        most = MAX_POSITIONS if key == "max_position_embeddings" else MAX_SIZE
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= most:
            raise SpecsweepError(f"{where}: {key} is {clip(v)}; model sizes are integers >= 1 and <= {most}")
    hidden, heads, kv = sizes.get("hidden_size"), sizes.get("num_attention_heads"), sizes.get("num_key_value_heads")
    if hidden and heads and hidden % heads:
        raise SpecsweepError(f"{where}: num_attention_heads {heads} does not divide hidden_size {hidden}; the heads "
                             "split the hidden size evenly")
    if heads and kv and heads % kv:
        raise SpecsweepError(f"{where}: num_key_value_heads {kv} does not divide num_attention_heads {heads}; "
                             "grouped-query attention shares each KV head among a whole number of heads")
    return sizes


def read_json(path: Path, what: str):
    """The JSON in ``path``; one line naming the file when it cannot be read or parsed."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise SpecsweepError(f"{path} ({what}) is unreadable or not valid JSON ({type(e).__name__})") from None


def read_model_config(folder: Path, where: str, required: tuple[str, ...] = ()) -> tuple[dict, dict[str, int]]:
    """(config.json of ``folder``, its checked sizes)."""
    config = read_json(Path(folder) / "config.json", "model config")
    return config, check_model_config(config, f"{where}: {Path(folder) / 'config.json'}", required)


def safetensors_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor name → shape from a ``.safetensors`` header, checked against the file's length (module rule)."""
    path = Path(path)
    bad = f"{path} is not a readable safetensors file"
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            if n < 2 or n > min(size - 8, MAX_HEADER_BYTES):
                raise SpecsweepError(f"{bad}: {size} bytes, too short for the header it announces (cut short?); "
                                     "copy or download it again")
            header = json.loads(f.read(n))
    except SpecsweepError:
        raise
    except OSError as e:
        raise SpecsweepError(f"{bad} ({e.strerror or type(e).__name__})") from None
    except (ValueError, RecursionError):
        raise SpecsweepError(f"{bad}: its header is not JSON; copy or download it again") from None
    if not isinstance(header, dict):
        raise SpecsweepError(f"{bad}: its header is not a table of tensors")
    shapes, end = {}, 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            shapes[name] = tuple(int(x) for x in entry["shape"])
            end = max(end, int(entry["data_offsets"][1]))
            if any(x < 0 for x in shapes[name]):
                raise ValueError("a negative dimension")
        except (TypeError, KeyError, IndexError, ValueError, OverflowError):
            raise SpecsweepError(f"{bad}: the header entry of {clip(name)} has no shape and data offsets") from None
    if 8 + n + end > size:
        raise SpecsweepError(f"{path} is cut short: it holds {size} bytes but its header describes {8 + n + end}; "
                             "copy or download it again")
    return shapes


def check_weight_files(folder: Path) -> None:
    """Every ``.safetensors`` file of ``folder`` passes :func:`safetensors_shapes`."""
    for path in sorted(Path(folder).glob("*.safetensors")):
        safetensors_shapes(path)


def check_tokenizer_files(folder: Path, where: str) -> None:
    """Refuse a model folder without a tokenizer (module rule)."""
    folder = Path(folder)
    if any((folder / name).is_file() for name in TOKENIZER_FILES) or any(folder.glob("*.tiktoken")):
        return
    raise SpecsweepError(f"{where}: the folder has no tokenizer files (one of {', '.join(TOKENIZER_FILES)}); "
                         "save the model's tokenizer beside its weights")


def read_kept_ids(path: Path, vocab: int | None = None, full_size: bool = False) -> list[int]:
    """The ``kept_ids`` of a reduced-vocabulary file (module rule), each below ``vocab`` when given; with
    ``full_size`` the file's ``full_vocab_size`` bounds them too."""
    d = read_json(path, "reduced vocabulary")
    if not isinstance(d, dict) or "kept_ids" not in d:
        raise SpecsweepError(f"{path} lacks kept_ids: expected {{\"kept_ids\": [token ids, …]}}")
    kept = d["kept_ids"]
    if not isinstance(kept, list) or not kept:
        raise SpecsweepError(f"{path}: kept_ids is {clip(kept)}; expected a non-empty list of integer token ids")
    for i, t in enumerate(kept):
        if isinstance(t, bool) or not isinstance(t, int):
            raise SpecsweepError(f"{path}: kept_ids[{i}] is {clip(t)}; token ids are integers >= 0")
    if full_size:
        full = d.get("full_vocab_size")
        if isinstance(full, bool) or not isinstance(full, int) or not 1 <= full <= MAX_SIZE:
            raise SpecsweepError(f"{path}: full_vocab_size is {clip(full)}; expected the full vocabulary's size, "
                                 f"an integer >= 1 and <= {MAX_SIZE}")
        vocab = full if vocab is None else min(vocab, full)
    bad = next((i for i, t in enumerate(kept) if t < 0 or (vocab is not None and t >= vocab)), None)
    if bad is not None:
        raise SpecsweepError(f"{path}: kept_ids[{bad}] is {kept[bad]}, outside the target's vocabulary "
                             f"[0, {vocab if vocab is not None else 'size'})")
    if len(set(kept)) != len(kept):
        raise SpecsweepError(f"{path}: kept_ids lists a token id twice; list each once")
    return kept


def check_model_folder(folder: Path, where: str, tokenizer: bool = True) -> dict:
    """A local model folder's files by the module's rules (config sizes, weights, ``vocab_map.json`` and, with
    ``tokenizer``, the tokenizer files); returns its config. Nothing is loaded."""
    folder = Path(folder)
    config, _ = read_model_config(folder, where)
    check_weight_files(folder)
    if tokenizer:
        check_tokenizer_files(folder, where)
    if (folder / "vocab_map.json").exists():
        read_kept_ids(folder / "vocab_map.json", full_size=True)
    return config
