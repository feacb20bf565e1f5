"""Prompt templates: how a conversation becomes the token ids a model sees.

``vicuna``  vicuna_v1.1 as Spec-Bench builds it through FastChat's ``Conversation.get_prompt``
            (style ADD_COLON_TWO, sep " ", sep2 "</s>"): system + " ", then per message
            "ROLE: text" + sep (user) or sep2 (assistant), and "ASSISTANT:" to end —
            ``SYSTEM USER: q1 ASSISTANT: a1</s>USER: q2 ASSISTANT:`` (no space after "</s>").
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
        return list(tokenizer(vicuna_text(messages)).input_ids)
    if template == "raw":
        if len(messages) != 1:
            raise SpecsweepError("template 'raw' takes a single turn: use chat or vicuna for multi-turn questions")
        return list(tokenizer(messages[0]["content"]).input_ids)
    raise SpecsweepError(f"unknown template {template!r}: use one of {', '.join(TEMPLATES)}")


def vicuna_text(messages: list[dict]) -> str:
    """The vicuna_v1.1 prompt text, byte for byte FastChat's ADD_COLON_TWO ``get_prompt``."""
    seps = (" ", "</s>")
    text = VICUNA_SYSTEM + seps[0]
    for i, m in enumerate(messages):
        role = "USER" if m["role"] == "user" else "ASSISTANT"
        text += f"{role}: {m['content']}{seps[i % 2]}"
    return text + "ASSISTANT:"
