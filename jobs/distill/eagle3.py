"""``specsweep distill --kind eagle3``: train an EAGLE-3 head for a target (``actors/drafting/eagle3_head.py``).

The phases of ``jobs/distill/eagle.py`` (data, features, vocabulary, training, held-out estimate; each resumable),
with EAGLE-3's rules ("EAGLE-3: Scaling up Inference Acceleration of Large Language Models via Training-Time Test",
Li et al. 2025):

* **features** (§3.2): the target's hidden states entering its auxiliary layers (default 2, N//2, N − 3),
  concatenated; the head fuses them with ``fc``;
* **draft vocabulary** (§4): the ``vocab`` most frequent target tokens of the training text; the head's own
  ``lm_head`` over them starts from the target's LM-head rows, its final ``norm`` from the target's; ``d2t``/``t2d``
  map the draft ids to the target's;
* **loss** (§3.3): no feature regression; at every unroll step d the soft cross-entropy between the head's draft
  distribution and the target's own next-token distribution restricted to the draft vocabulary and renormalized,
  on response tokens only, weighted 0.8 ** (d − 1);
* **training-time test** (§3.3): ``unroll`` steps (the paper unrolls 7), step d fed the head's own step-(d−1) outputs
  under the mask a live draft of depth d sees (``jobs/distill/head_training.py``);
* **data**: the target's own greedy answers (self-distillation) to the varied instruction pool
  (``actors/loading/instruction_pool/``; the ``sample`` questions held out).

The head is written in the release layout (fp16 safetensors, ``config.json`` with ``draft_vocab_size`` and the
auxiliary layer ids), so ``--draft eagle3:PATH`` and the serving engines load it.
"""
from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from actors.drafter_kinds.eagle3 import eagle3_folder
from actors.drafting.eagle3_drafter import Eagle3Drafter
from actors.drafting.eagle3_head import Eagle3Head, eagle3_config, load_eagle3_head
from actors.drafting.eagle_head import HeadShape, target_parts
from actors.drafting.head_files import aux_layers
from jobs.distill.eagle import CLIP, STEP_DECAY, EagleDistillConfig, HeadRecipe, run_head_distill
from jobs.distill.head_training import LoopSettings, draft_vocab_map, scored_rows, soft_ce, train_loop
from policies.errors import SpecsweepError

# The learning rate of the public EAGLE-3 training recipes (SpecForge's examples); clipping as EAGLE's.
EAGLE3_LR = 1e-4
EAGLE3_UNROLL = 7              # the paper's training-time test depth


@dataclass
class Eagle3DistillConfig(EagleDistillConfig):
    lr: float = EAGLE3_LR
    unroll: int = EAGLE3_UNROLL
    prompt_set: str = "varied"
    init_from: str = ""            # a head to train on from (a shipped name or eagle3:PATH); "" = a new head

    def validate(self):
        """The shared checks, and ``--init-from`` naming an EAGLE-3 head folder — before the target loads."""
        super().validate()
        if self.init_from and eagle3_folder(self.init_from) is None:
            raise SpecsweepError(f"distill --init-from {self.init_from!r} names no EAGLE-3 head: use a shipped name "
                                 "(smollm2-135m-eagle3) or eagle3:PATH")


def eagle3_layers(target) -> tuple[int, ...]:
    """The target's default auxiliary layers (``actors/drafting/head_files.py``'s rule)."""
    return aux_layers({}, int(target.config.num_hidden_layers), "distill --kind eagle3")


def init_eagle3_head(target, kept: list[int], seed: int = 0) -> Eagle3Head:
    """A new EAGLE-3 head drafting over ``kept`` (sorted target ids): random layer with small output projections,
    ``fc`` passing the highest auxiliary feature through (the residual stream starts near the target's late hidden
    state), ``lm_head`` = the target's LM-head rows of ``kept``, ``norm`` = the target's final norm."""
    base, lm = target_parts(target)
    cfg = eagle3_config(target.config, len(kept))
    layers = eagle3_layers(target)
    cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": list(layers)}
    shape = HeadShape.from_config(cfg)
    h_t = lm.weight.shape[1]
    torch.manual_seed(seed)
    head = Eagle3Head(shape, cfg, h_t, len(kept), layers)
    ids = torch.tensor(sorted(kept))
    h = shape.hidden_size
    with torch.no_grad():
        head.fc.weight.mul_(0.5 / math.sqrt(len(layers)))
        if h == h_t:
            head.fc.weight[:, (len(layers) - 1) * h_t:] += torch.eye(h)
        for lin in (head.midlayer.self_attn.o_proj, head.midlayer.mlp.down_proj):
            lin.weight.mul_(0.1)
        head.lm_head.weight.copy_(lm.weight.detach().float()[ids.to(lm.weight.device)].cpu())
        final = getattr(base, "norm", None)
        if final is not None and getattr(final, "weight", None) is not None and final.weight.shape == (h,):
            head.norm.weight.copy_(final.weight.detach().float().cpu())
        head.d2t.copy_(ids - torch.arange(len(ids)))
        head.t2d.zero_()
        head.t2d[ids] = True
    return head.to(lm.weight.device)


