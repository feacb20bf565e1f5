"""The instruction pool's composer: ``_Template`` (a text with ``{slot}`` fields, one value list per slot, and its
prompts numbered 0 .. size-1 as a mixed-radix number over those lists), the ``_t`` shorthand that builds one, the
single-pass slot filling (``_sub``) that never rescans inserted values, ``_Composed`` (a lazy list of every text a
set of frames composes) and two small text helpers (``_lc``, ``_join``) shared by the family modules.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence


# --------------------------------------------------------------------------------------------------------------
# The composer's building block: a template is a text with ``{slot}`` fields plus one value list per slot. Its
# prompts are numbered 0 .. size-1 (a mixed-radix number over the slot lists), so the pool can draw distinct prompts
# without generating them all. Fields are filled in one regex pass over the template text only: inserted values are
# never scanned again, so code snippets with braces (JavaScript, dict literals) are safe.
# --------------------------------------------------------------------------------------------------------------
_SLOT = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def _sub(text: str, fill: dict) -> str:
    return _SLOT.sub(lambda m: str(fill[m.group(1)]), text)


class _Template:
    __slots__ = ("text", "slots", "derive", "post", "size", "family")

    def __init__(self, text: str, slots: dict, derive: Callable | None = None, post: Callable | None = None):
        self.text, self.slots, self.derive, self.post = text, tuple(slots.items()), derive, post
        self.size = math.prod(len(values) for _, values in self.slots)
        self.family = ""

    def render(self, index: int) -> str:
        fill = {}
        for name, values in self.slots:
            index, i = divmod(index, len(values))
            fill[name] = values[i]
        if self.derive is not None:
            fill.update(self.derive(fill))
        text = _sub(self.text, fill)
        return self.post(text, fill) if self.post is not None else text


def _t(text: str, derive: Callable | None = None, post: Callable | None = None, **slots: Sequence) -> _Template:
    return _Template(text, slots, derive, post)


class _Composed(Sequence):
    """A lazy list of every text the ``frames`` compose, each frame filled only over the slots it uses (so no two
    indices give the same text)."""

    def __init__(self, frames: Sequence[str], **slots: Sequence):
        self.parts = []
        for frame in frames:
            names = list(dict.fromkeys(_SLOT.findall(frame)))
            self.parts.append((frame, [(n, slots[n]) for n in names], math.prod(len(slots[n]) for n in names)))
        self.size = sum(size for *_, size in self.parts)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> str:
        for frame, slots, size in self.parts:
            if index < size:
                fill = {}
                for name, values in slots:
                    index, i = divmod(index, len(values))
                    fill[name] = values[i]
                text = _sub(frame, fill)
                return text[0].upper() + text[1:]
            index -= size
        raise IndexError(index)


def _lc(s: str) -> str:
    return s[0].lower() + s[1:]


def _join(values) -> str:
    return ", ".join(str(v) for v in values)
