"""The measured cost curve of one target/draft pair on one device (numbers only).

``t_draft``: seconds per draft token (one draft forward at decode time).
``t_verify[m]``: seconds for one target forward over m tokens (m = k drafts + 1).
``c`` = t_draft / t_verify[1] — GT's cost ratio c = M_D / M_T (GT paper §3), the price
of one draft token in target forwards. GammaTune calls the *inverse* ratio c
(T_target / T_draft): it is ``target_over_draft`` here, never ``c``.
``raw_verify``: the measured points before :func:`monotone` made the curve
non-decreasing (empty when they already were).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CostCurve:
    """Seconds per draft token and per target forward over m tokens, measured for one pair on one device.

    ``c`` is GT's cost ratio M_D / M_T ("Max-Speedup Speculative Sampling: A Generic Tree Construction Principle",
    §3.1); ``target_over_draft`` is GammaTune's inverse ratio (its Eq. 1)."""

    t_draft: float
    t_verify: dict[int, float] = field(default_factory=dict)
    context: int = 0
    device: str = "cpu"
    raw_verify: dict[int, float] = field(default_factory=dict)

    @property
    def c(self) -> float:
        """GT's c = M_D / M_T: draft time per token over one target forward."""
        return self.t_draft / self.verify(1)

    @property
    def target_over_draft(self) -> float:
        """GammaTune's ratio T_target / T_draft (the inverse of GT's c)."""
        return self.verify(1) / self.t_draft if self.t_draft > 0 else float("inf")

    def verify(self, m: int) -> float:
        """Target forward time over m tokens, linearly interpolated between measured points."""
        pts = sorted(self.t_verify.items())
        if not pts:
            raise ValueError("empty cost curve")
        if m <= pts[0][0]:
            return pts[0][1]
        for (m0, t0), (m1, t1) in zip(pts, pts[1:]):
            if m <= m1:
                return t0 + (t1 - t0) * (m - m0) / (m1 - m0)
        (m0, t0), (m1, t1) = pts[-2:] if len(pts) > 1 else (pts[-1], pts[-1])
        slope = (t1 - t0) / (m1 - m0) if m1 != m0 else 0.0
        return t1 + slope * (m - m1)

    def to_dict(self) -> dict:
        return {"t_draft": self.t_draft, "t_verify": {str(k): v for k, v in self.t_verify.items()},
                "context": self.context, "device": self.device, "c": self.c, "c_meaning": "GT c = M_D/M_T",
                "target_over_draft": self.target_over_draft,
                "raw_verify": {str(k): v for k, v in self.raw_verify.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> "CostCurve":
        return cls(t_draft=float(d["t_draft"]), t_verify={int(k): float(v) for k, v in d["t_verify"].items()},
                   context=int(d.get("context", 0)), device=d.get("device", "cpu"),
                   raw_verify={int(k): float(v) for k, v in d.get("raw_verify", {}).items()})


def monotone(points: dict[int, float]) -> dict[int, float]:
    """The least-squares non-decreasing fit of t(m) over increasing m, by pool-adjacent-violators
    (Ayer et al. 1955, "An Empirical Distribution Function for Sampling with Incomplete
    Information"; Barlow et al. 1972, "Statistical Inference under Order Restrictions", §1.2):
    a run of points that decreases is replaced by its mean. A longer forward never costs less."""
    ms = sorted(points)
    blocks: list[list[float]] = []            # [sum, count] per pooled block
    for m in ms:
        blocks.append([points[m], 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    out, i = {}, 0
    for s, n in blocks:
        for _ in range(int(n)):
            out[ms[i]] = s / n
            i += 1
    return out
