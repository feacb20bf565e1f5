"""Linear weights packed once for the CPU: a verify forward over m ≥ 2 tokens stops repacking every weight per call.

Rule. On a CPU the dense float32 matmul of m ≥ 2 rows repacks each weight matrix on every call, while m = 1 streams it
once as a matrix-vector product; measured on SmolLM2-135M (``python -m bench.cpu_prepack``, 2026-11-27, 2 threads):
T(2)/T(1) = 1.64 and T(3)/T(1) = 2.00 dense, 1.16 and 1.16 with every ``nn.Linear`` packed once into oneDNN's blocked
layout (``torch.utils.mkldnn.MkldnnLinear``), greedy tokens unchanged. :func:`pack_linears` does that to an
inference model in place; :func:`packable` says when it applies: a model on the CPU whose parameters are all float32,
run by the eager runner (the static and compiled runners trace their own graphs), with oneDNN available. Only plain
``nn.Linear`` modules are packed (a quantized linear is a subclass and is left as it is). A packed model cannot be
trained, and a packed layer holds no ``weight`` parameter but the LM head, which keeps its dense weight as well (EAGLE
heads borrow it): whatever counts parameters counts them before packing (``actors/pair.py``). ``MkldnnLinear`` is a
TorchScript module (torch 2.13 warns that ``torch.jit.script_method`` is deprecated); where a later torch drops it,
:func:`packable` is False and pairs run dense, as before.
"""
from __future__ import annotations

import torch
import torch.utils.mkldnn


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


def pack_linears(model: torch.nn.Module) -> int:
    """Replace every plain ``nn.Linear`` of ``model`` by a :class:`PackedLinear`, in place (the output embedding keeps
    its dense ``weight`` beside the packed one); returns how many."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    n = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear:
                setattr(parent, name, PackedLinear(child, keep_weight=child is head))
                n += 1
    return n
