"""What training an EAGLE-1/2 head and an EAGLE-3 head share (``jobs/distill/eagle.py``, ``jobs/distill/eagle3.py``):
the target's features over the self-distillation data, the batches with the target's own next-token distribution as
the teacher, the unrolled forward of training-time test, the soft cross-entropy, and the resumable training loop with
its progress bar, curve and held-out top-1.

Index convention. A sample is ``prompt_ids`` (P tokens) + ``answer_ids``; sequence position p holds token t_p. Head
query j reads the feature at position j and the embedding of t_{j+1} and is scored on t_{j+2}: its teacher is the
target's distribution over the token at position j + 2, stored for answer tokens only (``top_ids`` / ``top_logp``
[len(answer), K]: the target's top-K next-token log-probabilities, from the data phase of ``jobs/distill/draft.py`` or
the feature forward below). Only response tokens are scored (the EAGLE papers' loss mask); prompt positions are keys.

Training-time test ("EAGLE-3", Li et al. 2025, §3.3; HASS): unroll step d ≥ 2 feeds at query j the head's step-(d−1)
output at j − 1 (what drafting feeds) and gives query j the keys a live draft of depth d sees — the step-1 keys up to
the draft's root j − d + 1, then one key per earlier step e (position j − d + e) and its own.
"""
from __future__ import annotations

import json
import math
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from tqdm import tqdm

from jobs.distill.resume_files import load_resume, read_json, save_atomically, write_atomically
from policies.errors import SpecsweepError

SHARD = 256                    # samples per features-*.pt shard


# ---------------------------------------------------------------- phase 2: features (and missing teachers)
@torch.no_grad()
def build_features(target, samples: list[dict], out: Path, layers: tuple[int, ...] = (-1,), batch: int = 16,
                   topk: int = 32) -> list[torch.Tensor]:
    """Per sample [L, len(layers)·h] fp16: the target's ``output_hidden_states[i]`` for i in ``layers`` over prompt +
    answer, concatenated (EAGLE-1/2: (−1,), the final hidden state; EAGLE-3: its three auxiliary layers). A sample
    without a teacher gets ``top_ids``/``top_logp`` from the same forward's logits. Resumable by shard."""
    feats: list[torch.Tensor] = []
    for s in sorted(out.glob("features-*.pt")):
        feats += load_resume(s)
    from actors.drafting.eagle_head import target_parts  # heavy: torch

    base, _ = target_parts(target)
    device = target.device
    bar = tqdm(total=len(samples), initial=len(feats), desc="head features (target forward)", unit="seq")
    pending: list[torch.Tensor] = []
    start = len(feats)
    for i in range(start, len(samples), batch):
        chunk = samples[i:i + batch]
        seqs = [s["prompt_ids"] + s["answer_ids"] for s in chunk]
        width = max(map(len, seqs))
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        for b, seq in enumerate(seqs):       # right padding: causal attention keeps real positions exact
            ids[b, : len(seq)] = torch.tensor(seq)
        need_teacher = any("top_ids" not in s for s in chunk)
        # the base model's hidden states are the causal LM's; its LM head runs only for a missing teacher
        res = (target if need_teacher else base)(input_ids=ids.to(device), output_hidden_states=True)
        hidden = torch.cat([res.hidden_states[i] for i in layers], dim=-1).to(torch.float16).cpu()
        for b, (s, seq) in enumerate(zip(chunk, seqs)):
            pending.append(hidden[b, : len(seq)].clone())           # a clone: a saved view would keep the batch
            if "top_ids" not in s:
                p, n = len(s["prompt_ids"]), len(s["answer_ids"])
                logp = torch.log_softmax(res.logits[b, p - 1:p - 1 + n].float(), -1).topk(min(topk, res.logits.shape[-1]))
                s["top_ids"], s["top_logp"] = logp.indices.to(torch.int32).cpu(), logp.values.to(torch.float16).cpu()
        bar.update(len(seqs))
        if len(pending) >= SHARD or i + batch >= len(samples):
            save_atomically(pending, out / f"features-{start:05d}.pt")
            feats += pending
            start += len(pending)
            pending = []
    bar.close()
    return feats


