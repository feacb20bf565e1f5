"""Linear weights packed once for the CPU, where a measurement on this machine says it pays.

Rule. On some CPUs the dense float32 matmul of m ≥ 2 rows repacks each weight matrix on every call while m = 1 streams
it once as a matrix-vector product, so packing every weight once into oneDNN's blocked layout
(``torch.utils.mkldnn.MkldnnLinear``) makes a verify forward cheaper; on others the packed call costs more at every
width. Measured on SmolLM2-135M (``python -m bench.cpu_prepack``, 2 threads, 2026-11-27): on one 2-core host
T(2)/T(1) = 1.64 and T(3)/T(1) = 2.00 dense, 1.16 and 1.16 packed; on another (AVX-512 FP16) the packed forward took
1.64× the dense one at m = 1 and 1.98× at m = 2, and every packed layer shape lost alone too. So the choice is
measured, not assumed: :func:`packing_pays` times one layer of each distinct shape dense and packed (interleaved,
the median of ``PROBE_REPEATS`` calls at each of ``PROBE_WIDTHS`` rows) and packs that shape only when packed takes at
most ``MARGIN`` of dense at every width — a shape that would slow the one-token step of ``ar`` stays dense, and so
does one near a tie. The verdict is kept per (shape, bias, threads) for the process, so every layer of a shape and
every later pair of the process agree; separate processes (Ray actors) measure for themselves and may differ on a
shape near the margin, which is why the cost model records how many layers its pair had packed
(``actors/costs/machine.py``: a stored model is reused only under the same count). Tests pin the mode through
``SPECSWEEP_CPU_PACK`` (the default of ``PairConfig.cpu_pack``).

:func:`packable` says when packing can apply at all: a model on the CPU whose parameters are all float32, run by the
eager runner (the static and compiled runners trace their own graphs), with oneDNN available. Only plain
``nn.Linear`` modules are packed (a quantized linear is a subclass and is left as it is). A packed model cannot be
trained, and a packed layer holds no ``weight`` parameter but the LM head, which keeps its dense weight as well (EAGLE
heads borrow it): whatever counts parameters counts them before packing (``actors/pair.py``). ``MkldnnLinear`` is a
TorchScript module (torch 2.13 warns that ``torch.jit.script_method`` is deprecated); where a later torch drops it,
:func:`packable` is False and pairs run dense. Greedy tokens are the same either way up to ties in the last bits
(tests/test_cpu_pack.py).
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

import torch
import torch.utils.mkldnn

PACK_MODES = ("auto", "always", "never")   # PairConfig.cpu_pack: measured per layer shape, every layer, none
PROBE_WIDTHS = (1, 4)                      # rows per timed call: a decode step and a typical verify
PROBE_REPEATS = 7                          # timed calls per width and form (after one untimed)
MARGIN = 0.9                               # pack a shape only when packed ≤ MARGIN × dense

_verdicts: dict[tuple[int, int, bool, int], bool] = {}


class PackedLinear(torch.nn.Module):
    """``linear``'s weight (and bias) packed once into oneDNN's layout; inputs and outputs stay dense, any leading shape.
    ``keep_weight``: the dense weight stays as this module's ``weight`` too (the LM head, which EAGLE heads borrow;
    tied to the input embeddings it costs no memory)."""

    def __init__(self, linear: torch.nn.Linear, keep_weight: bool = False):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.packed = torch.utils.mkldnn.MkldnnLinear(linear, torch.float32)
        if keep_weight:
            self.weight = linear.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.packed(x.reshape(-1, self.in_features)).reshape(*x.shape[:-1], self.out_features)


def packable(model: torch.nn.Module, engine: str) -> bool:
    """True when :func:`pack_linears` applies to ``model`` run by ``engine`` (module docstring)."""
    params = list(model.parameters())
    return (engine == "eager" and torch.backends.mkldnn.is_available() and bool(params)
            and hasattr(torch.utils.mkldnn, "MkldnnLinear")
            and all(p.device.type == "cpu" and p.dtype == torch.float32 for p in params))


def probe_seconds(linear: torch.nn.Linear) -> list[tuple[float, float]]:
    """[(dense, packed) seconds] of ``linear`` on random input, one pair per width in ``PROBE_WIDTHS``: the median of
    ``PROBE_REPEATS`` interleaved calls of each form."""
    packed = torch.utils.mkldnn.MkldnnLinear(linear, torch.float32)
    gen = torch.Generator().manual_seed(0)
    out = []
    with torch.inference_mode():
        for m in PROBE_WIDTHS:
            x = torch.randn(m, linear.in_features, generator=gen)
            linear(x), packed(x)                                     # first calls (allocation) untimed
            times: dict[str, list[float]] = {"dense": [], "packed": []}
            for _ in range(PROBE_REPEATS):
                for form, f in (("dense", linear), ("packed", packed)):
                    t = time.perf_counter()
                    f(x)
                    times[form].append(time.perf_counter() - t)
            out.append((statistics.median(times["dense"]), statistics.median(times["packed"])))
    return out


def packing_pays(linear: torch.nn.Linear,
                 probe: Callable[[torch.nn.Linear], list[tuple[float, float]]] | None = None) -> bool:
    """True when packed ≤ ``MARGIN`` × dense at every probed width for ``linear``'s shape on this machine (module
    docstring; ``probe`` defaults to :func:`probe_seconds`); measured once per (in, out, bias, threads) in this
    process."""
    key = (linear.in_features, linear.out_features, linear.bias is not None, torch.get_num_threads())
    if key not in _verdicts:
        _verdicts[key] = all(p <= MARGIN * d for d, p in (probe or probe_seconds)(linear))
    return _verdicts[key]


def packed_layers(*models) -> int:
    """How many :class:`PackedLinear` modules the ``models`` hold (what is no module skipped), each counted once."""
    seen = {id(m): m for model in models if isinstance(model, torch.nn.Module) for m in model.modules()
            if isinstance(m, PackedLinear)}
    return len(seen)


def pack_linears(model: torch.nn.Module, where: Callable[[torch.nn.Linear], bool] | None = None) -> int:
    """Replace every plain ``nn.Linear`` of ``model`` for which ``where`` holds (every one when None) by a
    :class:`PackedLinear`, in place (the output embedding keeps its dense ``weight`` beside the packed one); returns
    how many."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    n = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and (where is None or where(child)):
                setattr(parent, name, PackedLinear(child, keep_weight=child is head))
                n += 1
    return n
