"""The one cost model of a target/draft pair on one device: what a step costs, in seconds.

Rule (per speculative step at context length C, with p draft forwards — a discarded proposal
included — e extra tokens the draft caught up on in its first forward, and m = k + 1 tokens
verified):

    draft_time  = d₀·[p > 0] + d₁·p + d₂·[e > 0] + d₃·e + d₄·p·C/1000
    verify_time = T(m) + v_C·C/1000 + v_mC·m·C/1000
    step_time   = draft_time + verify_time + o

T is a table over verified lengths (knots), linear between knots and beyond the last two.
Two ways make one, both instances of :class:`CostModel`:

- **measured** (``actors/costs/calibrate.py``, :meth:`CostModel.measured`): the median time of one
  draft forward (d₁) and of one target forward over m tokens (the table) at one context length;
  no context terms. Cost-aware policies read it.
- **fitted** (``policies/cost_fit.py``): every coefficient by least squares on live steps.
  Replay predicts step times with it.

What policies read, at the model's ``context``: ``t_draft`` (seconds of a step's draft phase with
one proposal), ``t_target`` = T(1) + o (seconds of a plain target step, the engine's ``ar`` step),
``step_time(k)`` (a step that drafts and verifies k tokens), ``c`` = t_draft / t_target — GT's
cost ratio c = M_D / M_T ("Max-Speedup Speculative Sampling: A Generic Tree Construction
Principle", §3.1), the price of one draft token in target steps — and that paper's Φ (``policies/phi.py``):
``knee()`` = K, ``phi(k)`` = Φ_{M_T}(k) in seconds (0 below K, T(k + 1) − T(1) from it on) and
``token_price(i)`` = (M_D + Φ(i) − Φ(i − 1)) / M_T (Eq. 2, 15, 18). ``verify_ratio(k)`` = (T(k + 1) + o) /
t_target is a step's target side in plain steps (1 + Φ/M_T above the knee). GammaTune calls the *inverse*
ratio c (T_target / T_draft, its Eq. 1): it is ``target_over_draft`` here, never ``c``. ``params`` holds the
pair's parameter counts ({"target": n, "draft": n}; {} unknown) and ``c_params`` their ratio, the c of the
GT paper's A.8 / Table 10.

Batches (docs/definitions.md): ``batch`` holds, per batch size B > 1, what a B-row step costs by phase, measured on
the engine's step path by the same harness as the single-row model (``actors/costs/batch_costs.py``): a table T_B(L)
of one target forward over B rows of L tokens each (B·L verified slots), one batched draft level T_d(B), the draft
phase's per-step part d₀(B) and the rest of the step o_B. The surface's B = 1 member is the single-row model itself
(T_1(L) = T(L) at C₀, d₀(1) + T_d(1) = ``t_draft``, o_1 = o), so a single row is priced one way whichever view reads
it. ``batch_verify(B, L)``, ``batch_draft(B, levels)``, ``batch_overhead(B)`` and ``batch_step_time(B, k, C)``
read it, linear in B between sizes and clamped past the largest; without a table they fall back to the
single-row model over B·L tokens. ``batch_knee(B)``
and ``level_price(B, L)`` are the knee and the token price above on the B-row table (``policies/batch.py``).

A model refitted on a sweep's live steps (``jobs/report/live_costs.py``) may also hold ``draft_levels``: per batch
size B, the seconds of a drafting step of ℓ draft forwards (catch-up and context terms aside) at each ℓ, in place of
d₀(B) + ℓ·T_d(B) (linear between knots and past the last two) — on a CPU the forwards of one chain are not alike
(measured on SmolLM2-135M's draft: 6.1, 12.2, 17.3, 22.0 ms for ℓ = 1…4). ``batch_draft`` and ``batch_step_parts``
read it at exactly those sizes; ``draft_time`` (the clocks of replay and the policies' view) never does. It is a
report-time refit and is not stored.

Stored (:meth:`CostModel.to_dict`) with the machine it was measured on (``actors/costs/machine.py``),
how it was measured (``probe``) and whether the measurement can be trusted (``trust``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from policies import phi as gt_phi
from policies.cost_format import DRAFT_FEATURES, FORMAT, check_cost_dict
from policies.knots import measured_knots

RULE = ("draft = d0[p>0] + d1 p + d2[e>0] + d3 e + d4 p C/1000; "
        "verify = T(m) (linear between knots) + vC C/1000 + vmC m C/1000")


def draft_features(p: int, e, context: int) -> list:
    """Draft-time features [p > 0, p, e > 0, e, p·C/1000] of the module's rule (all zero when p = 0). ``e`` may be
    an array of catch-up lengths (the oracle bound prices every draft-cache lag at once); its features are then
    arrays too."""
    if p <= 0:
        return [0.0] * len(DRAFT_FEATURES)
    return [1.0, float(p), (e > 0) * 1.0, e * 1.0, p * context / 1000.0]


def _interpolate(knots, values, m: float) -> float:
    """T(m): linear between knots, linear past either end along the nearest segment; constant with one knot."""
    if len(knots) == 1:
        return values[0]
    i = 0
    while i < len(knots) - 2 and m > knots[i + 1]:
        i += 1
    (m0, t0), (m1, t1) = (knots[i], values[i]), (knots[i + 1], values[i + 1])
    return t0 + (t1 - t0) * (m - m0) / (m1 - m0)


@dataclass
class CostModel:
    """Seconds per step of one pair on one device (the module docstring's rule).

    ``draft``: the coefficients d₀…d₄ by :data:`DRAFT_FEATURES` name; ``table``: {"knots": [m…],
    "values": [T(m)…], "per_kctx": v_C, "per_token_kctx": v_mC}; ``overhead``: o; ``context``: the
    context length the per-step view (``t_draft``, ``verify``, ``c``) is read at; ``raw_verify``: a
    measurement's points before ``policies.knots.monotone`` made them non-decreasing (empty when they were)."""

    draft: dict[str, float]
    table: dict
    overhead: float = 0.0
    context: int = 0
    device: str = "cpu"
    label: str = ""                  # which actor / device it was measured on
    raw_verify: dict[int, float] = field(default_factory=dict)
    residuals: dict = field(default_factory=dict)
    n_steps: int = 0
    machine: dict = field(default_factory=dict)    # actors/costs/machine.py: what it was measured on
    probe: dict = field(default_factory=dict)      # how (actors/costs/calibrate.py): lengths, repeats, contexts
    trust: dict = field(default_factory=dict)      # {"reliable": bool, "reasons": [...]} (actors/costs/calibrate.py)
    tree: dict = field(default_factory=dict)       # tree drafting: {"per_level": a, "per_node": b, ...}; {} unmeasured
    batch: dict = field(default_factory=dict)      # {B: {"knots", "values", "draft", "raw"?, "draft_base"?, "overhead"?, "steps"?}}
    draft_levels: dict = field(default_factory=dict)   # {B: {"knots": [ℓ…], "values": [s…]}} (module doc); not stored
    params: dict = field(default_factory=dict)     # parameter counts {"target": n, "draft": n} (actors/pair.py); {} unknown

    @property
    def reliable(self) -> bool:
        """False when the measurement said it cannot be trusted (a model without a verdict counts as reliable)."""
        return bool(self.trust.get("reliable", True))

    @classmethod
    def measured(cls, t_draft: float, t_verify: dict[int, float], context: int = 0, device: str = "cpu",
                 raw_verify: dict[int, float] | None = None) -> "CostModel":
        """From one draft forward's time and target forwards' times over m tokens, measured at ``context``."""
        if not t_verify:
            raise ValueError("empty cost curve: no verify times")
        knots = sorted(int(m) for m in t_verify)
        return cls(draft={k: (float(t_draft) if k == "per_proposal" else 0.0) for k in DRAFT_FEATURES},
                   table={"knots": knots, "values": [float(t_verify[m]) for m in knots],
                          "per_kctx": 0.0, "per_token_kctx": 0.0},
                   context=int(context), device=str(device), raw_verify=dict(raw_verify or {}))

    # ------------------------------------------------------------ replay's view: one step at context C
    def draft_time(self, proposals: int, catchup, context: int):
        """Seconds of drafting ``proposals`` tokens after catching up on ``catchup`` tokens, at ``context``: the
        module's draft rule, the one place it is evaluated (replay's clock, the oracle bound, the policies' view).
        ``catchup`` may be an array (then so is the result)."""
        if proposals <= 0:
            return 0.0
        x = draft_features(proposals, catchup, context)
        t = sum(self.draft.get(k, 0.0) * v for k, v in zip(DRAFT_FEATURES, x))
        return t * (t > 0) + 0.0                     # max(0, t), elementwise for an array of catch-ups

    def verify_time(self, verified: int, context: int) -> float:
        """Seconds of one target forward over ``verified`` tokens at ``context``."""
        t = self.table
        return max(0.0, _interpolate(t["knots"], t["values"], verified)
                   + t["per_kctx"] * context / 1000.0 + t["per_token_kctx"] * verified * context / 1000.0)

    # ------------------------------------------------------------ the policies' view, at self.context
    @property
    def t_draft(self) -> float:
        """Seconds per draft token (one draft forward, no catch-up)."""
        return self.draft_time(1, 0, self.context)

    def verify(self, m: int) -> float:
        """Seconds of one target forward over m tokens."""
        return self.verify_time(m, self.context)

    @property
    def t_verify(self) -> dict[int, float]:
        """``verify(m)`` at each knot."""
        return {m: self.verify(m) for m in self.table["knots"]}

    @property
    def t_target(self) -> float:
        """Seconds of a plain target step: one forward over one token plus the per-step overhead."""
        return self.verify(1) + self.overhead

    def step_time(self, k: int, context: int | None = None) -> float:
        """Seconds of a step that drafts k tokens (no catch-up) and verifies them: draft + T(k + 1) + o, at
        ``context`` (default: the model's)."""
        return sum(self.batch_step_parts(1, k, context))

    def verify_ratio(self, k: int) -> float:
        """(T(k + 1) + o) / (T(1) + o): the target side of a step verifying k drafts, in plain target steps."""
        return (self.verify(k + 1) + self.overhead) / self.t_target if self.t_target > 0 else float("inf")

    def knee(self) -> int:
        """The GT paper's K on this table (``policies/phi.py``): the fewest drafts whose verify is measurably slower."""
        return gt_phi.knee(self.verify, max(self.table["knots"]))

    def phi(self, k: int) -> float:
        """The GT paper's Φ_{M_T}(k) in seconds (Eq. 2, 18): 0 below the knee, T(k + 1) − T(1) from it on."""
        return gt_phi.phi(self.verify, k, self.knee())

    def token_price(self, i: int, k_knee: int | None = None) -> float:
        """The i-th drafted token's price in plain target steps, (M_D + Φ(i) − Φ(i − 1)) / M_T (``policies/phi.py``)."""
        return gt_phi.token_price(self.t_draft, self.t_target, self.verify, i, self.knee() if k_knee is None else k_knee)

    @property
    def c_params(self) -> float | None:
        """Draft parameters over target parameters (the GT paper's c of A.8 / Table 10); None when not recorded."""
        t, d = self.params.get("target"), self.params.get("draft")
        return d / t if t and d else None

    @property
    def c(self) -> float:
        """GT's c = M_D / M_T: a step's draft time per token over a plain target step (inf when M_T = 0)."""
        m_t = self.t_target
        return self.t_draft / m_t if m_t > 0 else float("inf")

    @property
    def c_tree(self) -> float:
        """GT's c for tree drafting: one draft forward (a tree level) over a plain target step; ``c`` when the tree
        path was not measured."""
        if not self.tree or self.t_target <= 0:
            return self.c
        return (self.tree["per_level"] + self.tree["per_node"]) / self.t_target

    # ------------------------------------------------------------ batches: B rows, L tokens per row
    def _by_batch(self, rows: int, read, single) -> float | None:
        """``read(table)`` at ``rows``, linear between the two sizes around it and clamped past the largest; the size
        B = 1 is the single-row model (``single()``), never a stored B = 1 table; None for B > 1 without a table."""
        if rows <= 1:
            return single()
        sizes = [1] + sorted(b for b in self.batch if b > 1)        # keys are ints (from_dict makes them so)
        if len(sizes) == 1:
            return None

        def at(b: int) -> float:
            return single() if b == 1 else read(self.batch[b])

        lo = max(b for b in sizes if b <= rows)
        hi = min([b for b in sizes if b >= rows], default=sizes[-1])
        t_lo = at(lo)
        return t_lo if hi == lo else t_lo + (at(hi) - t_lo) * (rows - lo) / (hi - lo)

    def batch_verify(self, rows: int, width: int) -> float:
        """Seconds of one target forward over ``rows`` rows of ``width`` tokens each (B = 1: ``verify(width)``)."""
        t = self._by_batch(rows, lambda e: _interpolate(e["knots"], e["values"], width), lambda: self.verify(width))
        return max(0.0, t) if t is not None else self.verify(rows * width)

    def batch_draft(self, rows: int, levels: int = 1) -> float:
        """Seconds of a step's draft phase over ``rows`` rows drafting ``levels`` levels (one token per row each, no
        catch-up): d₀(B) + levels·T_d(B) (B = 1: ``draft_time(levels, 0, C₀)``); 0 for ``levels`` 0."""
        if levels <= 0:
            return 0.0
        by_level = self.level_draft(rows, levels)
        if by_level is not None:
            return by_level
        t = self._by_batch(rows, lambda e: e.get("draft_base", 0.0) + levels * e["draft"],
                           lambda: self.draft_time(levels, 0, self.context))
        return max(0.0, t) if t is not None else self.draft_time(levels, 0, self.context)

    def level_draft(self, rows: int, levels: int) -> float | None:
        """Seconds of a drafting step of ``levels`` draft forwards over ``rows`` rows from ``draft_levels`` (no
        catch-up, context at the origin); None when there is no table at exactly that size."""
        e = self.draft_levels.get(max(1, int(rows)))
        return None if not e or levels <= 0 else max(0.0, _interpolate(e["knots"], e["values"], levels))

    def batch_overhead(self, rows: int) -> float:
        """Seconds of a ``rows``-row step besides drafting and the target forward (B = 1, or a surface measured
        without it: ``overhead``)."""
        t = self._by_batch(rows, lambda e: e.get("overhead", self.overhead), lambda: self.overhead)
        return max(0.0, t) if t is not None else self.overhead

    def batch_step_time(self, rows: int, k: int, context: float | None = None) -> float:
        """Seconds of one step of ``rows`` rows, each drafting k and verifying k + 1 tokens, at ``context`` (default
        the model's C₀): [k > 0]·d₀(B) + k·(T_d(B) + B·d₄·ΔC) + T_B(k + 1) + B·(v_C + v_mC·(k + 1))·ΔC + o_B with
        ΔC = (C − C₀)/1000 (the surface is measured at C₀; the context terms are the single-row model's, once per
        row). At B = 1 it is :meth:`step_time` — the single-row model is the surface's B = 1 member."""
        return sum(self.batch_step_parts(rows, k, context))

    def batch_step_parts(self, rows: int, k: int, context: float | None = None) -> tuple[float, float, float]:
        """(draft, verify, rest) seconds of the step :meth:`batch_step_time` prices, term by term."""
        c = self.context if context is None else context
        if rows <= 1:
            c = int(round(c))
            by_level = self.level_draft(1, k)
            draft = self.draft_time(k, 0, c) if by_level is None else by_level + k * self.draft.get(
                "per_proposal_kctx", 0.0) * c / 1000.0
            return draft, self.verify_time(k + 1, c), self.overhead
        dc = (c - self.context) / 1000.0
        per_row = self.table.get("per_kctx", 0.0) + self.table.get("per_token_kctx", 0.0) * (k + 1)
        draft = self.batch_draft(rows, k) + k * rows * self.draft.get("per_proposal_kctx", 0.0) * dc if k else 0.0
        return max(0.0, draft), self.batch_verify(rows, k + 1) + rows * per_row * dc, self.batch_overhead(rows)

    def batch_knee(self, rows: int) -> int:
        """K on the ``rows``-row table: the fewest levels whose batch forward is measurably slower (``policies/phi.py``)."""
        last = max(max((max(e["knots"]) for e in self.batch.values()), default=0), max(self.table["knots"]))
        return gt_phi.knee(lambda w: self.batch_verify(rows, w), last)

    def level_price(self, rows: int, level: int, k_knee: int | None = None) -> float:
        """Level L's price in plain batch steps: (d₀(B) + T_d(B) + Φ_B(L) − Φ_B(L − 1)) / (T_B(1) + o_B), Φ_B the GT
        paper's Φ on the B-row table (``policies/batch.py``); at B = 1 without a batch table, ``token_price(L)``."""
        k = self.batch_knee(rows) if k_knee is None else k_knee
        return gt_phi.token_price(self.batch_draft(rows), self.batch_verify(rows, 1) + self.batch_overhead(rows),
                                  lambda w: self.batch_verify(rows, w), level, k)

    def as_measured(self) -> "CostModel":
        """This model with the measured forward times in place of their non-decreasing fit: T(m) at each knot from
        ``raw_verify`` and each batch entry's T_B(L) from its ``raw`` values. What a step costs, for the clocks that
        predict times (replay, the oracle bound, the γ table); policies keep reading the non-decreasing table, which
        GT's Φ assumes. On a CPU the kernels chosen per shape make T far from monotone (measured on SmolLM2-135M:
        T(3) = 77 ms, T(4) = 60 ms), and the pooled table priced a γ = 3 step 15 % too dear. A knot with no
        measured time (0) or a stalled one is interpolated (:func:`measured_knots`; the non-decreasing value where it
        has no kept knot on a side): a fitted 0 had pooled into a non-decreasing T(1) of 22.8 ms for a measured 33.3,
        and a stalled fit run left T(7) = 204 ms and T(9) = 312 ms beside T(13) = 74 ms (2026-11-29)."""
        batch = {b: ({**e, "values": measured_knots(e["knots"], e["raw"], e["values"])}
                     if len(e.get("raw", ())) == len(e["values"]) else e) for b, e in self.batch.items()}
        if not self.raw_verify and batch == self.batch:
            return self
        knots, fitted = self.table["knots"], self.table["values"]
        values = measured_knots(knots, [self.raw_verify.get(m, v) for m, v in zip(knots, fitted)], fitted)
        return dataclasses.replace(self, table={**self.table, "values": values}, batch=batch, raw_verify={})

    @property
    def target_over_draft(self) -> float:
        """GammaTune's ratio T_target / T_draft (the inverse of GT's c)."""
        return self.t_target / self.t_draft if self.t_draft > 0 else float("inf")

    def with_t_draft(self, t_draft: float) -> "CostModel":
        """The same model with drafting at a flat ``t_draft`` per token (e.g. a model-free drafter)."""
        return dataclasses.replace(self, draft={k: (float(t_draft) if k == "per_proposal" else 0.0)
                                                for k in DRAFT_FEATURES})

    def to_dict(self) -> dict:
        """JSON-able; read back by :meth:`from_dict`."""
        return {"draft": dict(self.draft), "verify": {k: (list(v) if isinstance(v, (list, tuple)) else v)
                                                       for k, v in self.table.items()},
                "overhead": self.overhead, "context": self.context, "device": self.device, "label": self.label,
                "raw_verify": {str(k): v for k, v in self.raw_verify.items()}, "residuals": dict(self.residuals),
                "n_steps": self.n_steps, "rule": RULE, "format": FORMAT,
                "machine": dict(self.machine), "probe": dict(self.probe), "trust": dict(self.trust),
                "tree": dict(self.tree), "c_tree": self.c_tree,
                "batch": {str(b): dict(e) for b, e in self.batch.items()},
                "t_draft": self.t_draft, "t_target": self.t_target,
                "t_verify": {str(k): v for k, v in self.t_verify.items()},
                "knee": self.knee(), "phi": {str(m - 1): self.phi(m - 1) for m in self.table["knots"]},
                "phi_meaning": "GT Phi_MT(k): seconds a k-draft verify adds to a plain one, 0 below the knee",
                "verify_ratio": {str(m - 1): self.verify_ratio(m - 1) for m in self.table["knots"]},
                "params": dict(self.params), "c_params": self.c_params,
                "c": self.c, "c_meaning": "GT c = M_D/M_T", "target_over_draft": self.target_over_draft}

    @classmethod
    def from_dict(cls, d: dict) -> "CostModel":
        """Reads :meth:`to_dict` and the two shapes stored before there was one model: a measured curve
        (``t_draft``, ``t_verify``) and a fitted model (``draft``, ``verify`` as a table or, older, a line)."""
        check_cost_dict(d)
        raw = {int(k): float(v) for k, v in d.get("raw_verify", {}).items()}
        if "verify" not in d:
            return cls.measured(float(d["t_draft"]), {int(k): float(v) for k, v in d["t_verify"].items()},
                                context=int(d.get("context", 0)), device=d.get("device", "cpu"), raw_verify=raw)
        v = d["verify"]
        if "knots" in v:
            table = {"knots": [int(k) for k in v["knots"]], "values": [float(x) for x in v["values"]],
                     "per_kctx": float(v["per_kctx"]), "per_token_kctx": float(v["per_token_kctx"])}
        else:   # stored before the table: v0 (+ v[m ≥ 2]) + v1 m + C terms; knots 1, 2, 3 (linear beyond) are exact
            line = [float(v.get("intercept", 0.0)) + float(v.get("multi_token", 0.0)) * (m >= 2)
                    + float(v.get("per_token", 0.0)) * m for m in (1, 2, 3)]
            table = {"knots": [1, 2, 3], "values": line, "per_kctx": float(v.get("per_kctx", 0.0)),
                     "per_token_kctx": float(v.get("per_token_kctx", 0.0))}
        return cls(draft={k: float(d["draft"].get(k, 0.0)) for k in DRAFT_FEATURES}, table=table,
                   overhead=float(d.get("overhead", 0.0)), context=int(d.get("context", 0)),
                   device=d.get("device", "cpu"), label=d.get("label", ""), raw_verify=raw,
                   residuals=dict(d.get("residuals", {})), n_steps=int(d.get("n_steps", 0)),
                   machine=dict(d.get("machine", {})), probe=dict(d.get("probe", {})), trust=dict(d.get("trust", {})),
                   tree=dict(d.get("tree", {})), params=_params(d.get("params", {})),
                   batch={int(b): _batch_entry(e) for b, e in d.get("batch", {}).items()})


def _batch_entry(e: dict) -> dict:
    """A stored batch-surface entry: its table and draft level, and the phases stored since the one harness."""
    out = {"knots": [int(k) for k in e["knots"]], "values": [float(x) for x in e["values"]], "draft": float(e["draft"])}
    if "raw" in e:
        out["raw"] = [float(x) for x in e["raw"]]
    for key in ("draft_base", "overhead"):
        if key in e:
            out[key] = float(e[key])
    if "steps" in e:
        out["steps"] = int(e["steps"])
    return out


def _params(p) -> dict:
    """Stored parameter counts: positive integers by role, anything else dropped."""
    return {k: int(v) for k, v in (p.items() if isinstance(p, dict) else ())
            if k in ("target", "draft") and isinstance(v, int) and not isinstance(v, bool) and v > 0}
