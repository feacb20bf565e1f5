"""The one turn loop: questions answered turn by turn, as Spec-Bench does, one row or a batch of rows per turn.

Turn t of a question is asked in the same conversation after the model's own answers to turns
1..t−1; each turn is generated, timed and recorded separately (tokenization and detokenization are
outside ``wall_time``). Turn t decodes the questions that have a turn t together, in batches of at most
``batch_size`` rows (all of them when None) on the pair's engine (``actors/core/engine.py``; one question is a
batch of one). Sweeps (``actors/pair_actor.py``) and ``specsweep generate --dataset/--prompt-file
--batch-size`` (``jobs/batch_generate.py``) run this same loop.

The per-row seed rule (sampling): question i of the list given to the loop, turn t, samples with seed
:func:`row_seed` = ``(seed + i) · 1000 + t``, whatever batch it lands in, so its draws do not depend on the
rows beside it or on ``batch_size``, and a single question (i = 0) samples as it always did
(``seed · 1000 + t``). A sweep's batch task gives its B questions i = 0 … B − 1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from actors.core.step import Generation
from actors.loading.templates import render
from policies.base import BatchPolicy


@dataclass
class Turn:
    """One generated turn: its :class:`~actors.core.step.Generation`, the decoded answer and the rendered prompt ids;
    ``batch``: the index of the batch it ran in (counted over the whole loop), ``row``: its row there."""

    generation: Generation
    text: str
    prompt_ids: list
    batch: int = 0
    row: int = 0


def row_seed(seed: int, question: int, turn: int) -> int:
    """The sampling seed of question ``question`` (its index in the loop's list) at turn ``turn``."""
    return (int(seed) + int(question)) * 1000 + int(turn)


def run_questions(pair, questions: Sequence[Sequence[str]], policies: Callable[[int], object], *, template: str,
                  max_new_tokens: int = 256, temperature: float = 0.0, top_p: float = 1.0, seed: int = 0,
                  batch_size: int | None = None, check_length: bool = False) -> list[list[Turn]]:
    """Every question's turns (module docstring). ``policies(n)`` gives the policy of a batch of n rows: a batch
    policy, or a list of n per-row policies (the caller decides which instances carry state across turns).
    ``check_length``: refuse in one line a prompt that cannot fit (``Pair.check_length``) before its batch runs."""
    if not questions or any(not q for q in questions):
        raise ValueError("a question needs at least one turn")
    messages: list[list[dict]] = [[] for _ in questions]
    turns: list[list[Turn]] = [[] for _ in questions]
    batches = 0
    for t in range(max(len(q) for q in questions)):
        live = [i for i, q in enumerate(questions) if t < len(q)]
        size = batch_size or len(live)
        for start in range(0, len(live), size):
            chunk = live[start:start + size]
            prompts = []
            for i in chunk:
                messages[i].append({"role": "user", "content": questions[i][t]})
                prompts.append(render(template, pair.tokenizer, messages[i]))
                if check_length:
                    pair.check_length(len(prompts[-1]), max_new_tokens)
            gens = pair.engine.generate_batch(prompts, policies(len(chunk)), max_new_tokens=max_new_tokens,
                                              temperature=temperature, top_p=top_p,
                                              seeds=[row_seed(seed, i, t) for i in chunk])
            for r, (i, ids, g) in enumerate(zip(chunk, prompts, gens)):
                text = pair.tokenizer.decode(g.token_ids, skip_special_tokens=True).strip()
                messages[i].append({"role": "assistant", "content": text})
                turns[i].append(Turn(g, text, ids, batches, r))
            batches += 1
    return turns


def run_question(pair, user_turns: Sequence[str], policy, *, template: str, max_new_tokens: int = 256,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int = 0, check_length: bool = False) -> list[Turn]:
    """One question alone under one ``policy`` instance, carried across its turns: :func:`run_questions` with a
    single question (``check_length``: each turn's prompt checked before it runs, as there)."""
    return run_questions(pair, [user_turns], lambda n: policy if isinstance(policy, BatchPolicy) else [policy],
                         template=template, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                         seed=seed, check_length=check_length)[0]
