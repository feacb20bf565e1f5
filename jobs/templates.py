"""Prompt templates: how a conversation becomes the token ids a model sees.

``vicuna``  vicuna_v1.1 as Spec-Bench uses it (GUIDE §4): the system line, then
            " USER: {q} ASSISTANT:" per turn; a finished answer is followed by "</s>".
``chat``    the tokenizer's own chat template (``apply_chat_template``).
``raw``     the user text as is (single turn only).
"""
from __future__ import annotations

from policies.errors import SpecsweepError

TEMPLATES = ("vicuna", "chat", "raw")
VICUNA_SYSTEM = ("A chat between a curious user and an artificial intelligence assistant. "
                 "The assistant gives helpful, detailed, and polite answers to the user's questions.")


def default_template(model_name: str, tokenizer) -> str:
    """vicuna for Vicuna models, chat when the tokenizer has a template, else raw."""
    if "vicuna" in model_name.lower():
        return "vicuna"
    return "chat" if getattr(tokenizer, "chat_template", None) else "raw"


def render(template: str, tokenizer, messages: list[dict]) -> list[int]:
    """Token ids for ``messages`` (alternating user/assistant, ending with a user turn)."""
    if template == "chat":
        if not getattr(tokenizer, "chat_template", None):
            raise SpecsweepError("template 'chat' needs a tokenizer with a chat template: use vicuna or raw")
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        if hasattr(ids, "keys"):  # some versions return a BatchEncoding
            ids = ids["input_ids"]
        return list(ids)
    if template == "vicuna":
        text = VICUNA_SYSTEM
        for m in messages:
            if m["role"] == "user":
                text += f" USER: {m['content']} ASSISTANT:"
            else:
                text += f" {m['content']}</s>"
        return list(tokenizer(text).input_ids)
    if template == "raw":
        if len(messages) != 1:
            raise SpecsweepError("template 'raw' takes a single turn: use chat or vicuna for multi-turn questions")
        return list(tokenizer(messages[0]["content"]).input_ids)
    raise SpecsweepError(f"unknown template {template!r}: use one of {', '.join(TEMPLATES)}")
