"""Static features of a candidate against its reference: what a forecaster without a model can see.

Nothing here runs the candidate. Features: the candidate's kind, counts of code constructs in it and in the
reference, their sizes, the reference's measured time and compulsory bytes where known, the roofline headroom
(how far the reference's time is above the time its bytes take at peak bandwidth) and its roofline class (compute-
heavy operators or not), and the kernels' ptxas registers and spills and SASS mix where ``kernel_stats`` compiled
them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from kernelpro.search.kinds import detect_kind

KINDS = ("pytorch", "nvrtc", "cubin", "triton", "cute_dsl", "load_inline", "reference")

# Constructs counted in the candidate (log1p of the count).
CANDIDATE_PATTERNS = {
    "global_kernels": r"__global__", "shared_memory": r"__shared__", "syncthreads": r"__syncthreads",
    "vector_types": r"\bfloat4\b|\bhalf2\b|\bint4\b|__ldg", "tensor_cores": r"\bwmma\b|\bmma\.|\bHMMA\b|cublas",
    "atomics": r"\batomic[A-Z]\w*", "unroll": r"#pragma\s+unroll", "warp_shuffle": r"__shfl_\w+",
    "torch_compile": r"torch\.compile", "cuda_graphs": r"CUDAGraph|cuda\.graph", "streams": r"\bStream\b",
    "torch_calls": r"\btorch\.\w+\(", "functional_calls": r"\bF\.\w+\(", "triton_jit": r"@triton\.jit",
    "channels_last": r"channels_last", "low_precision": r"\bhalf\(\)|float16|bfloat16|autocast|allow_tf32",
    "cudnn_flags": r"cudnn\.(benchmark|allow_tf32)", "inplace": r"inplace\s*=\s*True|\.[a-z]\w*[a-z0-9]_\(",
    "contiguous": r"\.contiguous\(\)", "jit_script": r"torch\.jit\.(script|trace)", "no_grad": r"no_grad",
    "caching": r"_cache|cached|lru_cache", "fused": r"fus(e|ed|ion)",
}
# Operators in the reference: what kind of work it does.
REFERENCE_PATTERNS = {
    "ref_matmul": r"matmul|\bmm\(|bmm|nn\.Linear|einsum|\s@\s", "ref_conv": r"[Cc]onv\w*[123]d|ConvTranspose",
    "ref_norm": r"Norm\w*\(|norm\(", "ref_reduce": r"\.(sum|mean|max|min|prod|argmax|argmin|cumsum)\(",
    "ref_softmax": r"softmax", "ref_elementwise": r"relu|gelu|sigmoid|tanh|exp\(|clamp|hardswish|mish|swish",
    "ref_pool": r"Pool\w*\(", "ref_rnn": r"LSTM|GRU|RNN", "ref_attention": r"attention|Attention",
    "ref_layers": r"nn\.\w+\(",
}
COMPILED = {name: re.compile(p) for name, p in {**CANDIDATE_PATTERNS, **REFERENCE_PATTERNS}.items()}
STAT_NAMES = ("max_registers", "spill_bytes", "shared_bytes", "tensor_core_share", "wide_load_share", "fp64_share")


@dataclass
class Inputs:
    """What the features are computed from."""

    problem_source: str
    candidate_source: str
    reference_ms: float | None = None
    traffic_bytes: int | None = None
    bandwidth_gbs: float | None = None
    kernel_stats: dict[str, float] = field(default_factory=dict)
    """``kernel_stats.kernel_stats``'s summary: registers, spills, SASS mix (empty where nothing compiled)."""
    problem_name: str = ""
    hardware: str = ""
    """The GPU's name (``NVIDIA H200``), for forecasters that read the hardware's specs."""

    def floor_ms(self) -> float | None:
        """The time the problem's compulsory bytes take at peak bandwidth."""
        if not self.traffic_bytes or not self.bandwidth_gbs:
            return None
        return self.traffic_bytes / (self.bandwidth_gbs * 1e9) * 1e3

    def headroom(self) -> float | None:
        """The largest speedup the memory roofline allows: the reference's time over that floor."""
        floor = self.floor_ms()
        return self.reference_ms / floor if floor and self.reference_ms else None


def feature_names() -> list[str]:
    return ([f"kind_{k}" for k in KINDS] + list(CANDIDATE_PATTERNS) + list(REFERENCE_PATTERNS)
            + ["candidate_lines", "reference_lines", "length_ratio", "log_reference_ms", "has_reference_ms",
               "log_traffic_mb", "log_headroom", "has_headroom", "compute_heavy", "has_kernel_stats",
               *STAT_NAMES])


def features(inputs: Inputs) -> np.ndarray:
    cand, ref = inputs.candidate_source, inputs.problem_source
    kind = detect_kind(cand)
    row = [1.0 if kind == k else 0.0 for k in KINDS]
    row += [math.log1p(len(COMPILED[n].findall(cand))) for n in CANDIDATE_PATTERNS]
    ref_counts = {n: len(COMPILED[n].findall(ref)) for n in REFERENCE_PATTERNS}
    row += [math.log1p(ref_counts[n]) for n in REFERENCE_PATTERNS]
    cand_lines, ref_lines = cand.count("\n") + 1, ref.count("\n") + 1
    row += [math.log(cand_lines), math.log(ref_lines), math.log(cand_lines / ref_lines)]
    row += [math.log10(inputs.reference_ms) if inputs.reference_ms else 0.0, float(bool(inputs.reference_ms))]
    row += [math.log10(inputs.traffic_bytes / 1e6) if inputs.traffic_bytes else 0.0]
    headroom = inputs.headroom()
    row += [math.log2(max(headroom, 1e-3)) if headroom else 0.0, float(headroom is not None)]
    # The reference's roofline class, read from its operators: matmuls, convolutions, attention and recurrences
    # do many FLOPs per byte; the rest is memory-bound.
    row += [float(any(ref_counts[n] for n in ("ref_matmul", "ref_conv", "ref_rnn", "ref_attention")))]
    stats = inputs.kernel_stats
    row += [float(bool(stats))] + [float(stats.get(n, 0.0)) for n in STAT_NAMES]
    return np.asarray(row, dtype=float)
