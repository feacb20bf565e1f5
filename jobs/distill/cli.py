"""``specsweep distill --kind draft|eagle|eagle3 …``: the subcommand's flags and which trainer ``--kind`` runs.

- ``draft`` (``jobs/distill/draft.py``): a small independent LM; defaults 2,000 steps, lr 5e-4, built-in prompts.
- ``eagle`` (``jobs/distill/eagle.py``): an EAGLE-1/2 head on the target's last hidden state; 1,500 steps, EAGLE's
  lr 3e-5, unroll 1, built-in prompts.
- ``eagle3`` (``jobs/distill/eagle3.py``): an EAGLE-3 head on three target layers; 1,500 steps, lr 1e-4, unroll 7,
  the varied instruction pool.

A flag left out takes its kind's default; a value given (0 included) is checked by the kind's config.
"""
from __future__ import annotations

import argparse

from jobs.inputs import DEFAULT_TARGET
from policies.errors import SpecsweepError


def _given(value, default):
    """``value`` unless the flag was left out (None); 0 stays 0 and is refused by validation."""
    return default if value is None else value


def cmd_distill(a) -> int:
    """Run the trainer of ``a.kind`` with the flags given and print where its output went."""
    common = dict(target=a.target, out=a.out, vocab=a.vocab, prompts=a.prompts, extra_text=tuple(a.extra_text or ()),
                  max_new_tokens=a.max_new_tokens, batch_size=a.batch_size, save_every=a.save_every, seed=a.seed,
                  device=a.device, gen_batch=a.gen_batch, minutes=a.minutes, answer_temperature=a.answer_temperature,
                  own_texts=a.own_texts)
    if a.init_from and a.kind != "eagle3":
        raise SpecsweepError("distill --init-from applies to --kind eagle3 (an EAGLE-3 head to train on)")
    if a.kind == "eagle":
        from jobs.distill.eagle import EAGLE_LR, EagleDistillConfig, run_distill_eagle  # heavy: torch

        cfg = EagleDistillConfig(**common, steps=_given(a.steps, 1500), lr=_given(a.lr, EAGLE_LR),
                                 unroll=_given(a.unroll, 1), prompt_set=_given(a.prompt_set, "builtin"))
        out = run_distill_eagle(cfg)
        print(f"eagle head written to {out} (use it as --draft eagle:{out})")
        return 0
    if a.kind == "eagle3":
        from jobs.distill.eagle3 import EAGLE3_LR, EAGLE3_UNROLL, Eagle3DistillConfig, run_distill_eagle3  # heavy: torch

        cfg = Eagle3DistillConfig(**common, steps=_given(a.steps, 1500), lr=_given(a.lr, EAGLE3_LR),
                                  unroll=_given(a.unroll, EAGLE3_UNROLL), prompt_set=_given(a.prompt_set, "varied"),
                                  init_from=a.init_from or "")
        out = run_distill_eagle3(cfg)
        print(f"eagle3 head written to {out} (use it as --draft eagle3:{out})")
        return 0
    if a.minutes:
        raise SpecsweepError("distill --minutes applies to --kind eagle and eagle3 (heads); a draft model trains "
                             "for --steps")
    from jobs.distill.draft import DistillConfig, run_distill  # heavy: torch

    cfg = DistillConfig(**common, layers=a.layers, steps=_given(a.steps, 2000), lr=_given(a.lr, 5e-4),
                        prompt_set=_given(a.prompt_set, "builtin"))
    out = run_distill(cfg)
    print(f"draft written to {out}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``distill`` subcommand on ``sub``."""
    d = sub.add_parser("distill", help="train a small draft (--kind draft), an EAGLE-1/2 head (--kind eagle) or an "
                       "EAGLE-3 head (--kind eagle3) for a target")
    d.add_argument("--kind", choices=["draft", "eagle", "eagle3"], default="draft",
                   help="draft: a small independent LM; eagle: a feature head on the target's last hidden state; "
                        "eagle3: a head on three of the target's layers")
    d.add_argument("--unroll", type=int, default=None, help="heads: training-time test depth, the head fed its own "
                   "outputs this deep (1-16; default eagle 1, eagle3 7)")
    d.add_argument("--prompt-set", default=None, help="builtin or varied: the instructions the target answers "
                   "(default builtin; eagle3 varied)")
    d.add_argument("--target", default=DEFAULT_TARGET)
    d.add_argument("--out", default="runs/distill")
    d.add_argument("--layers", type=int, default=4)
    d.add_argument("--vocab", type=int, default=8192, help="head size (most frequent tokens); 0 = full vocabulary")
    d.add_argument("--prompts", type=int, default=1000)
    d.add_argument("--extra-text", action="append", help="local text file; paragraphs become extra prompts")
    d.add_argument("--max-new-tokens", type=int, default=128)
    d.add_argument("--gen-batch", type=int, default=32)
    d.add_argument("--answer-temperature", type=float, default=0.0, help="0 (default): the target's greedy answers; "
                   "T in (0, 2]: answers sampled at T (the teacher stays the target's own distribution)")
    d.add_argument("--own-texts", type=int, default=0, help="the target first writes this many short texts (sampled), "
                   "each then wrapped in a reading task and answered like the other prompts: content no hand-written "
                   "list repeats (default 0)")
    d.add_argument("--steps", type=int, default=None, help="training steps (default 2000; eagle, eagle3 1500)")
    d.add_argument("--batch-size", type=int, default=8)
    d.add_argument("--lr", type=float, default=None, help="learning rate (default 5e-4; eagle 3e-5; eagle3 1e-4)")
    d.add_argument("--save-every", type=int, default=100)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--device", default="auto")
    d.add_argument("--init-from", default=None, help="eagle3: train on from this head (a shipped name such as "
                   "smollm2-135m-eagle3, or eagle3:PATH) instead of a new one; its draft vocabulary and layers stay")
    d.add_argument("--minutes", type=float, default=0.0, help="eagle, eagle3: wall-time budget of the run up to the end "
                   "of training (answers, features, training; 0 = none): the step count is cut to what fits once the "
                   "step rate is measured, so the schedule still decays to zero")
    d.set_defaults(fn=cmd_distill)
