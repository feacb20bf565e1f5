"""Running one multi-turn question, turn by turn, as Spec-Bench does.

Turn t is asked in the same conversation after the model's own answers to turns
1..t−1; each turn is generated, timed and recorded separately (tokenization and
detokenization are outside ``wall_time``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from actors.step import Generation
from actors.templates import render
from policies.base import BatchPolicy


@dataclass
class Turn:
    """One generated turn: its :class:`~actors.step.Generation`, the decoded answer and the rendered prompt ids."""

    generation: Generation
    text: str
    prompt_ids: list


def run_question(pair, user_turns: Sequence[str], policy, *, template: str, max_new_tokens: int = 256,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int = 0, after_turn=None) -> list[Turn]:
    """Generate every turn in one conversation; turn t sees the model's own answers to turns 1..t−1.

    ``after_turn(t, prompt_ids, generation)``: called after each turn is generated (outside its timing),
    e.g. to record the draft's rollouts along an ``ar`` turn.
    """
    if not user_turns:
        raise ValueError("a question needs at least one turn")
    messages: list[dict] = []
    turns = []
    for t, user_text in enumerate(user_turns):
        messages.append({"role": "user", "content": user_text})
        ids = render(template, pair.tokenizer, messages)
        g = pair.engine.generate(ids, policy, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                                 seed=seed * 1000 + t)
        if after_turn is not None:
            after_turn(t, ids, g)
        text = pair.tokenizer.decode(g.token_ids, skip_special_tokens=True).strip()
        messages.append({"role": "assistant", "content": text})
        turns.append(Turn(g, text, ids))
    return turns


def run_questions_batch(pair, engine, questions: Sequence[Sequence[str]], make_policy, *, template: str,
                        max_new_tokens: int = 256, temperature: float = 0.0, top_p: float = 1.0,
                        seed: int = 0) -> list[list[Turn]]:
    """Every question's turns, the questions decoded together as one batch per turn (``actors/batch_engine.py``).

    Turn t batches the questions that have a turn t, each rendered after its own answers to turns 1..t−1.
    ``make_policy()`` gives a batch policy (one call per turn) or a fresh per-row policy (one call per row).
    Row i of turn t samples with seed ``(seed · 1000 + t) · 1024 + i``.
    """
    if not questions or any(not q for q in questions):
        raise ValueError("a batch needs questions with at least one turn each")
    messages: list[list[dict]] = [[] for _ in questions]
    turns: list[list[Turn]] = [[] for _ in questions]
    for t in range(max(len(q) for q in questions)):
        live = [i for i, q in enumerate(questions) if t < len(q)]
        prompts = []
        for i in live:
            messages[i].append({"role": "user", "content": questions[i][t]})
            prompts.append(render(template, pair.tokenizer, messages[i]))
        first = make_policy()
        policy = first if isinstance(first, BatchPolicy) else [first] + [make_policy() for _ in live[1:]]
        gens = engine.generate_batch(prompts, policy, max_new_tokens=max_new_tokens, temperature=temperature,
                                     top_p=top_p, seeds=[(seed * 1000 + t) * 1024 + j for j in range(len(live))])
        for i, ids, g in zip(live, prompts, gens):
            text = pair.tokenizer.decode(g.token_ids, skip_special_tokens=True).strip()
            messages[i].append({"role": "assistant", "content": text})
            turns[i].append(Turn(g, text, ids))
    return turns
