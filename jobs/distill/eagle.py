"""``specsweep distill --kind eagle``: train an EAGLE feature head for a target (``actors/drafting/eagle_head.py``).

Pipeline (every phase resumes from what ``--out`` already holds):

1. **data** — the target's own greedy answers to the built-in prompt set (``jobs/distill/draft.py``'s
   data phase; the evaluation questions are not in it, nothing is downloaded);
2. **features** — one target forward per batch of prompt + answer gives the final hidden states
   f_0 … f_{L−1} at every position (``features-*.pt``, fp16);
3. **vocab** — the head drafts over the ``vocab`` most frequent target tokens (``draft_vocab.json``);
4. **train** — the head at position i reads (f_i, t_{i+1}) and predicts f_{i+1} and token t_{i+2}.
   Loss (EAGLE, Li et al. 2024, §4.2): smooth-L1(ĝ, f) + w·CE(W_lm ĝ, t) with w = 0.1, the CE over
   the drafting vocabulary. ``unroll`` > 1 also trains the head on its own predicted features, as
   drafting uses them: at unroll step d the input feature at position j is the step-(d−1)
   prediction at j − 1, and the attention mask gives each query the keys a live draft of depth d
   sees — true-feature keys up to the draft's root, then one key per earlier unroll step (the
   "training-time test" of EAGLE-3 / HASS, here at depth ``unroll``).
   AdamW, linear warm-up, cosine decay; ``checkpoint.pt`` and the release-layout folder ``head/``
   every ``save_every`` steps.
5. **estimate** — greedy chains of ``gamma`` on held-out prompts through the real engine: the mean
   accepted length (bonus counted) printed at the end and stored in ``head/specsweep_distill.json``.
"""
from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from actors.loading.builtin_prompts import distill_prompts
from actors.drafting.eagle_drafter import EagleDrafter
from actors.drafting.eagle_head import EagleHead, HeadCache, init_head, save_head, target_parts
from actors.core.engine import SpecEngine
from actors.pair import eos_ids
from actors.loading.templates import default_template, render
from jobs.distill.draft import DistillConfig, build_data, kept_vocab
from policies import build
from policies.errors import SpecsweepError

LOSS_TOKEN_WEIGHT = 0.1        # EAGLE's w_cls


@dataclass
class EagleDistillConfig(DistillConfig):
    steps: int = 1500
    lr: float = 3e-4
    unroll: int = 2
    eval_prompts: int = 16
    eval_gamma: int = 6


# ---------------------------------------------------------------- phase 2: features
@torch.no_grad()
def build_features(target, samples: list[dict], out: Path, batch: int = 16) -> list[torch.Tensor]:
    """The target's final hidden states [L, h] (fp16) over prompt + answer of every sample, resumable by shard."""
    feats: list[torch.Tensor] = []
    shard_size = 256
    shards = sorted(out.glob("features-*.pt"))
    for s in shards:
        feats += torch.load(s)
    device = target.device
    bar = tqdm(total=len(samples), initial=len(feats), desc="eagle features (target forward)", unit="seq")
    pending: list[torch.Tensor] = []
    start = len(feats)
    for i in range(start, len(samples), batch):
        seqs = [s["prompt_ids"] + s["answer_ids"] for s in samples[i:i + batch]]
        width = max(map(len, seqs))
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        for b, seq in enumerate(seqs):       # right padding: causal attention keeps real positions exact
            ids[b, : len(seq)] = torch.tensor(seq)
        hidden = target(input_ids=ids.to(device), output_hidden_states=True).hidden_states[-1]
        for b, seq in enumerate(seqs):
            pending.append(hidden[b, : len(seq)].to(torch.float16).cpu())
        bar.update(len(seqs))
        if len(pending) >= shard_size or i + batch >= len(samples):
            torch.save(pending, out / f"features-{start:05d}.pt")
            feats += pending
            start += len(pending)
            pending = []
    bar.close()
    return feats


