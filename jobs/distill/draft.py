"""``specsweep distill``: train a small draft for any target by knowledge distillation.

Pipeline (every phase resumes from what ``--out`` already holds):

1. **data** — the target answers the prompt set of ``actors/loading/builtin_prompts.py``
   (plus optional local text files, and with ``--own-texts N`` reading tasks around N texts the target
   wrote itself, ``jobs/distill/own_texts.py``) greedily; for every answer position we keep the
   target's top-``topk`` next-token log-probabilities from that same forward, so the
   teacher is never run again. Written to ``answers-*.pt`` shards.
2. **vocab** — optionally keep only the ``vocab`` most frequent target tokens in the
   draft's head (``vocab_map.json``; see ``actors/loading/reduced_vocab.py``).
3. **init** — the draft copies the target's config with ``layers`` decoder layers,
   initialised from the target's embeddings (kept rows), first layers, final norm.
4. **train** — minimise the cross-entropy between the teacher's renormalised top-k
   distribution and the draft's distribution at every answer position, i.e. the KL
   divergence KL(p_target || q_draft) up to the teacher's entropy (Hinton et al. 2015,
   teacher forcing on the target's own outputs). AdamW, linear warm-up, cosine decay.
   ``checkpoint.pt`` and a loadable HF folder ``draft/`` are written every
   ``save_every`` steps.

Every resume file is written to a twin and renamed into place (``jobs/distill/resume_files.py``): an interrupted save
never leaves a torn one, and one that cannot be read is refused in one line naming the file to delete.
"""
from __future__ import annotations

import copy
import json
import math
import random
import shutil
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from actors.loading.builtin_prompts import distill_prompts
from actors.loading.instruction_pool import varied_prompts
from actors.loading.templates import default_template, render
from jobs.distill.own_texts import own_text_prompts
from jobs.distill.padding import left_padded
from jobs.distill.resume_files import load_resume, read_json, save_atomically, write_atomically
from jobs.inputs import check_text_file
from jobs.store.output import check_writable
from policies.errors import SpecsweepError


@dataclass
class DistillConfig:
    target: str = "smollm2-135m"
    out: str = "runs/distill"
    layers: int = 4
    vocab: int = 8192            # 0 keeps the full vocabulary
    prompts: int = 1200
    extra_text: tuple = ()
    max_new_tokens: int = 160
    gen_batch: int = 32
    topk: int = 32
    steps: int = 3000
    batch_size: int = 8
    lr: float = 5e-4
    warmup: int = 100
    save_every: int = 100
    seed: int = 0
    device: str = "auto"
    threads: int = 0             # 0 = torch default
    minutes: float = 0.0         # heads: wall-time budget of answers + features + training (0 = none)
    prompt_set: str = "builtin"  # builtin: actors/loading/builtin_prompts.py; varied: actors/loading/instruction_pool/
    answer_temperature: float = 0.0  # 0: the target's greedy answers; > 0: answers sampled at this temperature
    own_texts: int = 0           # texts the target writes, then reads (jobs/distill/own_texts.py); 0 = none

    def validate(self):
        """Every setting within :data:`LIMITS` (a documented range each), ``--out`` a folder that can be made and
        every ``--extra-text`` a UTF-8 text file — all before the target loads (``jobs/store/output.py``,
        ``jobs/inputs.py``)."""
        for name, (least, most) in LIMITS.items():
            v = getattr(self, name, None)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not least <= v <= most):
                raise SpecsweepError(f"distill --{name.replace('_', '-')} must be >= {least} and <= {most}, an integer "
                                     f"(got {str(v)[:40]})")
        if self.prompt_set not in PROMPT_SETS:
            raise SpecsweepError(f"distill --prompt-set must be one of {', '.join(PROMPT_SETS)}, got {self.prompt_set!r}")
        if not (0 < self.lr < 1):
            raise SpecsweepError(f"distill --lr must be in (0, 1), got {self.lr}")
        t = self.answer_temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= MAX_ANSWER_TEMPERATURE:
            raise SpecsweepError(f"distill --answer-temperature must be >= 0 and <= {MAX_ANSWER_TEMPERATURE:g} (0 = "
                                 f"greedy answers), got {t}")
        if isinstance(self.minutes, bool) or not isinstance(self.minutes, (int, float)) or not 0 <= self.minutes <= 1e6:
            raise SpecsweepError(f"distill --minutes must be >= 0 and <= 1000000 (0 = no budget), got {self.minutes}")
        check_writable(self.out, "distill --out")
        for f in self.extra_text:
            check_text_file(f, "--extra-text")


