"""The one place drafter kinds are registered, and the questions every caller asks of them.

:data:`KINDS` lists each kind's record (``actors/drafter_kinds/kind.py``) in the order names are matched: the
first kind whose ``matches(draft)`` holds owns the draft, so the catch-all ``model`` kind comes last. A draft of
None is no drafter (``ar`` only): :func:`kind_of` answers None and :func:`kind_name` ``"none"``.

Adding a kind: write ``actors/drafter_kinds/<name>.py`` building one ``KIND`` record, and add it to
:data:`KINDS` here (docs/drafters.md, "Adding a drafter kind").
"""
from __future__ import annotations

from actors.drafter_kinds import eagle, eagle3, model, ngram, suffix
from actors.drafter_kinds.kind import DrafterKind
from policies.errors import SpecsweepError

# matched in this order; eagle3 before eagle (an eagle:PATH whose config marks EAGLE-3); model catches all
KINDS: tuple[DrafterKind, ...] = (ngram.KIND, suffix.KIND, eagle3.KIND, eagle.KIND, model.KIND)
BY_NAME = {k.name: k for k in KINDS}
NO_DRAFTER = "none"


def kind_of(draft: str | None) -> DrafterKind | None:
    """The kind that owns draft name ``draft`` (None: no drafter)."""
    if draft is None:
        return None
    return next(k for k in KINDS if k.matches(draft))


def kind_name(draft: str | None) -> str:
    """The name of ``draft``'s kind, ``"none"`` without a drafter (MLflow's ``drafter`` tag, the report)."""
    kind = kind_of(draft)
    return kind.name if kind is not None else NO_DRAFTER


def kind_of_drafter(drafter) -> DrafterKind | None:
    """The kind of a loaded :class:`~actors.drafting.drafters.Drafter` (by its ``name``); None for no drafter."""
    if drafter is None:
        return None
    if drafter.name not in BY_NAME:
        raise SpecsweepError(f"drafter {drafter.name!r} is not a registered kind ({', '.join(BY_NAME)})")
    return BY_NAME[drafter.name]


def check_draft_files(draft: str | None, target_config: dict | None, tokenizer: bool = True) -> None:
    """A draft's local files by its kind's rule, before any weight is read (nothing for no drafter)."""
    kind = kind_of(draft)
    if kind is not None:
        kind.check_files(draft, target_config, tokenizer)
