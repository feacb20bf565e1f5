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
  known once it loads), and against the loaded pair's room always;
- a sweep's preflight (``jobs/sweep/preflight.py``) applies the same rule to each pair that has a drafter (its actors
  calibrate with the config's ``calibrate`` settings, ``actors/pair_actor.py``) before Ray starts:
  :func:`check_sweep_probe`, with the actors' ``max_draft``, the tree probe unless the draft is prompt lookup
  (:data:`CHAIN_ONLY_KINDS`), and the room the actor's pair will have: the target's positions (config.json) and, on a
  static or compiled engine, ``max_context``. g is the most a probe can fill (every draft accepted), so settings that
  pass never overflow an actor's cache, whatever its drafts' acceptance. A pair runs a static cache when its
  ``engine`` is ``static`` or ``compiled``, or unset on a GPU (``device: cuda…``, or ``auto`` with ``num_gpus`` >= 1:
  compiled on CUDA).
"""
from __future__ import annotations

from policies.errors import SpecsweepError

PROBE_STEPS = 4                 # the probe's steps per draft length (× --repeats), handed to ``calibrate``
DEFAULT_MAX_DRAFT = 24          # ``PairConfig.max_draft``: the CLI's pairs draft at most this many tokens a step
CHAIN_ONLY_KINDS = ("ngram",)   # drafter kinds whose drafter grows no trees (``supports_trees`` False): no tree probe
CLI_NAMES = {"context": "--context", "max_tokens": "--max-tokens", "repeats": "--repeats",
             "max_context": "--max-context"}
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
        check_room(_settings(a), a.max_context, DEFAULT_MAX_DRAFT,
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
    check_room(_settings(a), room, pair.engine.max_draft, where, by_cache, pair.positions, trees)


def check_sweep_probe(pair, settings: dict, positions: int | None, max_draft: int, path: str) -> None:
    """A sweep pair's probe against the room its actors' pair will have (module docstring): ``pair`` a config's
    ``PairEntry`` at config path ``path`` (``pairs[i]``), ``settings`` the config's ``calibrate`` section (defaults
    included), ``positions`` the target's positions (None: unknown), ``max_draft`` the actors'."""
    if pair.draft is None:                          # no drafter: the actor measures no cost model
        return
    cuda = pair.device.startswith("cuda") or (pair.device == "auto" and pair.num_gpus >= 1)
    static = pair.engine in ("static", "compiled") or (pair.engine is None and cuda)
    limits = [positions] if positions else []
    if static:
        limits.append(min(pair.max_context, positions) if positions else pair.max_context)
    if not limits:
        return
    room = min(limits)
    by_cache = static and (positions is None or room < positions)
    engine = pair.engine or "compiled"
    where = (f"positions the {engine} KV cache holds ({path}.max_context {pair.max_context})" if by_cache
             else f"positions of {pair.target} ({path}.target)")
    names = {key: f"calibrate.{key}" for key in ("context", "max_tokens", "repeats")}
    trees = pair.drafter_kind not in CHAIN_ONLY_KINDS
    check_room(settings, room, max_draft, where, by_cache, positions, trees,
               {**names, "max_context": f"{path}.max_context"})


def _settings(a) -> dict:
    """The probe settings of ``specsweep calibrate``'s flags."""
    return {"context": a.context, "max_tokens": a.max_tokens, "repeats": a.repeats}


def check_room(settings: dict, room: int, max_draft: int, where: str, by_cache: bool, positions: int | None = None,
               trees: bool = False, names: dict = CLI_NAMES) -> None:
    """The one rule of the module docstring: one line when ``context`` + the probe's tokens (``settings``:
    ``context``, ``max_tokens``, ``repeats``) exceed ``room``, naming the settings (``names``: how the command
    calls them) that make it fit."""
    context, max_tokens, repeats = (int(settings[k]) for k in ("context", "max_tokens", "repeats"))
    made = probe_tokens(max_tokens, repeats, max_draft, trees)
    need = context + made
    if need <= room:
        return
    fixes = [f"{names['context']} <= {room - made}"] if room > made else []
    if by_cache and need <= (positions or need):
        fixes.append(f"{names['max_context']} >= {need}")
    fixes.append(f"fewer {names['repeats']} or a smaller {names['max_tokens']}")
    raise SpecsweepError(f"the calibration probe needs {need} positions ({names['context']} {context} + up to {made} "
                         f"it fills past it at {names['max_tokens']} {max_tokens}, {names['repeats']} {repeats}), "
                         f"which exceeds the {room} {where}; use {' or '.join(fixes)}")