# ---------------------------------------------------------------- batches
@dataclass
class Batch:
    ids: torch.Tensor          # [B, T] tokens (0 past a row's end)
    feats: torch.Tensor        # [B, T, F] target features (fp16 as stored; float32 once moved by to())
    scored: torch.Tensor       # [B, T] bool: a response token with a teacher
    teacher_ids: torch.Tensor  # [B, T, K] the teacher's top-K ids on the draft vocabulary (−1: not draftable)
    teacher_p: torch.Tensor    # [B, T, K] their probabilities

    def to(self, device) -> "Batch":
        """On ``device`` (copies from pinned memory do not block the host), features as float32."""
        moved = [t.to(device, non_blocking=True) for t in (self.ids, self.feats, self.scored, self.teacher_ids,
                                                              self.teacher_p)]
        moved[1] = moved[1].float()
        return Batch(*moved)


def make_batch(samples: list[dict], feats: list[torch.Tensor], idx: list[int], to_small: torch.Tensor,
               pin: bool = False) -> Batch:
    """Right-padded batch of samples ``idx``; ``to_small`` maps a target id to its draft-vocabulary id (−1: none).
    Features stay in their stored fp16 (half the bytes to copy; :meth:`Batch.to` widens them); ``pin``: in pinned
    host memory, for an asynchronous copy to a GPU."""
    seqs = [samples[i]["prompt_ids"] + samples[i]["answer_ids"] for i in idx]
    B, T = len(idx), max(map(len, seqs))
    K = max(samples[i]["top_ids"].shape[-1] for i in idx)
    ids = torch.zeros(B, T, dtype=torch.long)
    f = torch.zeros(B, T, feats[idx[0]].shape[-1], dtype=feats[idx[0]].dtype)
    scored = torch.zeros(B, T, dtype=torch.bool)
    tid = torch.full((B, T, K), -1, dtype=torch.long)
    tp = torch.zeros(B, T, K)
    for b, (i, seq) in enumerate(zip(idx, seqs)):
        s, L, P = samples[i], len(seq), len(samples[i]["prompt_ids"])
        ids[b, :L] = torch.tensor(seq)
        f[b, :L] = feats[i]
        n = len(s["answer_ids"])
        k = s["top_ids"].shape[-1]
        scored[b, P:P + n] = True
        tid[b, P:P + n, :k] = to_small[s["top_ids"].long()]
        tp[b, P:P + n, :k] = s["top_logp"].float().exp()
    return Batch(*(t.pin_memory() if pin else t for t in (ids, f, scored, tid, tp)))


