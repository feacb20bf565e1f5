"""The measured cost curve of one target/draft pair on one device (numbers only).

``t_draft``: seconds per draft token (one draft forward at decode time).
``t_verify[m]``: seconds for one target forward over m tokens (m = k drafts + 1).
``c`` = t_draft / t_verify[1] — the cost ratio of the GT principle (GT paper §3;
GUIDE §3.2), the price of one draft token in target forwards.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CostCurve:
    t_draft: float
    t_verify: dict[int, float] = field(default_factory=dict)
    context: int = 0
    device: str = "cpu"

    @property
    def c(self) -> float:
        return self.t_draft / self.verify(1)

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
                "context": self.context, "device": self.device, "c": self.c}

    @classmethod
    def from_dict(cls, d: dict) -> "CostCurve":
        return cls(t_draft=float(d["t_draft"]), t_verify={int(k): float(v) for k, v in d["t_verify"].items()},
                   context=int(d.get("context", 0)), device=d.get("device", "cpu"))
