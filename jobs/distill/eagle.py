"""``specsweep distill --kind eagle``: train an EAGLE feature head for a target (``actors/drafting/eagle_head.py``).

Pipeline (every phase resumes from what ``--out`` already holds):

1. **data** — the target's own greedy answers to the built-in prompt set (``jobs/distill/draft.py``'s
   data phase; the evaluation questions are not in it, nothing is downloaded);
2. **features** — one target forward per batch of prompt + answer gives the final hidden states
   f_0 … f_{L−1} at every position (``features-*.pt``, fp16);
3. **vocab** — the head drafts over the ``vocab`` most frequent target tokens (``draft_vocab.json``);
4. **train** — the head at position i reads (f_i, t_{i+1}) and predicts f_{i+1} and token t_{i+2}.
   Loss (EAGLE, Li et al. 2024, §4.2): 1.0 · smooth-L1(ĝ, f) + 0.1 · soft CE against the target's own
   next-token distribution (its top-K, on the drafting vocabulary), on response tokens only; input
   features + U(−0.1, 0.1); AdamW (β 0.9, 0.95), lr 3e-5, gradient norm clipped at 0.5 — EAGLE's
   released recipe. ``unroll`` > 1 adds training-time test on the head's own predicted features
   (``jobs/distill/head_training.py``). Linear warm-up, cosine decay; ``checkpoint.pt`` and the
   release-layout folder ``head/`` every ``save_every`` steps, with the held-out top-1.
5. **estimate** — greedy chains of ``gamma`` through the real engine on held-out prompts of the prompt set and on
   the ``sample`` questions' first turns: the mean accepted length (bonus counted) of each, printed at the end and
   stored in ``head/specsweep_distill.json``.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from tqdm import tqdm

from actors.drafting.eagle_drafter import EagleDrafter
from actors.drafting.eagle_head import EagleHead, init_head, save_head, target_parts
from actors.core.engine import SpecEngine
from actors.pair import eos_ids
from actors.loading.templates import default_template, render
from jobs.dataset import CATEGORIES, load_questions
from jobs.distill.draft import DistillConfig, build_data, data_key, kept_vocab, prompt_source
from jobs.distill.head_training import (LoopSettings, build_features, draft_vocab_map, scored_rows, soft_ce,
                                       train_loop)
from jobs.distill.resume_files import load_resume, read_json, write_atomically
from jobs.report.intervals import paired_ratio
from policies import build
from policies.errors import SpecsweepError

# EAGLE-1/2's recipe (Li et al. 2024, "EAGLE", §4.2 and its released training configuration): loss weights, learning
# rate, gradient clipping, AdamW betas, feature noise U(−0.1, 0.1).
FEATURE_WEIGHT, TOKEN_WEIGHT = 1.0, 0.1
EAGLE_LR = 3e-5
CLIP = 0.5
FEATURE_NOISE = 0.1
STEP_DECAY = 0.8               # weight of unroll step d: 0.8 ** (d − 1) ("EAGLE-3", §3.3 training-time test)


@dataclass
class EagleDistillConfig(DistillConfig):
    steps: int = 1500
    lr: float = EAGLE_LR
    unroll: int = 1              # EAGLE-1/2 train on true features only; > 1 adds training-time test
    eval_prompts: int = 16
    eval_gamma: int = 6


# ---------------------------------------------------------------- phase 4: train
def eagle_step_loss(w_lm: torch.Tensor):
    """EAGLE-1/2's loss at one unroll step (Li et al. 2024, "EAGLE", §4.2): ``FEATURE_WEIGHT`` · smooth-L1(ĝ_{j},
    f_{j+1}) + ``TOKEN_WEIGHT`` · soft CE(softmax(W_lm ĝ_j), the target's p(t_{j+2})), both over response tokens; the
    CE on the drafting vocabulary (rows of ``w_lm``); step d weighted ``STEP_DECAY`` ** (d − 1)."""

    def step_loss(d, g, sel, batch):
        n = g.shape[1]
        mf = sel.unsqueeze(-1).float()
        fl = (F.smooth_l1_loss(g, batch.feats[:, 1:n + 1], reduction="none") * mf).sum() \
            / (mf.sum() * g.shape[-1]).clamp_min(1)
        rows_g, (ids, p), weight = scored_rows(g, sel, batch.teacher_ids[:, 2:n + 2], batch.teacher_p[:, 2:n + 2])
        tl, rows, hits = soft_ce(rows_g @ w_lm.T, ids, p, weight)
        return STEP_DECAY ** (d - 1) * (FEATURE_WEIGHT * fl + TOKEN_WEIGHT * tl), rows, hits

    return step_loss


def train_head(cfg: EagleDistillConfig, target, head: EagleHead, samples, feats, kept, subset, out: Path,
                deadline: float = 0.0) -> Path:
    """Train ``head`` on the drafting vocabulary ``kept``; export with ``subset`` (None = full vocabulary)."""
    lm = target.get_output_embeddings().weight
    w_lm = lm.detach()[torch.tensor(kept, device=lm.device)].float()
    for p in target.parameters():
        p.requires_grad_(False)
    settings = LoopSettings(steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, warmup=cfg.warmup,
                            save_every=cfg.save_every, seed=cfg.seed, unroll=cfg.unroll, clip=CLIP, noise=FEATURE_NOISE,
                            deadline=deadline)
    train_loop(settings, head, target.get_input_embeddings(), samples, feats, draft_vocab_map(kept, lm.shape[0]),
               eagle_step_loss(w_lm), lambda step, curve: _export(cfg, head, subset, out, step, curve), out,
               "eagle train")
    return out / "head"


def _export(cfg, head, kept, out: Path, step: int, curve: list, estimate: dict | None = None) -> None:
    note = {"config": {**asdict(cfg), "extra_text": list(cfg.extra_text)}, "step": step,
            "curve_tail": curve[-3:], "saved_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    if estimate:
        note["held_out"] = estimate
    save_head(head, out / "head", kept, extra={"specsweep_distill.json": json.dumps(note, indent=1)})


# ---------------------------------------------------------------- phase 5: held-out estimate
SAMPLE_TOKENS = 64      # the sample questions' answers as bench.eagle measures them (issue goals: 64 tokens)


def held_out_estimate(cfg: EagleDistillConfig, target, tok, drafter) -> dict:
    """Greedy chains of ``eval_gamma`` with ``drafter`` through the live engine on prompts outside the training set:
    prompts of the run's own prompt set, and — the measure that tells generalisation from memorised
    pool content — the first turns of the ``sample`` questions (never in any training set; at most
    ``eval_prompts`` of each), ``SAMPLE_TOKENS`` each. Each MAL is pooled over the prompts' steps, its 95 % interval
    the percentile bootstrap over prompts (``jobs/report/intervals.py``: steps of one answer are not independent)."""
    compose = prompt_source(cfg)
    seen = set(compose(cfg.prompts, seed=cfg.seed))
    held = [p for p in compose(cfg.prompts + 4 * cfg.eval_prompts, seed=cfg.seed + 1) if p not in seen]
    held = held[: cfg.eval_prompts]
    sample = [q.turns[0] for q in load_questions("sample", categories=CATEGORIES, limit_per_category=1)]
    sample = sample[: cfg.eval_prompts]        # bench.eagle's 13 questions: one per Spec-Bench category
    template = default_template(cfg.target, tok)
    engine = SpecEngine(target, drafter, eos_ids(tok, target))

    def mal(prompts: list[str], tokens: int, label: str) -> dict:
        accepted, steps = [], []                 # per prompt: the pooled MAL's interval resamples prompts
        for text in tqdm(prompts, desc=f"eagle held-out estimate ({label})", unit="prompt"):
            ids = render(template, tok, [{"role": "user", "content": text}])
            lengths = engine.generate(ids, build("fixed", cfg.eval_gamma), max_new_tokens=tokens).accept_lengths
            accepted.append(sum(lengths))
            steps.append(len(lengths))
        m, lo, hi = paired_ratio(accepted, steps)
        return {"prompts": len(prompts), "gamma": cfg.eval_gamma, "steps": sum(steps),
                "mean_accepted_length": round(m, 3), "ci95": [round(lo, 3), round(hi, 3)]}

    return {**mal(held, cfg.max_new_tokens, "prompt set"), "sample": mal(sample, SAMPLE_TOKENS, "sample questions")}


@dataclass(frozen=True)
class HeadRecipe:
    """What differs between head kinds in :func:`run_head_distill`."""
    kind: str
    layers: Callable            # target → the output_hidden_states indices the head reads
    make: Callable              # (target, kept, seed) → a new head
    train: Callable             # (cfg, target, head, samples, feats, kept, subset, out, deadline=) → the exported folder
    export: Callable            # (cfg, head, subset, out, step, curve, estimate) → None
    drafter: Callable           # (folder, target) → the live drafter
    start: Callable | None = None   # (init_from, target) → (head, kept): train on from an existing head


def run_head_distill(cfg: EagleDistillConfig, recipe: HeadRecipe) -> Path:
    """The five phases of the module docstring for ``recipe``'s head kind; each resumes from ``cfg.out``."""
    from actors.loading.models import ModelSpec, load_model, load_tokenizer  # heavy: torch

    cfg.validate()                               # --unroll included (jobs/distill/draft.py's LIMITS)
    deadline = time.monotonic() + 60 * cfg.minutes if cfg.minutes else 0.0
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)                          # checked by cfg.validate() (jobs/store/output.py's check_writable)
    meta = out / "distill_config.json"
    key = data_key(cfg)
    key["kind"] = recipe.kind
    init_from = getattr(cfg, "init_from", "")
    if init_from:
        key["init_from"] = init_from
    if meta.exists() and read_json(meta) != key:
        raise SpecsweepError(f"{out} holds a distillation with other settings ({meta}): pass another --out or delete it")
    spec = ModelSpec(cfg.target, device=cfg.device)
    tok = load_tokenizer(spec)
    target = load_model(spec)
    target_parts(target)                         # refuse a target without readable features before any work
    start = recipe.start(init_from, target) if init_from else None    # refused in one line before any work
    layers = start[0].layers if start else recipe.layers(target)
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(json.dumps(key), meta)
    samples = build_data(cfg, target, tok, out)
    feats = build_features(target, samples, out, layers=layers, topk=cfg.topk,
                           batch=64 if target.device.type == "cuda" else 16)    # a GPU forward: launch-bound at 16
    full = target.get_output_embeddings().weight.shape[0]
    vm = out / "draft_vocab.json"
    if start:
        kept = start[1]
        write_atomically(json.dumps({"kept_ids": kept}), vm)
    elif vm.exists():
        kept = read_json(vm)["kept_ids"]
    else:
        size = cfg.vocab if cfg.vocab and cfg.vocab < full else full
        kept = kept_vocab(samples, size, full, [tok.eos_token_id, tok.bos_token_id, tok.pad_token_id])
        write_atomically(json.dumps({"kept_ids": kept}), vm)
    head = start[0] if start else recipe.make(target, kept, cfg.seed)
    subset = kept if len(kept) < full else None          # the full vocabulary needs no draft_vocab.json
    folder = recipe.train(cfg, target, head, samples, feats, kept, subset, out, deadline=deadline)
    estimate = held_out_estimate(cfg, target, tok, recipe.drafter(folder, target))
    curve = read_json(out / "curve.json") if (out / "curve.json").exists() else []
    ckpt = out / "checkpoint.pt"                # a time budget (--minutes) may have ended training before --steps
    step = load_resume(ckpt, weights_only=True, map_location="cpu")["step"] if ckpt.exists() else cfg.steps
    recipe.export(cfg, head, subset, out, step, curve, estimate)
    for label, e in (("prompt set", estimate), ("sample questions", estimate["sample"])):
        print(f"held-out mean accepted length at γ={e['gamma']} ({label}): {e['mean_accepted_length']:.3f} "
              f"(95 % CI {e['ci95'][0]:.3f}–{e['ci95'][1]:.3f}, {e['steps']} steps on {e['prompts']} prompts)")
    return folder


EAGLE = HeadRecipe("eagle", layers=lambda target: (-1,), make=lambda target, kept, seed: init_head(target, seed=seed),
                   train=train_head, export=_export, drafter=EagleDrafter.from_folder)


def run_distill_eagle(cfg: EagleDistillConfig) -> Path:
    return run_head_distill(cfg, EAGLE)