def prefetched(make: Callable[[int], Batch], first: int, last: int, ahead: int = 2):
    """``make(step)`` for step = ``first`` … ``last`` − 1 in order, each built on a worker thread up to ``ahead``
    steps before it is taken, so building the next batches on the host overlaps the device's work on this one."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        queued = [pool.submit(make, s) for s in range(first, min(first + ahead, last))]
        for s in range(first, last):
            if s + ahead < last:
                queued.append(pool.submit(make, s + ahead))
            yield queued.pop(0).result()


def soft_ce(logits: torch.Tensor, teacher_ids: torch.Tensor, teacher_p: torch.Tensor, sel: torch.Tensor | None = None):
    """(loss, rows, top-1 hits) of −Σ_k p_k log q(k) over ``logits`` [M, V_draft] rows (those with ``sel`` [M] when
    given): the teacher's top-K restricted to the draft vocabulary and renormalized there (the EAGLE-3
    draft-vocabulary target; soft labels as EAGLE-1/2 train). A row whose teacher puts no top-K mass in the draft
    vocabulary is left out of the loss; top-1 counts the head's argmax equal to the teacher's top token (a miss when
    that token is not draftable). ``rows`` and ``hits`` are 0-d tensors. With ``sel`` no value is read back from the
    device (a boolean index would sync the host), so a GPU step queues all its kernels; the price is scoring every
    row, which on a CPU costs more than the sync saves (:func:`scored_rows` picks the form)."""
    sel = torch.ones(logits.shape[0], dtype=torch.bool, device=logits.device) if sel is None else sel
    p = teacher_p * (teacher_ids >= 0)
    mass = p.sum(-1)
    weight = ((mass > 0) & sel).float()
    logq = F.log_softmax(logits.float(), -1)
    picked = logq.gather(-1, teacher_ids.clamp_min(0))
    loss = -((p / mass.clamp_min(1e-9).unsqueeze(-1)) * picked).sum(-1)
    loss = (loss * weight).sum() / weight.sum().clamp_min(1.0)
    hits = ((logits.argmax(-1) == teacher_ids[:, 0]) & sel).sum()
    return loss, sel.sum(), hits


def scored_rows(out: torch.Tensor, sel: torch.Tensor, *per_row: torch.Tensor):
    """(rows of ``out`` [B, n, …] to score, their ``per_row`` tensors [B, n, …], the selection for :func:`soft_ce`):
    on a GPU every row with ``sel`` [B, n] as a weight (no host sync), elsewhere only the selected rows (an index:
    half the LM-head work and activation memory when prompts are as long as answers)."""
    if out.is_cuda:
        return out.flatten(0, 1), [t.flatten(0, 1) for t in per_row], sel.flatten()
    return out[sel], [t[sel] for t in per_row], None


# ---------------------------------------------------------------- training-time test
def unroll_masks(n: int, unroll: int, device) -> list[torch.Tensor]:
    """Per unroll step d = 1 … ``unroll``: [n, d·n] bool, the keys query j sees (module docstring)."""
    j = torch.arange(n, device=device)
    masks = []
    for d in range(1, unroll + 1):
        allowed = torch.zeros(n, d * n, dtype=torch.bool, device=device)
        allowed[:, :n] = j[None, :] <= (j[:, None] - d + 1)
        for e in range(2, d + 1):
            allowed[:, (e - 1) * n:e * n] = j[None, :] == (j[:, None] - d + e)
        allowed[:, (d - 1) * n:] |= torch.eye(n, dtype=torch.bool, device=device)    # a query sees its own key
        masks.append(allowed)
    return masks


def unrolled(head, embed, batch: Batch, unroll: int, step_loss: Callable, noise: float = 0.0):
    """Run ``head`` ``unroll`` steps over ``batch`` and sum ``step_loss(d, out, sel, batch)`` (each returns (loss,
    rows, hits)); ``sel`` [B, n] marks the scored queries of step d (a query of step d needs d − 1 earlier outputs).
    ``noise``: the step-1 input features + U(−noise, noise) (EAGLE's feature noise; targets stay clean).
    Returns (loss, rows and hits per step)."""
    from actors.drafting.eagle_head import HeadCache  # heavy: torch

    B, T = batch.ids.shape
    n = T - 2
    emb = embed(batch.ids[:, 1:n + 1])
    pos = torch.arange(n, device=emb.device)[None].expand(B, n)
    cache = HeadCache()
    x = batch.feats[:, :n]
    if noise:
        x = x + (torch.rand_like(x) - 0.5) * 2 * noise
    total, stats = 0.0, []
    for d, allowed in enumerate(unroll_masks(n, unroll, emb.device), start=1):
        out = head(x, emb, pos, allowed[None, None], cache)
        sel = batch.scored[:, 2:n + 2].clone()
        sel[:, : d - 1] = False
        loss, rows, hits = step_loss(d, out, sel, batch)
        total = total + loss
        stats.append((rows, hits))
        x = torch.cat([out[:, :1] * 0, out[:, :-1]], dim=1)          # step d + 1 reads the output at j − 1
    return total, stats


# ---------------------------------------------------------------- the loop
@dataclass
class LoopSettings:
    steps: int
    batch_size: int
    lr: float
    warmup: int
    save_every: int
    seed: int
    unroll: int
    clip: float
    betas: tuple[float, float] = (0.9, 0.95)
    noise: float = 0.0
    heldout: int = 32          # samples kept out of training for the held-out top-1
    deadline: float = 0.0      # time.monotonic() by which training ends (0 = none); see :func:`fit_deadline`


# Rule for a time budget: the step rate is read over PROBE_STEPS steps after the first SKIP_STEPS of a leg (those
# carry one-off start-up costs: allocator, kernels' first launch), the held-out checks and exports inside that window
# left out, and only BUDGET_SHARE of the time left is planned, the rest kept for the checks and exports to come.
# The cut total is stored in checkpoint.pt: a resume with the same --steps keeps it (a larger --steps starts a new
# leg whose schedule runs to the new --steps).
SKIP_STEPS, PROBE_STEPS, BUDGET_SHARE = 10, 40, 0.9
EMA_READ = 25                  # the loss/top-1 EMAs are read back (a host sync) every this many steps and at saves;
                               # the curve gets a point every EMA_READ steps


def fit_deadline(step: int, total: int, rate_s: float, now: float, deadline: float) -> int:
    """The total step count that ends by ``deadline`` at ``rate_s`` seconds a step (never above ``total``, never
    below ``step + 1``), so the cosine schedule still decays to zero within the budget."""
    fits = step + int(BUDGET_SHARE * max(deadline - now, 0.0) / max(rate_s, 1e-9))
    return max(step + 1, min(total, fits))


def split(samples: list, settings: LoopSettings) -> tuple[list[int], list[int]]:
    """(training, held-out) sample indices: a seeded shuffle, the last ``heldout`` (at most a fifth) held out."""
    order = list(range(len(samples)))
    random.Random(settings.seed).shuffle(order)
    k = min(settings.heldout, len(order) // 5)
    return (order[:-k], order[-k:]) if k else (order, [])


def train_loop(settings: LoopSettings, head, embed, samples, feats, to_small, step_loss, export: Callable,
               out: Path, desc: str) -> None:
    """AdamW (``betas``, no weight decay), linear warm-up then cosine decay to zero at ``steps``, gradient clipping at
    ``clip``, fp32 weights (on a GPU its matmuls in TF32); ``checkpoint.pt``, ``curve.json`` and ``export(step,
    curve)`` every ``save_every`` steps and at the end; resumes from ``checkpoint.pt``. With ``deadline`` the total is cut once the step rate is measured
    (:func:`fit_deadline`) and training stops, exported, if the deadline passes anyway. The bar shows the loss and
    top-1 (EMA over steps) and the last held-out top-1 at step 1 and at the last unroll step."""
    if len(samples) < 2:
        raise SpecsweepError(f"head training needs at least 2 samples, got {len(samples)}")
    opt = torch.optim.AdamW(head.parameters(), lr=settings.lr, betas=settings.betas, weight_decay=0.0)
    total = settings.steps
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(settings.warmup, 1)) * 0.5 * (
        1 + math.cos(math.pi * min(s, total) / total)))
    ckpt = out / "checkpoint.pt"
    step = 0
    if ckpt.exists():
        state = load_resume(ckpt, weights_only=True)
        head.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
        if state.get("steps") == settings.steps:     # the same --steps: a step count a time budget cut stays cut
            total = state.get("total", total)
    train_idx, held_idx = split(samples, settings)
    curve = read_json(out / "curve.json") if (out / "curve.json").exists() else []
    dev = next(head.parameters()).device
    to_small = to_small.to(dev)
    bar = tqdm(total=total, initial=step, desc=desc, unit="step")
    ema = None                                  # (loss, top-1) EMAs as device tensors, read every EMA_READ steps
    shown = (0.0, 0.0)
    held = {}
    head.train()
    leg = step
    probe_from = None
    paused = paused_at_probe = 0.0              # seconds of held-out checks and exports, left out of the step rate
    pin = dev.type == "cuda"
    small = to_small.cpu()
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32 or pin     # a GPU trains its fp32 matmuls on TF32 tensor cores

    def batch_at(s: int) -> Batch:
        return make_batch(samples, feats, [train_idx[(s * settings.batch_size + j) % len(train_idx)]
                                           for j in range(settings.batch_size)], small, pin=pin)

    for host_batch in prefetched(batch_at, step, settings.steps):
        if step >= total:                       # a time budget cut the schedule short
            break
        batch = host_batch.to(dev)
        loss, stats = unrolled(head, embed, batch, settings.unroll, step_loss, settings.noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), settings.clip)
        opt.step()
        sched.step()
        step += 1
        cur = torch.stack([loss.detach().float(), stats[0][1] / stats[0][0].clamp_min(1)])
        ema = cur if ema is None else 0.95 * ema + 0.05 * cur
        bar.update(1)
        if step - leg in (SKIP_STEPS, SKIP_STEPS + PROBE_STEPS):
            ema.tolist()                        # the step rate's window starts and ends with the device caught up
        if settings.deadline:
            now = time.monotonic()
            if step - leg == SKIP_STEPS:
                probe_from, paused_at_probe = now, paused
            elif probe_from is not None and step - leg == SKIP_STEPS + PROBE_STEPS:
                rate = (now - probe_from - (paused - paused_at_probe)) / PROBE_STEPS
                fitted = fit_deadline(step, total, rate, now, settings.deadline)
                if fitted < total:
                    tqdm.write(f"{desc}: {rate * 1000:.0f} ms a step; the time budget "
                               f"fits {fitted} of {total} steps: the schedule now ends at step {fitted}")
                    total = bar.total = fitted
            if now >= settings.deadline and step < total:
                tqdm.write(f"{desc}: time budget spent at step {step} of {total}: stopping here")
                total = bar.total = step
        if step % EMA_READ == 0 or step % settings.save_every == 0 or step == total:
            shown = tuple(ema.tolist())         # the one read-back (host sync) of a step that has one
            bar.set_postfix(loss=f"{shown[0]:.3f}", top1=f"{shown[1]:.2f}", **held)
        if step % EMA_READ == 0:
            curve.append({"step": step, "loss": round(shown[0], 4), "acc1": round(shown[1], 4)})
        if step % settings.save_every == 0 or step == total:
            save_from = time.monotonic()
            if held_idx:
                h = heldout_top1(settings, head, embed, samples, feats, held_idx, to_small, step_loss)
                held = {"held1": f"{h[0]:.2f}", f"held{settings.unroll}": f"{h[-1]:.2f}"}
                bar.set_postfix(loss=f"{shown[0]:.3f}", top1=f"{shown[1]:.2f}", **held)
                if curve and curve[-1]["step"] == step:
                    curve[-1]["heldout_top1"] = [round(x, 4) for x in h]
                else:
                    curve.append({"step": step, "loss": round(shown[0], 4), "acc1": round(shown[1], 4),
                                  "heldout_top1": [round(x, 4) for x in h]})
            save_atomically({"model": head.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                             "step": step, "total": total, "steps": settings.steps}, ckpt)
            write_atomically(json.dumps(curve), out / "curve.json")
            export(step, curve)
            paused += time.monotonic() - save_from
    bar.close()
    torch.backends.cuda.matmul.allow_tf32 = tf32
    head.eval()


@torch.no_grad()
def heldout_top1(settings: LoopSettings, head, embed, samples, feats, held_idx, to_small, step_loss) -> list[float]:
    """Top-1 agreement with the target per unroll step on the held-out samples (no noise, no gradient)."""
    was = head.training
    head.eval()
    rows = [0] * settings.unroll
    hits = [0] * settings.unroll
    for s in range(0, len(held_idx), settings.batch_size):
        batch = make_batch(samples, feats, held_idx[s:s + settings.batch_size], to_small.cpu()).to(to_small.device)
        _, stats = unrolled(head, embed, batch, settings.unroll, step_loss)
        for d, (r, h) in enumerate(stats):
            rows[d] += int(r)
            hits[d] += int(h)
    head.train(was)
    return [h / max(r, 1) for r, h in zip(rows, hits)]


def draft_vocab_map(kept: list[int], full: int) -> torch.Tensor:
    """[full] the draft-vocabulary id of each target id, −1 where not draftable."""
    to_small = torch.full((full,), -1, dtype=torch.long)
    to_small[torch.tensor(kept)] = torch.arange(len(kept))
    return to_small
