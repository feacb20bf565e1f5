"""Phase 0 of ``specsweep distill --own-texts N``: the target writes ``N`` short texts, each then wrapped in a reading
task and answered like every other prompt (``actors/loading/instruction_pool/own_texts.py`` has the why).

Each text is the target's answer to a writer request, sampled at :data:`WRITE_TEMPERATURE` with nucleus mass
:data:`WRITE_TOP_P` (seeded per batch from ``seed`` and the batch's first index), cut at its last full sentence;
texts too short, looping, or sharing a six-word run with a ``sample`` question are dropped and counted (not
replaced). ``own_texts.json`` in the run folder holds the texts written so far and the batch size they were written
in, so a resumed run keeps that batch size and writes what an uninterrupted one would.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from tqdm import tqdm

from actors.loading.instruction_pool.own_texts import clean_text, shares_six_words, six_word_runs, wrap, writer_prompts
from actors.loading.templates import default_template, render
from jobs.dataset import load_questions
from jobs.distill.padding import left_padded
from jobs.distill.resume_files import read_json, write_atomically
from policies.errors import SpecsweepError

WRITE_TEMPERATURE = 0.8
WRITE_TOP_P = 0.95
WRITE_TOKENS = 128          # a paragraph of 60-100 words
FILE = "own_texts.json"
SEED_OFFSET = 500_009       # keeps these samples' random streams apart from the sampled answers' (same formula)


def held_out_runs() -> set[tuple[str, ...]]:
    """Six-word runs of every turn of the held-out ``sample`` questions."""
    return set().union(*(six_word_runs(t) for q in load_questions("sample") for t in q.turns))


@torch.no_grad()
def write_texts(n: int, seed: int, target: str, model, tok, out: Path, batch: int) -> list[str]:
    """The kept texts of ``n`` writer requests (fewer than ``n`` when some are dropped), resumed from ``out/own_texts.json``."""
    path = out / FILE
    key = {"n": n, "seed": seed, "temperature": WRITE_TEMPERATURE, "top_p": WRITE_TOP_P, "tokens": WRITE_TOKENS}
    state = {"key": key, "batch": batch, "done": 0, "texts": [], "dropped": 0}
    if path.exists():
        state = read_json(path)
        if state.get("key") != key:
            raise SpecsweepError(f"distill --out {out} holds own texts written with {state.get('key')}, not {key}: "
                                 "use a new --out")
    batch = state.get("batch", batch)           # a resumed phase keeps its batches, hence its seeded samples
    requests = writer_prompts(n, seed)
    template = default_template(target, tok)
    held = held_out_runs()
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    bar = tqdm(total=n, initial=state["done"], desc="own texts (the target writes)", unit="text")
    while state["done"] < n:
        first = state["done"]
        chunk = requests[first:first + batch]
        prompts = [render(template, tok, [{"role": "user", "content": r}]) for r in chunk]
        ids, mask = left_padded(prompts, pad, model.device)
        width = ids.shape[1]
        torch.manual_seed(seed * 1_000_003 + first + SEED_OFFSET)
        gen = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=WRITE_TOKENS, do_sample=True,
                             temperature=WRITE_TEMPERATURE, top_p=WRITE_TOP_P, top_k=0, pad_token_id=pad)
        for row in gen[:, width:].tolist():
            text = clean_text(tok.decode(row, skip_special_tokens=True))
            if text is None or shares_six_words(text, held):
                state["dropped"] += 1
            else:
                state["texts"].append(text)
        state["done"] = first + len(chunk)
        write_atomically(json.dumps(state, ensure_ascii=False, indent=0), path)
        bar.update(len(chunk))
        bar.set_postfix(kept=len(state["texts"]), dropped=state["dropped"])
    bar.close()
    return state["texts"]


def own_text_prompts(n: int, seed: int, target: str, model, tok, out: Path, batch: int) -> list[str]:
    """The reading-task prompts around the target's own texts (``n`` requested; dropped ones are not replaced)."""
    if n == 0:
        return []
    return [prompt for _, prompt in wrap(write_texts(n, seed, target, model, tok, out, batch), seed)]