# Rule: the range of every training size distill takes (inclusive); beyond it a run would not finish on any machine
# this tool targets (``--unroll`` 1000 unrolls the head a thousand times per step).
LIMITS = {"layers": (1, 256), "prompts": (1, 1_000_000), "max_new_tokens": (1, 8192), "gen_batch": (1, 4096),
          "topk": (1, 4096), "steps": (1, 10_000_000), "batch_size": (1, 4096), "save_every": (1, 10_000_000),
          "vocab": (0, 2 ** 24), "warmup": (0, 10_000_000), "unroll": (1, 16), "eval_prompts": (1, 100_000),
          "eval_gamma": (1, 64), "own_texts": (0, 1_000_000)}


PROMPT_SETS = ("builtin", "varied")
MAX_ANSWER_TEMPERATURE = 2.0     # past it a small target's samples are mostly noise
# The settings the data phase's output depends on: a folder holding another's answers is refused.
DATA_KEYS = ("target", "vocab", "prompts", "max_new_tokens", "topk", "seed", "prompt_set", "answer_temperature",
             "own_texts")


def data_key(cfg: DistillConfig, *more: str) -> dict:
    """The settings of :data:`DATA_KEYS` (and ``more``) a run folder records; ``prompt_set`` only when not the
    built-in one, so folders written before it existed still resume."""
    key = {k: v for k, v in asdict(cfg).items() if k in DATA_KEYS + more}
    if key.get("prompt_set") == "builtin":
        del key["prompt_set"]
    for optional in ("answer_temperature", "own_texts"):      # recorded only when used: older folders resume
        if not key.get(optional):
            key.pop(optional, None)
    return key


# ---------------------------------------------------------------- phase 1: data
def prompt_source(cfg: DistillConfig):
    """``compose(n, seed)`` of the prompt set ``cfg.prompt_set`` (both hold out the ``sample`` questions)."""
    return varied_prompts if cfg.prompt_set == "varied" else distill_prompts


def _prompt_texts(cfg: DistillConfig) -> list[str]:
    texts = prompt_source(cfg)(cfg.prompts, seed=cfg.seed)
    for f in cfg.extra_text:
        path = Path(f)
        if not path.exists():
            raise SpecsweepError(f"--extra-text file {f} does not exist")
        texts += [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return texts


@torch.no_grad()
def build_data(cfg: DistillConfig, model, tok, out: Path) -> list[dict]:
    """The target's answers — greedy, or sampled at ``answer_temperature`` (self-distillation text that strays from
    the greedy path, so a head also sees states greedy decoding would not reach) — with the target's own top-k
    log-probs (temperature 1, the teacher either way) at each answer position. Sampling is seeded per batch from
    ``seed`` and the batch's first index, so a resumed run (same ``--gen-batch``) draws what an uninterrupted one
    would."""

    template = default_template(cfg.target, tok)
    texts = _prompt_texts(cfg) + own_text_prompts(cfg.own_texts, cfg.seed, cfg.target, model, tok, out, cfg.gen_batch)
    shards = sorted(out.glob("answers-*.pt"))
    samples: list[dict] = []
    for s in shards:
        samples += load_resume(s)
    for i, s in enumerate(samples):             # answers line up with prompts, or the folder is another run's
        if i >= len(texts) or s.get("prompt", texts[i]) != texts[i]:
            raise SpecsweepError(f"distill --out {out} holds an answer to another prompt at index {i} (an --extra-text "
                                 "file or own_texts.json changed since): use a new --out")
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    eos = tok.eos_token_id
    device = model.device
    todo = list(range(len(samples), len(texts)))
    bar = tqdm(total=len(texts), initial=len(samples), desc="distill data (target answers)", unit="prompt")
    for start in range(0, len(todo), cfg.gen_batch):
        idx = todo[start:start + cfg.gen_batch]
        prompts = [render(template, tok, [{"role": "user", "content": texts[i]}]) for i in idx]
        ids, mask = left_padded(prompts, pad, device)
        width = ids.shape[1]
        decoding = {"do_sample": False}
        if cfg.answer_temperature > 0:
            torch.manual_seed(cfg.seed * 1_000_003 + idx[0])
            decoding = {"do_sample": True, "temperature": float(cfg.answer_temperature), "top_k": 0, "top_p": 1.0}
        gen = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=cfg.max_new_tokens, **decoding,
                             output_logits=True, return_dict_in_generate=True, pad_token_id=pad)
        answers = gen.sequences[:, width:].tolist()
        # per generated position [B, V] → top-k, then stacked [B, T, k]: never a float [B, T, V] copy of all logits;
        # one copy to the host per batch, each sample's rows cloned out of it (a saved view would keep the whole)
        tops = [torch.log_softmax(step.float(), -1).topk(cfg.topk, dim=-1) for step in gen.logits]
        del gen
        top_ids = torch.stack([t.indices for t in tops], 1).to(torch.int32).cpu()
        top_logp = torch.stack([t.values for t in tops], 1).to(torch.float16).cpu()
        shard = []
        for b, i in enumerate(idx):
            ans = answers[b]
            n = len(ans)
            if eos in ans:
                n = ans.index(eos) + 1
            shard.append({"prompt": texts[i], "prompt_ids": prompts[b], "answer_ids": ans[:n],
                          "top_ids": top_ids[b, :n].clone(), "top_logp": top_logp[b, :n].clone()})
        save_atomically(shard, out / f"answers-{len(samples):05d}.pt")
        samples += shard
        bar.update(len(idx))
    bar.close()
    return samples


