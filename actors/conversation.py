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
