"""Forward-time tables over verified lengths (knots): the knots as measured, with the unmeasured ones replaced, and
the non-decreasing fit cost-aware policies read (``policies/costs.py``)."""
from __future__ import annotations

SHAPE_SLACK = 1.5    # measured_knots: the most a forward over fewer tokens may cost over one over more (the CPU's
                     # per-shape kernels: T(3) = 1.28 × T(4) measured on SmolLM2-135M)


def measured_knots(knots, raw, fallback=None) -> list[float]:
    """``raw`` forward times at increasing ``knots`` with the unmeasured ones replaced (``CostModel.as_measured``'s
    rule): a knot at 0 (the fit had no time for it) or above ``SHAPE_SLACK`` times the least time at any wider knot
    (a stall during its fit run) is interpolated between the nearest kept knots around it; with none on a side it
    takes ``fallback``'s value there (default: the nearest kept knot's time)."""
    ok, wider = [], float("inf")
    for i in reversed(range(len(raw))):                 # right to left: a stalled knot is no reference
        if 0 < raw[i] <= SHAPE_SLACK * wider:
            ok.insert(0, i)
            wider = min(wider, raw[i])
    out = []
    for i, r in enumerate(raw):
        lo, hi = [j for j in ok if j < i], [j for j in ok if j > i]
        if i in ok:
            out.append(r)
        elif lo and hi:
            a, b = lo[-1], hi[0]
            out.append(raw[a] + (raw[b] - raw[a]) * (knots[i] - knots[a]) / (knots[b] - knots[a]))
        elif fallback is not None or not ok:
            out.append(fallback[i] if fallback is not None else r)
        else:
            out.append(raw[lo[-1]] if lo else raw[hi[0]])
    return out


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
