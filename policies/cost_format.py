"""The stored form of a cost model (``policies/costs.py``'s ``to_dict``): its format name, its phases, the names of the
draft coefficients, and the checks run before anything reads one — the format, the phases, every time finite and of
the right sign; each refusal one line naming the field.
"""
from __future__ import annotations

import math

from policies.errors import SpecsweepError

FORMAT = "specsweep-cost-model/2"
PHASES = {"draft": "draft coefficients", "verify": "verify table", "overhead": "per-step overhead"}
DRAFT_FEATURES = ("per_step", "per_proposal", "per_catchup", "per_catchup_token", "per_proposal_kctx")   # d₀ … d₄


def check_cost_dict(d, source: str = "cost model") -> None:
    """One line naming what is wrong when ``d`` is not a stored cost model: another format, or missing phases."""
    if not isinstance(d, dict):
        raise SpecsweepError(f"{source} is a {type(d).__name__}, not a cost model (a JSON object with {FORMAT!r} fields)")
    if "format" in d and d["format"] != FORMAT:
        raise SpecsweepError(f"{source} has format {d['format']!r}; expected {FORMAT!r} (measure it again with "
                             "`specsweep calibrate`)")
    if "verify" not in d and "t_verify" in d and "t_draft" in d:
        _time(d["t_draft"], f"{source}: t_draft")  # a measured curve stored before the format had a name
        _times(d["t_verify"], f"{source}: t_verify", keyed=True)
        return
    missing = [f"{k} ({what})" for k, what in PHASES.items()
               if k not in d and not (k == "overhead" and "format" not in d)]
    if missing:
        raise SpecsweepError(f"{source} lacks {', '.join(missing)}; a cost model has {', '.join(PHASES)} "
                             f"(format {FORMAT!r})")
    check_times(d, source)


def _time(v, where: str, positive: bool = True) -> float:
    """``v`` when it is a finite number of seconds (> 0, or >= 0 when not ``positive``); one line otherwise."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (positive and v == 0):
        rule = "> 0" if positive else ">= 0"
        raise SpecsweepError(f"{where} is {str(v)[:40]!r}; times are finite numbers of seconds {rule}")
    return float(v)


def _times(values, where: str, keyed: bool = False, positive: bool = True) -> None:
    """Every entry of a list (or, ``keyed``, of a mapping) is a time > 0 (``positive``) or a finite number."""
    if not isinstance(values, dict if keyed else list) or not values:
        raise SpecsweepError(f"{where} is {str(values)[:40]!r}; expected a non-empty "
                             f"{'mapping of tokens to times' if keyed else 'list of times'}")
    for k, v in (values.items() if keyed else enumerate(values)):
        _time(v, f"{where}[{k}]") if positive else _finite(v, f"{where}[{k}]")


def _table(t, where: str, extra: tuple[str, ...], positive: bool = True) -> None:
    """A verify table: knots (integers >= 1, increasing), a time > 0 per knot (a finite coefficient when not
    ``positive``), and ``extra`` finite coefficients."""
    if not isinstance(t, dict) or "knots" not in t or "values" not in t:
        raise SpecsweepError(f"{where} is {str(t)[:40]!r}; expected a table {{knots: [m…], values: [seconds…]}}")
    knots = t["knots"]
    if (not isinstance(knots, list) or not knots or any(isinstance(m, bool) or not isinstance(m, int) or m < 1
                                                        for m in knots) or knots != sorted(set(knots))):
        raise SpecsweepError(f"{where}.knots is {str(knots)[:40]!r}; expected increasing integers >= 1")
    _times(t["values"], f"{where}.values", positive=positive)
    if len(t["values"]) != len(knots):
        raise SpecsweepError(f"{where}: {len(knots)} knots but {len(t['values'])} values; give one time per knot")
    for k in extra:
        _finite(t.get(k, 0.0), f"{where}.{k}")


def _finite(v, where: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SpecsweepError(f"{where} is {str(v)[:40]!r}; expected a finite number")


def check_times(d: dict, source: str) -> None:
    """Rule: every time a stored cost model holds is a finite number of seconds — a measured verify table's T(m)
    and each batch table's forward times > 0; its draft times, its overhead and the per-step overhead >= 0 — and
    every coefficient (draft d₀…d₄, the context terms, a fitted table's knot values: ``n_steps`` > 0) is finite, so
    no NaN, infinite, zero or negative measured time reaches a policy or a replayed clock (a fitted model's
    predictions are clipped at 0)."""
    draft, verify = d["draft"], d["verify"]
    if not isinstance(draft, dict):
        raise SpecsweepError(f"{source}: draft is {str(draft)[:40]!r}; expected a mapping of coefficients "
                             f"({', '.join(DRAFT_FEATURES)})")
    for k, v in draft.items():
        _finite(v, f"{source}: draft.{k}")
    if not isinstance(verify, dict):
        raise SpecsweepError(f"{source}: verify is {str(verify)[:40]!r}; expected a table "
                             "{knots: [m…], values: [seconds…], per_kctx, per_token_kctx}")
    if "knots" in verify:
        fitted = isinstance(d.get("n_steps"), int) and d["n_steps"] > 0
        _table(verify, f"{source}: verify", ("per_kctx", "per_token_kctx"), positive=not fitted)
    else:
        for k, v in verify.items():
            _finite(v, f"{source}: verify.{k}")
    if d.get("raw_verify"):                             # the measured T(m) replay's clock reads (as_measured)
        _times(d["raw_verify"], f"{source}: raw_verify", keyed=True, positive=False)
    _time(d.get("overhead", 0.0), f"{source}: overhead", positive=False)
    batch = d.get("batch", {})
    if not isinstance(batch, dict):
        raise SpecsweepError(f"{source}: batch is {str(batch)[:40]!r}; expected a mapping of batch sizes to tables")
    for b, e in batch.items():
        _table(e, f"{source}: batch[{b}]", ())
        if "raw" in e:                                  # the measured T_B(L) replay's clock reads (as_measured)
            if not isinstance(e["raw"], list):
                raise SpecsweepError(f"{source}: batch[{b}].raw is {str(e['raw'])[:40]!r}; expected a list of times")
            for i, v in enumerate(e["raw"]):
                _time(v, f"{source}: batch[{b}].raw[{i}]", positive=False)
            if len(e["raw"]) != len(e["knots"]):
                raise SpecsweepError(f"{source}: batch[{b}]: {len(e['knots'])} knots but {len(e['raw'])} raw values; "
                                     "give one time per knot")
        _time(e.get("draft"), f"{source}: batch[{b}].draft", positive=False)
        for key in ("draft_base", "overhead"):
            _time(e.get(key, 0.0), f"{source}: batch[{b}].{key}", positive=False)