# ---------------------------------------------------------------- phase 4: train
def unrolled_loss(head: EagleHead, embed, w_lm, f, ids, valid, to_small, unroll: int):
    """(loss, feature loss, token accuracy at depth 1) for a right-padded batch.

    ``f`` [B, T, h] true features, ``ids`` [B, T] tokens, ``valid`` [B, T] real positions, ``to_small`` maps a
    full-vocabulary id to the drafting vocabulary (−1 = not draftable). Position i (i ≤ T − 3) reads
    (f_i, t_{i+1}) and is scored on f_{i+1} and t_{i+2}.
    """
    B, T, _ = f.shape
    n = T - 2
    feat_in, tok_in = f[:, :n], ids[:, 1:n + 1]
    f_next, t_next = f[:, 1:n + 1], ids[:, 2:n + 2]
    ok = valid[:, 2:n + 2]
    small = to_small[t_next]
    emb = embed(tok_in)
    dev = f.device
    pos = torch.arange(n, device=dev)[None].expand(B, n)
    cache = HeadCache()
    total = feat_l = 0.0
    acc = None
    x_feat = feat_in
    keys_before = 0
    for d in range(1, unroll + 1):
        # keys seen by query j at step d: step-1 keys ≤ j − d + 1, then key j − d + e of each step e = 2 … d
        allowed = torch.zeros(n, keys_before + n, dtype=torch.bool, device=dev)
        j = torch.arange(n, device=dev)
        allowed[:, :n] = j[None, :] <= (j[:, None] - d + 1)
        for e in range(2, d + 1):
            block = (e - 1) * n
            allowed[:, block:block + n] = j[None, :] == (j[:, None] - d + e)
        allowed[:, keys_before:] |= torch.eye(n, dtype=torch.bool, device=dev)     # a query always sees its own key
        g = head(x_feat, emb, pos, allowed[None, None], cache)
        keys_before += n
        m = ok.clone()
        if d > 1:
            m[:, : d - 1] = False                   # no earlier prediction to read there
        mf = m.unsqueeze(-1).float()
        fl = (F.smooth_l1_loss(g, f_next, reduction="none") * mf).sum() / (mf.sum() * g.shape[-1]).clamp_min(1)
        mt = m & (small >= 0)
        logits = g[mt] @ w_lm.T
        tl = F.cross_entropy(logits.float(), small[mt]) if mt.any() else g.sum() * 0
        weight = 1.0 if d == 1 else 0.5 ** (d - 1)
        total = total + weight * (fl + LOSS_TOKEN_WEIGHT * tl)
        if d == 1:
            feat_l = fl.item()
            acc = (logits.argmax(-1) == small[mt]).float().mean().item() if mt.any() else 0.0
        x_feat = torch.cat([g[:, :1] * 0, g[:, :-1]], dim=1)          # step d + 1 reads the prediction at j − 1
    return total, feat_l, acc


def train_head(cfg: EagleDistillConfig, target, head: EagleHead, samples, feats, kept, subset, out: Path) -> Path:
    """Train ``head`` on the drafting vocabulary ``kept``; export with ``subset`` (None = full vocabulary)."""
    full = target.get_output_embeddings().weight.shape[0]
    to_small = torch.full((full,), -1, dtype=torch.long)
    to_small[torch.tensor(kept)] = torch.arange(len(kept))
    w_lm = target.get_output_embeddings().weight.detach()[torch.tensor(kept)].float()
    embed = target.get_input_embeddings()
    for p in target.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup) * 0.5 * (
        1 + math.cos(math.pi * min(s, cfg.steps) / cfg.steps)))
    ckpt = out / "checkpoint.pt"
    step = 0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=True)
        head.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
    rng = random.Random(cfg.seed)
    order = list(range(len(samples)))
    rng.shuffle(order)
    curve = json.loads((out / "curve.json").read_text()) if (out / "curve.json").exists() else []
    head.train()
    bar = tqdm(total=cfg.steps, initial=step, desc="eagle train", unit="step")
    ema = None
    while step < cfg.steps:
        idx = [order[(step * cfg.batch_size + j) % len(order)] for j in range(cfg.batch_size)]
        seqs = [samples[i]["prompt_ids"] + samples[i]["answer_ids"] for i in idx]
        T = max(map(len, seqs))
        ids = torch.zeros(len(idx), T, dtype=torch.long)
        valid = torch.zeros(len(idx), T, dtype=torch.bool)
        f = torch.zeros(len(idx), T, feats[0].shape[-1])
        for b, (i, seq) in enumerate(zip(idx, seqs)):
            ids[b, : len(seq)] = torch.tensor(seq)
            valid[b, : len(seq)] = True
            f[b, : len(seq)] = feats[i].float()
        f = f + (torch.rand_like(f) - 0.5) * 0.2 * valid.unsqueeze(-1)   # EAGLE's uniform feature noise U(−0.1, 0.1)
        dev = w_lm.device
        loss, fl, acc = unrolled_loss(head, embed, w_lm, f.to(dev), ids.to(dev), valid.to(dev), to_small.to(dev),
                                      cfg.unroll)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 0.5)
        opt.step()
        sched.step()
        step += 1
        ema = (loss.item(), acc) if ema is None else (0.95 * ema[0] + 0.05 * loss.item(), 0.95 * ema[1] + 0.05 * acc)
        bar.update(1)
        bar.set_postfix(loss=f"{ema[0]:.3f}", acc1=f"{ema[1]:.2f}")
        if step % 25 == 0:
            curve.append({"step": step, "loss": round(ema[0], 4), "acc1": round(ema[1], 4)})
        if step % cfg.save_every == 0 or step == cfg.steps:
            torch.save({"model": head.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "step": step},
                       ckpt.with_suffix(".tmp"))
            ckpt.with_suffix(".tmp").replace(ckpt)
            (out / "curve.json").write_text(json.dumps(curve))
            _export(cfg, head, subset, out, step, curve)
    bar.close()
    head.eval()
    return out / "head"


