"""Drafter kinds by name, without loading anything: ``none``, ``ngram``, ``eagle`` (a feature head) or ``model``.

A draft is an EAGLE head when it is written ``eagle:PATH`` or names a shipped head
(``EAGLE_HEADS``, folders under ``actors/assets/``); ``ngram`` is prompt lookup; any other name
is a causal LM loaded as an independent draft.
"""
from __future__ import annotations

from pathlib import Path

EAGLE_PREFIX = "eagle:"
ASSETS = Path(__file__).resolve().parent / "assets"
EAGLE_HEADS = {"smollm2-135m-eagle": str(ASSETS / "smollm2-135m-eagle")}
KINDS = ("none", "ngram", "eagle", "model")


def drafter_kind(draft: str | None) -> str:
    """The kind of drafter ``draft`` names."""
    if draft is None:
        return "none"
    if draft == "ngram":
        return "ngram"
    if draft.startswith(EAGLE_PREFIX) or draft in EAGLE_HEADS:
        return "eagle"
    return "model"
