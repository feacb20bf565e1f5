"""Prompt templates: how a conversation becomes the token ids a model sees.

The FastChat ones reproduce ``Conversation.get_prompt`` of FastChat's templates for the messages
Spec-Bench appends (user, assistant, …, user, then an empty assistant turn):

``vicuna``    vicuna_v1.1 (ADD_COLON_TWO, sep " ", sep2 "</s>"): system + " ", then per message
              "ROLE: text" + sep (user) or sep2 (assistant), and "ASSISTANT:" to end —
              ``SYSTEM USER: q1 ASSISTANT: a1</s>USER: q2 ASSISTANT:`` (no space after "</s>").
``llama-2``   llama-2 (LLAMA2, sep " ", sep2 " </s><s>"): "[INST] " (or the ``<<SYS>>`` block when there
              is a system message), the first user text + " ", then "[/INST] a1 </s><s>", "[INST] q2 ",
              and "[/INST]" to end — ``[INST] q1 [/INST] a1 </s><s>[INST] q2 [/INST]``.
``llama-3``   llama-3 (LLAMA3): "<|begin_of_text|>", then per message
              "<|start_header_id|>ROLE<|end_header_id|>\n\n" + stripped text + "<|eot_id|>", and an
              open assistant header to end.
``chatml``    the ChatML style (CHATML, sep "<|im_end|>"): "<|im_start|>system\nSYSTEM<|im_end|>\n" (the
              block is written even for an empty system message, as FastChat does), then per message
              "<|im_start|>ROLE\ntext<|im_end|>\n", and "<|im_start|>assistant\n" to end.
``chat``      the tokenizer's own chat template (``apply_chat_template``): the default for instruct models.
``raw``       the user text as is (single turn only).

A text that already starts with the tokenizer's BOS token is tokenized without adding another.
"""
from __future__ import annotations

from policies.errors import SpecsweepError

TEMPLATES = ("vicuna", "llama-2", "llama-3", "chatml", "chat", "raw")
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
            raise SpecsweepError("template 'chat' needs a tokenizer with a chat template: use vicuna, llama-2, "
                             "llama-3, chatml or raw")
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        if hasattr(ids, "keys"):  # some versions return a BatchEncoding
            ids = ids["input_ids"]
        return list(ids)
    if template in FASTCHAT:
        text = FASTCHAT[template](messages)
        bos = getattr(tokenizer, "bos_token", None)
        return list(tokenizer(text, add_special_tokens=not (bos and text.startswith(bos))).input_ids)
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


def llama2_text(messages: list[dict], system: str = "") -> str:
    """The llama-2 prompt text, FastChat's LLAMA2 ``get_prompt`` rule."""
    text = f"[INST] <<SYS>>\n{system}\n<</SYS>>\n\n" if system else "[INST] "
    for i, m in enumerate(messages):
        if i == 0:
            text += m["content"] + " "
        elif i % 2:
            text += "[/INST] " + m["content"] + " </s><s>"
        else:
            text += "[INST] " + m["content"] + " "
    return text + "[/INST]"


def llama3_text(messages: list[dict], system: str = "") -> str:
    """The llama-3 prompt text, FastChat's LLAMA3 ``get_prompt`` rule."""
    text = "<|begin_of_text|>"
    if system:
        text += f"<|start_header_id|>system<|end_header_id|>\n\n{system}<|eot_id|>"
    for m in messages:
        text += f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content'].strip()}<|eot_id|>"
    return text + "<|start_header_id|>assistant<|end_header_id|>\n\n"


def chatml_text(messages: list[dict], system: str = "") -> str:
    """The ChatML prompt text, FastChat's CHATML ``get_prompt`` rule."""
    text = f"<|im_start|>system\n{system}<|im_end|>\n"
    for m in messages:
        text += f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
    return text + "<|im_start|>assistant\n"


FASTCHAT = {"vicuna": vicuna_text, "llama-2": llama2_text, "llama-3": llama3_text, "chatml": chatml_text}
