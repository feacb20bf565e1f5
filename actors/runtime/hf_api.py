"""The one place that knows how the installed transformers wants its models called.

transformers 5.24 renamed the forward argument that carries the KV cache from
``past_key_values`` to ``cache``; the old name warns and is removed in 5.40. Every forward
that passes a cache in this project spells it ``**cache_arg(cache)`` so that each supported
release gets the name it expects and the next rename is a one-line change here.
"""
from __future__ import annotations

from importlib.metadata import version


def _release(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


CACHE_RENAMED_IN = (5, 24)
CACHE_ARG = "cache" if _release(version("transformers"))[:2] >= CACHE_RENAMED_IN else "past_key_values"


def cache_arg(cache) -> dict:
    """``{name: cache}`` for a model forward, under the name the installed transformers expects."""
    return {CACHE_ARG: cache}


FINAL = (-1,)       # the runners' default feature_layers: the final hidden state alone (after the final norm)


def hidden_features(hidden_states, layers=FINAL):
    """The features a runner keeps from one forward's ``output_hidden_states`` tuple: the entries at ``layers``
    (indices into that tuple, whose entry 0 is the embedding output, entry i the output of decoder layer i − 1 — the
    input of decoder layer i — and entry −1 the last layer's output after the final norm), concatenated along the
    last dimension in the order given. ``(-1,)`` returns the final hidden state itself, untouched (the EAGLE-1/2
    feature); an EAGLE-3 head asks for its three auxiliary layers (``actors/drafting/eagle3_head.py``)."""
    if len(layers) == 1:
        return hidden_states[layers[0]]
    import torch  # heavy: torch (this module is imported by light code)

    return torch.cat([hidden_states[i] for i in layers], dim=-1)
