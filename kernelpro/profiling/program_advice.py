"""Program-level advice: where the lever is between kernels, not inside one.

unfused_kernels: several kernels of a program each stream about the whole tensor through DRAM at low
arithmetic intensity (PyTorch's elementwise and normalisation kernels, one per op). Each one is near the memory
roof, so tuning any of them gains little; fusing them into one pass removes the round trips in between.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernelpro.profiling.diagnosers.signals import duration, evidence, finding
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.roofline import FAR_BELOW_RIDGE, Roofline

# A kernel streams "the whole tensor" when it moves at least this share of the bytes the largest such kernel moves.
SAME_TENSOR_SHARE = 0.5
# Together the streaming kernels take at least this share of the GPU time.
STREAMING_TIME_SHARE = 0.5
MIN_STREAMING_KERNELS = 2


def _streams(r: Roofline) -> bool:
    """Low intensity and bytes that count: a kernel whose time is its DRAM traffic."""
    low = r.intensity_flop_per_byte is None or (
        r.ridge_flop_per_byte is not None and r.intensity_flop_per_byte < FAR_BELOW_RIDGE * r.ridge_flop_per_byte)
    return bool(r.dram_bytes) and low and r.kind in ("memory_bound", "latency_bound", "launch_bound")


def unfused_streams(kernels: Sequence[tuple[str, float, Roofline]], total_ns: float) -> list[Finding]:
    """``kernels``: (name, GPU time in ns, roofline) per diagnosed kernel of a program."""
    streaming = [(name, spent, r) for name, spent, r in kernels if _streams(r)]
    if len(streaming) < MIN_STREAMING_KERNELS or not total_ns:
        return []
    largest = max(r.dram_bytes or 0.0 for _, _, r in streaming)
    whole = [(name, spent, r) for name, spent, r in streaming if (r.dram_bytes or 0.0) >= SAME_TENSOR_SHARE * largest]
    spent_ns = sum(spent for _, spent, _ in whole)
    if len(whole) < MIN_STREAMING_KERNELS or spent_ns / total_ns < STREAMING_TIME_SHARE:
        return []
    moved = sum(r.dram_bytes or 0.0 for _, _, r in whole)
    # Fused, the chain moves about what its largest member does: the rest of the bytes (and their time) go.
    saved = (moved - largest) / moved * spent_ns / total_ns
    names = [name.split("(")[0][:60] for name, _, _ in whole]
    return [finding(
        "unfused_kernels", f"Unfused kernels: {len(whole)} kernels each stream about the whole tensor through DRAM "
        f"({duration(spent_ns)}, {spent_ns / total_ns:.0%} of GPU time)",
        impact=saved, detail="program",
        explanation=(f"{len(whole)} kernels ({', '.join(names[:4])}) each read and write roughly the same "
                     f"{largest / 1e6:,.0f} MB at low arithmetic intensity, so each sits near the memory roof and "
                     "the program pays one DRAM round trip per kernel. Tuning any one of them gains little; one "
                     "fused pass keeps the intermediates in registers."),
        advice=["Fuse the chain into one kernel that reads the input once and writes the output once (a Triton "
                "or CUDA kernel doing all the steps per element, or torch.compile, which fuses elementwise and "
                "normalisation chains).",
                "Where a reduction (a norm, a softmax) sits in the chain, fuse the elementwise ops before and "
                "after it into the reduction's kernel: one row per block, the row kept in registers or shared "
                "memory."],
        evidence=[evidence("kernels streaming the tensor", len(whole), "kernels", f">= {MIN_STREAMING_KERNELS}"),
                  evidence("their DRAM bytes", moved, "byte"),
                  evidence("their share of GPU time", spent_ns / total_ns * 100, "%",
                           f">= {STREAMING_TIME_SHARE:.0%}")])]
