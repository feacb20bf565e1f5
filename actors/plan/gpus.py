"""The GPUs a plan or a roofline prediction can name: memory, HBM bandwidth and dense peak FLOP/s.

Figures are the vendors' datasheet numbers for the SXM (H100, H200, A100) and PCIe (L4) parts,
dense (no structured sparsity): NVIDIA H100 Tensor Core GPU datasheet (H100 SXM5 80 GB:
3.35 TB/s, 989 TFLOP/s bf16, 1,979 TFLOP/s fp8/int8), NVIDIA H200 datasheet (141 GB, 4.8 TB/s,
same compute as H100 SXM), NVIDIA A100 datasheet (40 GB: 1,555 GB/s; 80 GB: 2,039 GB/s;
312 TFLOP/s bf16, 624 TOP/s int8, no fp8), NVIDIA L4 datasheet (24 GB, 300 GB/s, 121 TFLOP/s bf16,
242.5 TFLOP/s fp8/int8). Memory is in decimal gigabytes as sold; a process sees a little less
(the CUDA context), which :data:`WORKSPACE_BYTES` in ``actors/plan/memory_plan.py`` accounts for.
"""
from __future__ import annotations

from dataclasses import dataclass

from policies.errors import SpecsweepError

GB = 10 ** 9
TERA = 10 ** 12


@dataclass(frozen=True)
class GPU:
    """One GPU kind: memory (bytes), HBM bandwidth (bytes/s) and dense peak FLOP/s per operand width."""

    key: str
    label: str
    memory: float
    bandwidth: float
    bf16_flops: float
    int8_flops: float
    fp8_flops: float | None      # None: no fp8 tensor cores (A100)

    def peak_flops(self, quantization: str | None) -> float:
        """Peak for the matrix products a model runs: weight-only int8/int4 still multiply in bf16; fp8 where supported."""
        if quantization == "fp8" and self.fp8_flops:
            return self.fp8_flops
        return self.bf16_flops


GPUS = {g.key: g for g in (
    GPU("h100", "H100 80 GB", 80 * GB, 3.35 * TERA, 989 * TERA, 1979 * TERA, 1979 * TERA),
    GPU("h200", "H200 141 GB", 141 * GB, 4.8 * TERA, 989 * TERA, 1979 * TERA, 1979 * TERA),
    GPU("a100-80", "A100 80 GB", 80 * GB, 2.039 * TERA, 312 * TERA, 624 * TERA, None),
    GPU("a100-40", "A100 40 GB", 40 * GB, 1.555 * TERA, 312 * TERA, 624 * TERA, None),
    GPU("l4", "L4 24 GB", 24 * GB, 0.3 * TERA, 121 * TERA, 242.5 * TERA, 242.5 * TERA),
)}


def gpu(key: str) -> GPU:
    """The GPU kind ``key``; one line naming the valid kinds otherwise."""
    try:
        return GPUS[str(key).lower()]
    except KeyError:
        raise SpecsweepError(f"unknown GPU kind {key!r}: valid are {', '.join(GPUS)}") from None
