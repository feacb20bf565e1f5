"""The GT paper's price of a drafted token: M_D + Φ_{M_T}, with Φ zero below the knee K (numbers only).

"Max-Speedup Speculative Sampling: A Generic Tree Construction Principle" (the GT paper) prices the i-th
drafted token at M_D + Φ_{M_T}(γ) (Eq. 2 for a chain, Eq. 6 for a tree of N nodes, Eq. 15 in A.9), where
Φ_{M_T}(γ) is the extra time the target takes to verify γ tokens over a plain step — zero while γ < K, a
device-dependent threshold — and a step costs M_T + M_D·γ + Φ_{M_T}(γ) (Eq. 18). Here, from a verify
table T(m) (seconds of one target forward over m tokens; a step verifying k drafts runs T(k + 1)):

- **the knee K** (:func:`knee`) is the smallest k ≥ 1 whose forward is measurably slower than a plain one:
  T(k + 1) > (1 + ``KNEE_TOLERANCE``)·T(1). 5 % is the band inside which a repeated timing of the same
  forward moves on a quiet machine; a table still flat at its last knot extends along its last segment, and
  one that never rises has no knee (``NO_KNEE``).
- **Φ(k)** (:func:`phi`) = 0 for k < K, else T(k + 1) − T(1): the paper's Φ_{M_T}, in seconds. The
  per-step overhead o cancels: both the plain step and the k-draft step pay it.
- **the price of the i-th token** (:func:`token_price`) = (M_D + Φ(i) − Φ(i − 1)) / M_T, in plain target
  steps, M_T = T(1) + o. Summed over i ≤ γ it is Eq. 18's M_D·γ + Φ(γ) over M_T; below K it is c = M_D / M_T
  and the GT test α̂_i > price − ε is Eq. 5. Our reading: Eq. 2 names the i-th token's cost with Φ of the
  whole draft; its increment is what the i-th token adds to Eq. 18's step time. A table that dips (a fitted
  one may) is no discount: an increment below 0 counts as 0.
"""
from __future__ import annotations

import math
from typing import Callable

KNEE_TOLERANCE = 0.05
NO_KNEE = 1 << 30


def knee(verify: Callable[[int], float], last: int, tolerance: float = KNEE_TOLERANCE) -> int:
    """K: the smallest k >= 1 with verify(k + 1) > (1 + tolerance)·verify(1); ``last`` = the table's last knot
    (beyond it T grows along its last segment); ``NO_KNEE`` when it never rises that far."""
    limit = (1.0 + tolerance) * verify(1)
    for k in range(1, max(int(last), 1)):
        if verify(k + 1) > limit:
            return k
    m = max(int(last), 1)                       # T(m) <= limit here: extend along the last segment
    t_last, slope = verify(m), verify(m + 1) - verify(m)
    if slope <= 0:
        return NO_KNEE
    return m + int(math.floor((limit - t_last) / slope))   # k = m' − 1, m' the first length past m above the limit


def phi(verify: Callable[[int], float], k: int, k_knee: int) -> float:
    """Φ(k) in seconds: 0 below the knee, T(k + 1) − T(1) from it on (module docstring)."""
    if k < max(k_knee, 1):
        return 0.0
    return max(0.0, verify(k + 1) - verify(1))


def share(verify: Callable[[int], float], plain: float, i: int, k_knee: int) -> float:
    """The Φ share of the i-th verified token in plain steps: max(0, Φ(i) − Φ(i − 1)) / M_T (Eq. 2 / 6 / 18: what
    the i-th token — or tree node — adds to the step's target side; module docstring); inf when M_T is 0. The one
    place it is computed: ``token_price``, ``gt`` (``policies/gt.py``) and the trees (``policies/trees.py``)."""
    if plain <= 0:
        return float("inf")
    return max(0.0, phi(verify, i, k_knee) - phi(verify, i - 1, k_knee)) / plain


def token_price(draft: float, plain: float, verify: Callable[[int], float], i: int, k_knee: int) -> float:
    """The i-th drafted token's price in plain steps: (M_D + Φ(i) − Φ(i − 1)) / M_T = M_D / M_T + :func:`share`
    (module docstring); inf when M_T is 0."""
    if plain <= 0:
        return float("inf")
    return draft / plain + share(verify, plain, i, k_knee)
