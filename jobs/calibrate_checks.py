"""``specsweep calibrate``'s flags, refused in one line each (``jobs/cli.py``) before the models load and once more
when the pair has loaded.

Rules:
- ``--context``, ``--max-tokens`` and ``--repeats`` are integers within the bounds the sweep config sets for the same
  settings (``jobs/config``'s ``Calibrate``: context 1 … 1,000,000, max_tokens … 4096, repeats 1 … 1000), except
  that ``--max-tokens`` is at least 2 (the probe verifies one draft at least);
- the probe (``actors/costs/probe.py``) fills at most ``--context`` + g positions of the target's KV cache, g being
  what it generates at its longest draft length k (``probe_lengths`` of ``--max-tokens`` and the engine's
  ``max_draft``): h = max(2, ⌈:data:`PROBE_STEPS` · ``--repeats`` / 2⌉) kept steps of k + 1 tokens, plus one, so
  g = h · (k + 1) + 1 (its longer second context is kept within the cache by the probe itself); with a drafter that
  grows trees, also its tree probe's s = :data:`PROBE_STEPS` · ``--repeats`` steps of at most depth + 1 tokens each
  and a last tree of ``budget`` nodes verified past them: g = s · (depth + 1) + budget + 1 (the largest of
  ``TREE_SHAPES``) where that is more. That must fit the pair's room (``Pair.room``: the model's positions and, on a
  static or compiled engine, the KV cache's capacity, ``--max-context``). Checked against ``--max-context`` before
  any model loads when ``--engine static|compiled`` is given (the chain probe's g: whether the drafter grows trees is
  known once it loads), and against the loaded pair's room always.
"""
from __future__ import annotations

from policies.errors import SpecsweepError

PROBE_STEPS = 4                 # the probe's steps per draft length (× --repeats), handed to ``calibrate``
DEFAULT_MAX_DRAFT = 24          # ``PairConfig.max_draft``: the CLI's pairs draft at most this many tokens a step
# (flag, attribute, least, most): the sweep config's ``Calibrate`` bounds (tests/test_cli_bad_inputs.py compares them)
BOUNDS = (("--context", "context", 1, 1_000_000), ("--max-tokens", "max_tokens", 2, 4096),
          ("--repeats", "repeats", 1, 1000))


def probe_tokens(max_tokens: int, repeats: int, max_draft: int, trees: bool = False) -> int:
    """g of the module docstring: the most positions one probe run fills after its ``--context``-token prompt
    (``trees``: the drafter grows trees, so the tree probe runs too)."""
    from actors.costs.calibrate import TREE_SHAPES  # heavy: torch
    from actors.costs.probe import probe_lengths  # heavy: torch

    k = probe_lengths(max_tokens, max_draft)[-1]
    chain = max(2, -(-PROBE_STEPS * repeats // 2)) * (k + 1) + 1
    tree = max(PROBE_STEPS * repeats * (depth + 1) + budget + 1 for budget, depth in TREE_SHAPES)
    return max(chain, tree) if trees else chain


def check_calibrate_flags(a) -> None:
    """The flag bounds, then (``--engine static|compiled``) the probe against ``--max-context``: before any model
    loads (module docstring)."""
    for flag, key, least, most in BOUNDS:
        value = getattr(a, key)
        if not least <= value <= most:
            raise SpecsweepError(f"{flag} {value} is not valid: use an integer >= {least} and <= {most}")
    if a.engine in ("static", "compiled"):
        _check_room(a, a.max_context, DEFAULT_MAX_DRAFT,
                    f"positions the {a.engine} KV cache holds (--max-context {a.max_context})", True)


def check_probe_room(a, pair) -> None:
    """The probe against the loaded pair's room (``Pair.room``), before it runs (module docstring)."""
    room = pair.room
    if room is None:
        return
    by_cache = pair.positions is None or room < pair.positions
    where = f"positions the KV cache holds (--max-context {a.max_context})" if by_cache \
        else f"positions of {pair.cfg.target}"
    trees = pair.drafter is not None and pair.drafter.supports_trees
    _check_room(a, room, pair.engine.max_draft, where, by_cache, pair.positions, trees)


def _check_room(a, room: int, max_draft: int, where: str, by_cache: bool, positions: int | None = None,
                trees: bool = False) -> None:
    """One line when ``--context`` + the probe's tokens exceed ``room``, naming the flags that make it fit."""
    made = probe_tokens(a.max_tokens, a.repeats, max_draft, trees)
    need = a.context + made
    if need <= room:
        return
    fixes = [f"--context <= {room - made}"] if room > made else []
    if by_cache and need <= (positions or need):
        fixes.append(f"--max-context >= {need}")
    fixes.append("fewer --repeats or a smaller --max-tokens")
    raise SpecsweepError(f"the calibration probe needs {need} positions (--context {a.context} + up to {made} it fills "
                         f"past it at --max-tokens {a.max_tokens}, --repeats {a.repeats}), more than the {room} "
                         f"{where}; use {' or '.join(fixes)}")
