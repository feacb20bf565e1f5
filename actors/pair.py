"""A loaded target/draft pair with its engine and (lazily measured) cost model."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from actors.loading.builtin_prompts import distill_prompts
from actors.costs.calibrate import calibrate, rank_acceptance
from actors.drafter_kinds.kind import DrafterKind
from actors.drafter_kinds.registry import check_draft_files, kind_name, kind_of
from actors.core.engine import SpecEngine
from actors.loading.models import (ModelSpec, check_output_widths, check_same_tokenizer, check_target_files,
                                   load_model, load_tokenizer, resolve_source)
from actors.loading.placement import Shape, kv_bytes, weight_bytes
from actors.runtime.cpu_pack import PACK_MODES, pack_linears, packable, packing_pays
from actors.runtime.runners import ENGINES, EagerRunner, default_engine
from actors.loading.templates import default_template, render
from policies.errors import SpecsweepError


@dataclass
class PairConfig:
    """What a pair is made of. ``draft`` is a model name, ``"ngram"``, an EAGLE head (``eagle:PATH`` or a shipped
    head's alias; ``eagle3:PATH`` for an EAGLE-3 head) or None (target only)."""

    target: str = "smollm2-135m"
    draft: str | None = "smollm2-135m-draft"
    dtype: str = "float32"
    device: str = "auto"
    quantization: str | None = None          # of the target
    draft_quantization: str | None = None
    trust_remote_code: bool = False
    template: str | None = None              # None = chosen from the target (actors/loading/templates.py)
    ngram_max: int = 3
    name: str = ""
    engine: str | None = None                # eager | static | compiled; None = compiled on CUDA, eager on CPU
    inductor: bool | None = None             # torch.compile before CUDA-graph capture (compiled engine)
    # eager CPU float32: auto (a layer shape packed where measured faster) | always | never (actors/runtime/cpu_pack.py);
    # the default is $SPECSWEEP_CPU_PACK when set (tests pin it), else auto
    cpu_pack: str = field(default_factory=lambda: os.environ.get("SPECSWEEP_CPU_PACK") or "auto")
    quant_backend: str = "torchao"           # torchao | optimum-quanto (quantization of target and draft)
    num_gpus: int = 1                        # GPUs the target is sharded over (draft on the first)
    max_context: int = 2048                  # static KV cache positions: prompt + generation (every forward attends over all of them)
    max_draft: int = 24                      # the largest draft the compiled engine captures a graph for

    def target_spec(self) -> ModelSpec:
        return ModelSpec(self.target, self.dtype, self.device, self.quantization, self.trust_remote_code,
                         quant_backend=self.quant_backend, num_gpus=self.num_gpus,
                         reserve_bytes=self._reserve_per_gpu(), role="target")

    @property
    def drafter_kind(self) -> str:
        """The name of the draft's kind, ``none`` without one (``actors/drafter_kinds/registry.py``)."""
        return kind_name(self.draft)

    @property
    def kind(self) -> DrafterKind | None:
        """The draft's registered kind (``actors/drafter_kinds/``); None without a drafter."""
        return kind_of(self.draft)

    def draft_spec(self) -> ModelSpec | None:
        """The draft LM's spec when the kind loads one beside the target, else None."""
        if self.kind is None or not self.kind.loads_model:
            return None
        device = "cuda:0" if self.num_gpus > 1 else self.device
        return ModelSpec(self.draft, self.dtype, device, self.draft_quantization, self.trust_remote_code,
                         quant_backend=self.quant_backend, role="draft")

    def _reserve_per_gpu(self) -> int:
        """Room kept free on each GPU of a sharded target: its KV-cache share plus the draft (on GPU 0)."""
        if self.num_gpus <= 1:
            return 0
        from transformers import AutoConfig  # heavy: transformers


        target = Shape.of(AutoConfig.from_pretrained(resolve_source(self.target)))
        draft = 0
        if self.kind is not None and self.kind.loads_model:
            dshape = Shape.of(AutoConfig.from_pretrained(resolve_source(self.draft)))
            draft = weight_bytes(dshape, self.dtype, self.draft_quantization) + kv_bytes(dshape, self.max_context,
                                                                                         self.dtype)
        return kv_bytes(target, self.max_context, self.dtype) // self.num_gpus + draft


class Pair:
    """A loaded target/draft pair: tokenizer, models, drafter (model, n-gram or none), EOS ids and its
    :class:`~actors.core.engine.SpecEngine`; ``calibrate`` measures the cost model and per-rank acceptance on demand."""

    def __init__(self, cfg: PairConfig):
        if cfg.engine is not None and cfg.engine not in ENGINES:
            raise SpecsweepError(f"engine {cfg.engine!r} is not valid: use one of {', '.join(ENGINES)} "
                                 "(or leave it unset: compiled on CUDA, eager on CPU)")
        if not isinstance(cfg.max_context, int) or cfg.max_context < 2:
            raise SpecsweepError(f"max_context {cfg.max_context!r} is not valid: use an integer >= 2")
        if cfg.cpu_pack not in PACK_MODES:
            raise SpecsweepError(f"cpu_pack {cfg.cpu_pack!r} is not valid: use one of {', '.join(PACK_MODES)}")
        self.cfg = cfg
        check_draft_files(cfg.draft, check_target_files(cfg.target))      # every local file, before any weight
        tspec = cfg.target_spec()
        self.tokenizer = load_tokenizer(tspec)
        dspec = cfg.draft_spec()
        if dspec is not None:
            check_same_tokenizer(self.tokenizer, load_tokenizer(dspec), cfg.target, cfg.draft)
        self.target = load_model(tspec)
        self.draft_model = load_model(dspec) if dspec is not None else None
        if self.draft_model is not None:
            check_output_widths(self.target, self.draft_model, cfg.target, cfg.draft)
        if self.draft_model is not None and self.draft_model.device != self.target.device:
            self.draft_model.to(self.target.device)
        self.drafter = cfg.kind.load(cfg, self.target, self.draft_model) if cfg.kind is not None else None
        self.eos_ids = eos_ids(self.tokenizer, self.target)
        engine = cfg.engine or default_engine(self.target.device)
        self.positions = getattr(self.target.config, "max_position_embeddings", None) or getattr(
            self.target.config, "n_positions", None)
        # a static cache past the model's positions is never usable: allocate at most those
        self.capacity = min(cfg.max_context, self.positions) if self.positions else cfg.max_context
        self.engine = SpecEngine(self.target, self.drafter, self.eos_ids, engine=engine, capacity=self.capacity,
                                 max_draft=cfg.max_draft, inductor=cfg.inductor)
        self._params = self._count_params()            # before packing: a packed layer holds no weight parameter
        self.packed = self._pack(engine, cfg.cpu_pack)

    def check_length(self, prompt_tokens: int, max_new_tokens: int) -> None:
        """One line when prompt + new tokens cannot fit the target's positions (or the static cache's capacity),
        naming a valid remedy: fewer new tokens while the prompt leaves room for one, else a shorter prompt; and a
        larger max_context where the static cache, not the model's positions, is the limit."""
        room, static = self.room, not isinstance(self.engine.runner, EagerRunner)
        if room and prompt_tokens + max_new_tokens > room:
            need = prompt_tokens + max_new_tokens
            fix = (f"use --max-new-tokens <= {room - prompt_tokens}" if room > prompt_tokens
                   else "the prompt alone fills them: use a shorter prompt")
            if static and room == self.capacity and need <= (self.positions or need):
                fix += f", or --max-context (a sweep pair's max_context) >= {need}"
            raise SpecsweepError(f"max_new_tokens {max_new_tokens} + a {prompt_tokens}-token prompt exceed the {room} "
                                 f"positions available to {self.cfg.target}; {fix}")

    @property
    def room(self) -> int | None:
        """Positions one generation may fill: the target's positions and, on a static or compiled engine, the KV
        cache's capacity (the smaller); None when neither is known."""
        limits = [self.positions] if self.positions else []
        if not isinstance(self.engine.runner, EagerRunner):                  # a static cache holds capacity
            limits.append(self.capacity)
        return min(limits) if limits else None

    @property
    def device(self) -> str:
        return str(self.target.device)

    @property
    def costs(self):
        """The measured cost model policies read (held by the engine, which hands it to them); None until calibrated."""
        return self.engine.costs

    @property
    def rank_acceptance(self) -> list[float] | None:
        """Per-rank acceptance, unconditional (held by the engine for static trees); None until measured."""
        return self.engine.rank_acceptance

    def calibrate(self, **kw):
        """Measure (once) on the engine's step path and attach the cost model that cost-aware policies and replay
        read (``actors/costs/calibrate.py``); also the per-rank acceptance static trees read."""
        if self.costs is None:
            self.engine.costs = calibrate(self.engine, label=f"{self.cfg.name or self.cfg.target} {self.device}", **kw)
        if not self.costs.params:                        # c=params (the GT paper's Table 10) reads them
            self.costs.params = self.param_counts()
        if self.rank_acceptance is None and self.drafter is not None and self.drafter.supports_trees:
            self.measure_rank_acceptance()
        return self.costs

    def _pack(self, engine: str, mode: str) -> int:
        """On an eager CPU float32 pair, the target's and the draft LM's linear weights packed once for the CPU
        (``actors/runtime/cpu_pack.py``) — mode ``auto``: the layer shapes this machine runs faster packed, ``always``:
        every layer, ``never``: none — after the drafter has read what it borrows; how many layers were packed."""
        if mode == "never":
            return 0
        where = packing_pays if mode == "auto" else None
        return sum(pack_linears(m, where) for m in (self.target, self.draft_model)
                   if m is not None and packable(m, engine))

    def param_counts(self) -> dict[str, int]:
        """{"target": n, "draft": n}: the target's parameters and the draft module's own (a draft LM's, an EAGLE head's
        without the target's embedding and LM head it borrows); no "draft" for a lookup or no draft. Counted when the
        pair was loaded, before any packing."""
        return dict(self._params)

    def _count_params(self) -> dict[str, int]:
        out = {"target": sum(p.numel() for p in self.target.parameters())}
        kind = self.cfg.kind
        draft = kind.draft_module(self.drafter, self.draft_model) if kind is not None else None
        if draft is not None:
            out["draft"] = sum(p.numel() for p in draft.parameters())
        return out

    def measure_rank_acceptance(self, prompts: int = 4, max_new_tokens: int = 48) -> list[float] | None:
        """Per-rank acceptance of this pair on built-in chat prompts (static trees read it); None when the kind has
        no ranks."""
        tmpl = self.cfg.template or default_template(self.cfg.target, self.tokenizer)
        ids = [render(tmpl, self.tokenizer, [{"role": "user", "content": t}])
               for t in distill_prompts(prompts, seed=12345)]
        kind = self.cfg.kind
        draft = kind.rank_draft(self.drafter, self.draft_model, self.target) if kind is not None else None
        if draft is None:                    # a model-free tree drafter has no ranks (give sequoia accept=…)
            return None
        self.engine.rank_acceptance = rank_acceptance(self.target, draft, ids, max_new_tokens=max_new_tokens)
        return self.engine.rank_acceptance


def eos_ids(tokenizer, model) -> list[int]:
    """Sorted ids that end a generation: the tokenizer's EOS plus the model's generation-config EOS ids."""
    ids = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif isinstance(gen_eos, (list, tuple)):
        ids.update(int(t) for t in gen_eos)
    return sorted(ids)