# ---------------------------------------------------------------- phase 2-3: vocab and init
def kept_vocab(samples: list[dict], size: int, full: int, always: list[int]) -> list[int]:
    """The ``size`` most frequent ids over prompts, answers and teacher top-k (ties by id)."""
    counts: Counter = Counter()
    for s in samples:
        counts.update(s["prompt_ids"])
        counts.update(s["answer_ids"])
        counts.update(s["top_ids"][:, :4].flatten().tolist())
    ranked = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    kept = list(dict.fromkeys([t for t in always if t is not None and 0 <= t < full] + ranked))[:size]
    if len(kept) < size:  # pad with the lowest unused ids so the head has the asked-for width
        used = set(kept)
        kept += [t for t in range(full) if t not in used][: size - len(kept)]
    return sorted(kept)


def init_draft(target, layers: int, kept: list[int] | None):
    """Target config with ``layers`` layers; embeddings (kept rows + one 'other' row), first layers, final norm."""
    from transformers import AutoModelForCausalLM  # heavy: transformers

    cfg = copy.deepcopy(target.config)
    n_target = cfg.num_hidden_layers
    if layers > n_target:
        raise SpecsweepError(f"distill --layers {layers} exceeds the target's {n_target} layers")
    cfg.num_hidden_layers = layers
    if getattr(cfg, "layer_types", None):
        cfg.layer_types = cfg.layer_types[:layers]
    full_vocab = target.get_input_embeddings().weight.shape[0]
    if kept is not None:
        cfg.vocab_size = len(kept) + 1
    draft = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    tsd = target.state_dict()
    dsd = draft.state_dict()
    emb_t = target.get_input_embeddings().weight.detach().float()
    with torch.no_grad():
        for name in dsd:
            if name in tsd and tsd[name].shape == dsd[name].shape:
                dsd[name].copy_(tsd[name])
        if kept is not None:
            rows = torch.cat([emb_t[torch.tensor(kept)], emb_t.mean(0, keepdim=True)])
            draft.get_input_embeddings().weight.copy_(rows)
            out_t = target.get_output_embeddings()
            if out_t is not None and not getattr(cfg, "tie_word_embeddings", False):
                w = out_t.weight.detach().float()
                draft.get_output_embeddings().weight.copy_(torch.cat([w[torch.tensor(kept)], w.mean(0, keepdim=True)]))
    return draft, full_vocab


# ---------------------------------------------------------------- phase 4: train
def _batch(samples, order, step, bs, to_reduced, k_small):
    """Right-padded batch: input ids (reduced), mask, answer-position mask, soft teacher targets."""
    items = [samples[order[(step * bs + j) % len(order)]] for j in range(bs)]
    seqs = [s["prompt_ids"] + s["answer_ids"] for s in items]
    width = max(map(len, seqs))
    ids = torch.zeros(bs, width, dtype=torch.long)
    mask = torch.zeros(bs, width, dtype=torch.long)
    tgt_idx, tgt_w, pos = [], [], []
    for b, (s, seq) in enumerate(zip(items, seqs)):
        ids[b, : len(seq)] = torch.tensor(seq)
        mask[b, : len(seq)] = 1
        p0 = len(s["prompt_ids"]) - 1           # logits at p0 + t predict answer token t
        ti = s["top_ids"].long()
        red = to_reduced[ti] if to_reduced is not None else ti
        w = s["top_logp"].float().exp()
        if to_reduced is not None:
            w = torch.where(red < k_small, w, torch.zeros_like(w))
            red = torch.where(red < k_small, red, torch.zeros_like(red))
        w = w / w.sum(-1, keepdim=True).clamp_min(1e-9)
        for t in range(len(s["answer_ids"])):
            pos.append((b, p0 + t))
        tgt_idx.append(red)
        tgt_w.append(w)
    if to_reduced is not None:
        ids = to_reduced[ids].masked_fill(mask == 0, 0)
    return ids, mask, torch.tensor(pos), torch.cat(tgt_idx), torch.cat(tgt_w)


