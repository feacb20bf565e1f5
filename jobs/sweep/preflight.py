"""Checks a sweep runs before Ray starts or anything is written.

For every pair: the target and draft names resolve (built-in alias, local Hugging
Face folder, or a hub id whose tokenizer loads), their local files pass the file rules
(:func:`check_paths`: config sizes, weights headers, tokenizer files, reduced vocabularies,
an EAGLE head's config and tensor shapes against the target's config), the draft's tokenizer maps text to
the same ids as the target's, the actors' cost probe (the config's ``calibrate`` settings) fits the room their
pair will have — the target's positions and, on a static or compiled engine, ``max_context`` — by the rule
``specsweep calibrate`` applies (``jobs/calibrate_checks.py``), a pair that
reserves GPUs fits a listed GPU kind at its ``num_gpus`` and the largest of ``batch_sizes``
(``actors/plan/memory_plan.py``), and, for a cluster started on this machine, the device exists here. Each problem is
one ``SpecsweepError`` line naming the pair by its config path.

Loading a tokenizer is cheap; model weights are never loaded here. The alias
``smollm2-135m`` is only checked for its package until its dequantized copy is
cached (building that copy takes ~20 s and happens in the first actor that needs it, once, under a
lock: actors/loading/shared_cache.py).
"""
from __future__ import annotations

from pathlib import Path

from actors.drafter_kinds.registry import check_draft_files, kind_of
from actors.plan.memory_plan import check_fits, pair_plan, plan_batch
from jobs.calibrate_checks import check_sweep_probe
from policies.errors import SpecsweepError


def _at(path: str, check):
    """``check()``, its refusal prefixed with the config field ``path``."""
    try:
        return check()
    except SpecsweepError as e:
        raise SpecsweepError(f"config {path}: {e}") from None


def _local_name(name: str | None) -> bool:
    """Whether ``name`` is checked on disk: a path, or a built-in alias other than the GGUF one (hub ids are not)."""
    from actors.loading.models import ALIASES  # heavy: torch

    if not name or name == "smollm2-135m":
        return False
    return name in ALIASES or name.startswith((".", "/", "~")) or Path(name).expanduser().exists()


def check_paths(cfg, tokenizer: bool = True) -> None:
    """The cheap checks, ``--dry-run`` included: every local target and draft exists, and its files (config sizes,
    weights headers, tokenizer files unless ``tokenizer`` is False, reduced vocabulary, an EAGLE head's shapes
    against the target) pass ``actors/loading/model_files.py`` and ``actors/drafting/head_files.py`` — before MLflow, Ray or any
    weight."""
    from actors.loading.models import check_target_files, resolve_source  # heavy: torch

    for i, p in enumerate(cfg.pairs):
        path = f"pairs[{i}]"
        if _local_name(p.target):
            _at(f"{path}.target", lambda: resolve_source(p.target))
        target_config = _at(f"{path}.target", lambda: check_target_files(p.target, tokenizer))
        kind = kind_of(p.draft)
        if kind is not None and kind.loads_model and _local_name(p.draft):
            _at(f"{path}.draft", lambda: resolve_source(p.draft))
        _at(f"{path}.draft", lambda: check_draft_files(p.draft, target_config, tokenizer))


def _tokenizer(path: str, name: str, trust_remote_code: bool):
    from actors.loading.models import ModelSpec, _cached_smollm2_ready, load_tokenizer, smollm2_folder  # heavy: torch

    if name == "smollm2-135m" and not _cached_smollm2_ready():
        smollm2_folder()            # the package and its GGUF file are there; the actor builds the cache
        return None
    try:
        return load_tokenizer(ModelSpec(name, trust_remote_code=trust_remote_code, role=path.rsplit(".", 1)[1]))
    except SpecsweepError as e:
        raise SpecsweepError(f"config {path}: {e}") from None
    except Exception as e:  # a broken folder raises many kinds of errors inside transformers
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise SpecsweepError(f"config {path}: cannot load the tokenizer of {name!r} ({type(e).__name__}: {first})") \
            from None


def _max_positions(name: str) -> int | None:
    from actors.loading.models import resolve_source  # heavy: torch

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
    """Every check of the module docstring, pair by pair; :func:`check_paths` first."""
    from actors.loading.models import check_same_tokenizer, resolve_device  # heavy: torch

    check_paths(cfg)
    for i, p in enumerate(cfg.pairs):
        path = f"pairs[{i}]"
        if p.num_gpus >= 1:            # the memory plan from config.json (actors/plan/memory_plan.py)
            try:
                plan = pair_plan(p, plan_batch(cfg))
            except SpecsweepError as e:   # a config.json without sizes is refused; a missing one is named below
                if "no config.json" not in str(e):
                    raise SpecsweepError(f"config pairs[{i}]: {e}") from None
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
        kind = kind_of(p.draft)
        if kind is not None:
            try:
                kind.check_name(p.draft)          # a name that cannot be found (an EAGLE head's missing folder)
            except SpecsweepError as e:
                raise SpecsweepError(f"config {path}.draft: {e}") from None
        if kind is not None and kind.loads_model:
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
        try:                        # the actors' cost probe fits their pair's room (jobs/calibrate_checks.py)
            check_sweep_probe(p, cfg.calibrate.model_dump(), limit, actor_max_draft(cfg.gammas), path)
        except SpecsweepError as e:
            raise SpecsweepError(f"config calibrate.context: {path}: {e}") from None


def actor_max_draft(gammas) -> int:
    """The ``max_draft`` each actor's pair is built with: the largest initial γ, at least 32 (the static engine's
    graphs cover up to gt's default cap)."""
    return max([32, *gammas])


def first_run_note(cfg) -> str:
    """A note for the start-up line when a pair will build the SmolLM2 cache first (empty, ``""``, otherwise)."""
    from actors.loading.models import _cached_smollm2_ready  # heavy: torch

    uses = any("smollm2-135m" in (p.target, p.draft) for p in cfg.pairs)
    return "; first run: SmolLM2 is dequantized once into the cache (~20 s)" if uses and not _cached_smollm2_ready() else ""