def _export(cfg, head, kept, out: Path, step: int, curve: list, estimate: dict | None = None) -> None:
    note = {"config": {**asdict(cfg), "extra_text": list(cfg.extra_text)}, "step": step,
            "curve_tail": curve[-3:], "saved_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    if estimate:
        note["held_out"] = estimate
    save_head(head, out / "head", kept, extra={"specsweep_distill.json": json.dumps(note, indent=1)})


# ---------------------------------------------------------------- phase 5: held-out estimate
def held_out_estimate(cfg: EagleDistillConfig, target, tok, folder: Path) -> dict:
    """Greedy chains of ``eval_gamma`` with the head through the live engine on prompts outside the training set."""
    seen = set(distill_prompts(cfg.prompts, seed=cfg.seed))
    held = [p for p in distill_prompts(cfg.prompts + 4 * cfg.eval_prompts, seed=cfg.seed + 1) if p not in seen]
    held = held[: cfg.eval_prompts]
    template = default_template(cfg.target, tok)
    engine = SpecEngine(target, EagleDrafter.from_folder(folder, target), eos_ids(tok, target))
    lengths = []
    for text in tqdm(held, desc="eagle held-out estimate", unit="prompt"):
        ids = render(template, tok, [{"role": "user", "content": text}])
        lengths += engine.generate(ids, build("fixed", cfg.eval_gamma), max_new_tokens=cfg.max_new_tokens).accept_lengths
    mal = sum(lengths) / max(len(lengths), 1)
    sd = (sum((x - mal) ** 2 for x in lengths) / max(len(lengths) - 1, 1)) ** 0.5
    half = 1.96 * sd / max(len(lengths), 1) ** 0.5
    return {"prompts": len(held), "gamma": cfg.eval_gamma, "steps": len(lengths), "mean_accepted_length": round(mal, 3),
            "ci95": [round(mal - half, 3), round(mal + half, 3)]}


def run_distill_eagle(cfg: EagleDistillConfig) -> Path:
    from actors.loading.models import ModelSpec, load_model, load_tokenizer  # heavy: torch

    cfg.validate()                               # --unroll included (jobs/distill/draft.py's LIMITS)
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)                          # checked by cfg.validate() (jobs/store/output.py's check_writable)
    meta = out / "distill_config.json"
    key = {k: v for k, v in asdict(cfg).items() if k in ("target", "vocab", "prompts", "max_new_tokens", "topk", "seed")}
    key["kind"] = "eagle"
    if meta.exists() and json.loads(meta.read_text()) != key:
        raise SpecsweepError(f"{out} holds a distillation with other settings ({meta}): pass another --out or delete it")
    spec = ModelSpec(cfg.target, device=cfg.device)
    tok = load_tokenizer(spec)
    target = load_model(spec)
    target_parts(target)                         # refuse a target without readable features before any work
    out.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps(key))
    samples = build_data(cfg, target, tok, out)
    feats = build_features(target, samples, out)
    full = target.get_output_embeddings().weight.shape[0]
    vm = out / "draft_vocab.json"
    if vm.exists():
        kept = json.loads(vm.read_text())["kept_ids"]
    else:
        size = cfg.vocab if cfg.vocab and cfg.vocab < full else full
        kept = kept_vocab(samples, size, full, [tok.eos_token_id, tok.bos_token_id, tok.pad_token_id])
        vm.write_text(json.dumps({"kept_ids": kept}))
    head = init_head(target, seed=cfg.seed)
    subset = kept if len(kept) < full else None          # the full vocabulary needs no draft_vocab.json
    folder = train_head(cfg, target, head, samples, feats, kept, subset, out)
    estimate = held_out_estimate(cfg, target, tok, folder)
    curve = json.loads((out / "curve.json").read_text()) if (out / "curve.json").exists() else []
    _export(cfg, head, subset, out, cfg.steps, curve, estimate)
    print(f"held-out mean accepted length at γ={estimate['gamma']}: {estimate['mean_accepted_length']:.3f} "
          f"(95 % CI {estimate['ci95'][0]:.3f}–{estimate['ci95'][1]:.3f}, {estimate['steps']} steps on "
          f"{estimate['prompts']} prompts)")
    return folder
