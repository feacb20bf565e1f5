"""The record every drafter kind fills in (``actors/drafter_kinds/registry.py`` lists them)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional


def _nothing(*_args, **_kw) -> None:
    """A hook a kind does not need."""
    return None


def _same_params(params: dict, shape, config: dict) -> int:
    """The plan's default: the draft's parameters are a plain decoder's, nothing held in dtype beyond them."""
    return 0


@dataclass(frozen=True)
class Serving:
    """How the serving engines (vLLM, SGLang, TensorRT-LLM: ``jobs/recommend/``) take a draft of this kind.

    ``label`` names the draft in a recommendation (an EAGLE head is ``eagle`` or ``eagle3`` by its config);
    ``methods`` the engine's method name per engine that has one, ``refusals`` why an engine has none; ``model``
    what the engine loads as the draft (None: nothing, a lookup); ``lookup`` the (n_min, n_max) of prompt lookup;
    ``trees`` whether SGLang's tree flags apply (an EAGLE head)."""

    label: str
    methods: dict
    refusals: dict = field(default_factory=dict)
    model: Optional[str] = None
    lookup: Optional[tuple[int, int]] = None
    trees: bool = False


@dataclass(frozen=True)
class DrafterKind:
    """Everything about one drafter kind; the code that loads, checks, plans, prices and traces drafters reads it.

    * ``name``: the kind's name (the drafter's ``name``, MLflow's ``drafter`` tag);
    * ``matches(draft)``: whether a draft name is this kind (the registry asks kinds in order, the catch-all last);
    * ``load(cfg, target, draft_model)``: the batch-shaped :class:`~actors.drafting.drafters.Drafter` of a pair
      (``cfg`` an :class:`~actors.pair.PairConfig`; ``draft_model`` the loaded draft LM when ``loads_model``);
    * ``loads_model``: the draft is a causal LM loaded beside the target (its own spec, tokenizer check, GPU room);
    * ``has_weights``: the drafter has weights (a draft quantization means something);
    * ``check_name(draft)``: refuse a draft name that cannot be found, before anything is read;
    * ``check_files(draft, target_config, tokenizer)``: the local files, before any weight is read;
    * ``config_file(draft)``: (config.json, where it came from) when the kind keeps its config elsewhere than a
      model lookup finds it, else None;
    * memory plan: ``on_gpu`` (the draft has weights and a cache on the GPU), ``plan_params(params, shape, config)``
      (rewrites the decoder's parameter counts in place; returns the parameters added in dtype precision beyond
      the quantized weights) and ``plan_check(draft, target_config)`` (a check the plan runs);
    * ``record_rollouts``: the replay trace's rollouts ``(drafter, target, prompt_ids, reference, *,
      max_new_tokens, max_draft, eos_ids) -> (rollouts, info)`` (``actors/rollouts.py``), or None (not traced);
    * ``reads_features``: the drafter is handed the target's hidden states (``Drafter.see_features``);
    * ``draft_module(drafter, draft_model)``: the module whose parameters count as the draft's (None: no weights);
    * ``rank_draft(drafter, draft_model, target)``: what per-rank acceptance reads
      (``actors/costs/calibrate.py::rank_acceptance``: a causal LM or a function seq → logits; None: no ranks);
    * ``serving(draft)``: how serving engines take it (:class:`Serving`; ``jobs/recommend/``).
    """

    name: str
    matches: Callable[[str], bool]
    load: Callable
    loads_model: bool = False
    has_weights: bool = True
    check_name: Callable[[str], None] = _nothing
    check_files: Callable = _nothing
    config_file: Callable[[str], Optional[tuple[Path, str]]] = _nothing
    on_gpu: bool = True
    plan_params: Callable = _same_params
    plan_check: Callable = _nothing
    record_rollouts: Optional[Callable] = None
    reads_features: bool = False
    draft_module: Callable = _nothing
    rank_draft: Callable = _nothing
    serving: Callable[[str], Optional[Serving]] = _nothing
