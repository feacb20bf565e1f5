"""Checks a sweep runs before Ray starts or anything is written.

For every pair: the target and draft names resolve (built-in alias, local Hugging
Face folder, or a hub id whose tokenizer loads), the draft's tokenizer maps text to
the same ids as the target's, the calibration context fits the target's positions, a pair that
reserves GPUs fits a listed GPU kind at its ``num_gpus`` (``actors/memory_plan.py``),
and, for a cluster started on this machine, the device exists here. Each problem is
one ``SpecsweepError`` line naming the pair by its config path.

Loading a tokenizer is cheap; model weights are never loaded here. The alias
``smollm2-135m`` is only checked for its package until its dequantized copy is
cached (building that copy takes ~20 s and happens in the first actor that needs it, once, under a
lock: actors/shared_cache.py).
"""
from __future__ import annotations

from actors.memory_plan import check_fits, pair_plan
from policies.errors import SpecsweepError


def _tokenizer(path: str, name: str, trust_remote_code: bool):
    from actors.models import ModelSpec, _cached_smollm2_ready, load_tokenizer, smollm2_folder  # heavy: torch

    if name == "smollm2-135m" and not _cached_smollm2_ready():
        smollm2_folder()            # the package and its GGUF file are there; the actor builds the cache
        return None
    try:
        return load_tokenizer(ModelSpec(name, trust_remote_code=trust_remote_code))
    except SpecsweepError as e:
        raise SpecsweepError(f"config {path}: {e}") from None
    except Exception as e:  # a broken folder raises many kinds of errors inside transformers
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise SpecsweepError(f"config {path}: cannot load the tokenizer of {name!r} ({type(e).__name__}: {first})") \
            from None


def _max_positions(name: str) -> int | None:
    from actors.models import resolve_source  # heavy: torch

    try:
        from transformers import AutoConfig  # heavy: transformers

        source = resolve_source(name) if name != "smollm2-135m" else None
        if source is None:
            return None
        c = AutoConfig.from_pretrained(source)
        return getattr(c, "max_position_embeddings", None)
    except Exception:       # a missing field is not an error; the tokenizer check already ran
        return None


def check_pairs(cfg, *, local_cluster: bool) -> None:
    from actors.models import check_same_tokenizer, resolve_device  # heavy: torch

    for i, p in enumerate(cfg.pairs):
        path = f"pairs[{i}]"
        if p.num_gpus >= 1:            # the memory plan from config.json (actors/memory_plan.py)
            try:
                plan = pair_plan(p)
            except SpecsweepError:     # a model without a readable config.json: the tokenizer check names it
                plan = None
            if plan is not None:
                check_fits(plan, f"config pairs[{i}]")
        if local_cluster:
            try:
                resolve_device(p.device)
            except SpecsweepError as e:
                raise SpecsweepError(f"config {path}.device: {e}") from None
            if p.num_gpus and p.device == "cpu":
                raise SpecsweepError(f"config {path}.num_gpus: {p.num_gpus:g} GPUs reserved for a pair on device cpu; "
                                     "set num_gpus: 0 or device: cuda")
        ttok = _tokenizer(f"{path}.target", p.target, p.trust_remote_code)
        if p.drafter_kind == "eagle":
            from actors.models import eagle_folder  # heavy: torch

            try:
                eagle_folder(p.draft)
            except SpecsweepError as e:
                raise SpecsweepError(f"config {path}.draft: {e}") from None
        elif p.drafter_kind == "model":
            dtok = _tokenizer(f"{path}.draft", p.draft, p.trust_remote_code)
            if ttok is not None and dtok is not None:
                try:
                    check_same_tokenizer(ttok, dtok, p.target, p.draft)
                except SpecsweepError as e:
                    raise SpecsweepError(f"config {path}.draft: {e}") from None
        limit = _max_positions(p.target)
        new_tokens = cfg.generation["max_new_tokens"]
        if limit and new_tokens >= limit:
            raise SpecsweepError(f"config generation.max_new_tokens: {new_tokens} leaves no room for "
                                 f"a prompt in the {limit} positions of {p.target} ({path}.target); use less than {limit}")
        need = cfg.calibrate.context + cfg.calibrate.max_tokens + 1
        if limit and need > limit:
            raise SpecsweepError(f"config calibrate.context: context + max_tokens = {need - 1} exceeds the "
                                 f"{limit} positions of {p.target} ({path}.target); lower calibrate.context")


def first_run_note(cfg) -> str:
    """A note for the start-up line when a pair will build the SmolLM2 cache first (empty, ``""``, otherwise)."""
    from actors.models import _cached_smollm2_ready  # heavy: torch

    uses = any("smollm2-135m" in (p.target, p.draft) for p in cfg.pairs)
    return "; first run: SmolLM2 is dequantized once into the cache (~20 s)" if uses and not _cached_smollm2_ready() else ""