def train(cfg: DistillConfig, draft, samples, kept, full_vocab, tok, out: Path) -> Path:
    device = next(draft.parameters()).device
    to_reduced = None
    k_small = full_vocab
    if kept is not None:
        k_small = len(kept)
        to_reduced = torch.full((full_vocab,), k_small, dtype=torch.long)
        to_reduced[torch.tensor(kept)] = torch.arange(k_small)
    opt = torch.optim.AdamW(draft.parameters(), lr=cfg.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup) * 0.5 * (1 + math.cos(math.pi * min(s, cfg.steps) / cfg.steps)))
    ckpt = out / "checkpoint.pt"
    step = 0
    if ckpt.exists():
        state = load_resume(ckpt)
        draft.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
    rng = random.Random(cfg.seed)
    order = list(range(len(samples)))
    rng.shuffle(order)
    draft.train()
    bar = tqdm(total=cfg.steps, initial=step, desc="distill train", unit="step")
    ema = None
    while step < cfg.steps:
        ids, mask, pos, tidx, tw = _batch(samples, order, step, cfg.batch_size, to_reduced, k_small)
        logits = draft(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
        sel = logits[pos[:, 0], pos[:, 1], :k_small].float()
        logq = F.log_softmax(sel, -1)
        loss = -(tw.to(device) * logq.gather(-1, tidx.to(device))).sum(-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        bar.update(1)
        bar.set_postfix(loss=f"{ema:.3f}")
        if step % cfg.save_every == 0 or step == cfg.steps:
            save_atomically({"model": draft.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                             "step": step}, ckpt)
            export(draft, tok, kept, full_vocab, out / "draft", cfg, step, ema)
    bar.close()
    return out / "draft"


def export(draft, tok, kept, full_vocab, folder: Path, cfg: DistillConfig, step: int, loss: float | None) -> None:
    """A normal HF folder (fp16 safetensors + config + tokenizer) plus vocab_map.json and a provenance note."""
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    half = copy.deepcopy(draft).to(torch.float16)
    half.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    if kept is not None:
        (tmp / "vocab_map.json").write_text(json.dumps({"kept_ids": kept, "full_vocab_size": full_vocab}))
    (tmp / "specsweep_distill.json").write_text(json.dumps(
        {"config": {**asdict(cfg), "extra_text": list(cfg.extra_text)}, "step": step, "loss_ema": loss,
         "saved_at": time.strftime("%Y-%m-%d %H:%M:%S")}, indent=1))
    if folder.exists():
        shutil.rmtree(folder)
    tmp.replace(folder)


def run_distill(cfg: DistillConfig) -> Path:
    from actors.loading.models import ModelSpec, load_model, load_tokenizer, resolve_source  # heavy: torch

    cfg.validate()
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)
    if out.exists() and not out.is_dir():
        raise SpecsweepError(f"distill --out {out} is a file, not a folder: choose a new or existing folder")
    for f in cfg.extra_text:                    # every input checked before anything is written
        if not Path(f).is_file():
            raise SpecsweepError(f"--extra-text file {f} does not exist")
    meta = out / "distill_config.json"
    key = data_key(cfg, "layers")
    if meta.exists() and read_json(meta) != key:
        raise SpecsweepError(f"{out} holds a distillation with other settings ({meta}): pass another --out or delete it")
    spec = ModelSpec(cfg.target, device=cfg.device)
    tok = load_tokenizer(spec)
    from transformers import AutoConfig  # heavy: transformers

    n_target = getattr(AutoConfig.from_pretrained(resolve_source(cfg.target)), "num_hidden_layers", None)
    if n_target is not None and cfg.layers > n_target:
        raise SpecsweepError(f"distill --layers {cfg.layers} exceeds the target's {n_target} layers")
    target = load_model(spec)
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(json.dumps(key), meta)
    samples = build_data(cfg, target, tok, out)
    kept = None
    full_vocab = target.get_input_embeddings().weight.shape[0]
    if cfg.vocab and cfg.vocab < full_vocab:
        vm = out / "vocab_map.json"
        if vm.exists():
            kept = read_json(vm)["kept_ids"]
        else:
            kept = kept_vocab(samples, cfg.vocab, full_vocab, [tok.eos_token_id, tok.bos_token_id, tok.pad_token_id])
            write_atomically(json.dumps({"kept_ids": kept, "full_vocab_size": full_vocab}), vm)
    draft, full_vocab = init_draft(target, cfg.layers, kept)
    del target
    draft.to(spec.device if spec.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"))
    return train(cfg, draft, samples, kept, full_vocab, tok, out)