def warm_start(init_from: str, target) -> tuple[Eagle3Head, list[int]]:
    """(head, kept): the EAGLE-3 head ``init_from`` names, loaded and checked against ``target``
    (``load_eagle3_head``), in float32 for training, with its draft vocabulary as sorted target ids (rows of
    ``lm_head`` reordered to match, ``d2t`` rebuilt) — a head trained on keeps its vocabulary and auxiliary layers."""
    head = load_eagle3_head(eagle3_folder(init_from), target).float().train()
    ids = head.target_ids()
    order = torch.argsort(ids)
    kept = ids[order]
    with torch.no_grad():
        head.lm_head.weight.copy_(head.lm_head.weight[order])
        head.d2t.copy_(kept - torch.arange(len(kept), device=kept.device))
    return head, kept.tolist()


def eagle3_step_loss(head: Eagle3Head):
    """EAGLE-3's loss at unroll step d (module docstring): soft CE of softmax(lm_head(norm(o_j))) against the target's
    p(t_{j+2}) on the draft vocabulary, response tokens only, × ``STEP_DECAY`` ** (d − 1)."""

    def step_loss(d, o, sel, batch):
        n = sel.shape[1]
        rows_o, (ids, p), weight = scored_rows(o, sel, batch.teacher_ids[:, 2:n + 2], batch.teacher_p[:, 2:n + 2])
        loss, rows, hits = soft_ce(head.lm_head(head.norm(rows_o)), ids, p, weight)
        return STEP_DECAY ** (d - 1) * loss, rows, hits

    return step_loss


def train_eagle3(cfg: Eagle3DistillConfig, target, head: Eagle3Head, samples, feats, kept, subset, out: Path,
                deadline: float = 0.0) -> Path:
    for p in target.parameters():
        p.requires_grad_(False)
    full = target.get_output_embeddings().weight.shape[0]
    settings = LoopSettings(steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, warmup=cfg.warmup,
                            save_every=cfg.save_every, seed=cfg.seed, unroll=cfg.unroll, clip=CLIP,
                            deadline=deadline)
    # a head with its own token embeddings drafts with them (actors/drafting/eagle_drafter.py), so it trains with them
    embed = head.embed_tokens if head.embed_tokens is not None else target.get_input_embeddings()
    train_loop(settings, head, embed, samples, feats, draft_vocab_map(sorted(kept), full),
               eagle3_step_loss(head), lambda step, curve: export_eagle3(cfg, head, subset, out, step, curve), out,
               "eagle3 train")
    return out / "head"


def export_eagle3(cfg, head: Eagle3Head, subset, out: Path, step: int, curve: list, estimate: dict | None = None) -> None:
    """The release layout into ``out/head`` (fp16 weights, ``d2t`` int64, ``t2d`` bool), replaced atomically, with
    ``specsweep_distill.json`` (the configuration, the curve's tail, the held-out estimate when given)."""
    from safetensors.torch import save_file  # heavy: safetensors

    folder = out / "head"
    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    state = {k: (v.detach().to(torch.float16) if v.is_floating_point() else v.detach()).contiguous().cpu()
             for k, v in head.state_dict().items() if not k.startswith("rotary.")}
    save_file(state, str(tmp / "model.safetensors"))
    (tmp / "config.json").write_text(json.dumps({**head.config, "torch_dtype": "float16"}, indent=1))
    note = {"config": {**asdict(cfg), "extra_text": list(cfg.extra_text)}, "kind": "eagle3", "step": step,
            "curve_tail": curve[-3:], "saved_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    if estimate:
        note["held_out"] = estimate
    (tmp / "specsweep_distill.json").write_text(json.dumps(note, indent=1))
    if folder.exists():
        shutil.rmtree(folder)
    tmp.replace(folder)


EAGLE3 = HeadRecipe("eagle3", layers=eagle3_layers, make=init_eagle3_head, train=train_eagle3, export=export_eagle3,
                    drafter=Eagle3Drafter.from_folder, start=warm_start)


def run_distill_eagle3(cfg: Eagle3DistillConfig) -> Path:
    return run_head_distill(cfg, EAGLE3)
