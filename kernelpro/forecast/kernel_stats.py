"""What the compilers say about a candidate's kernels, without a GPU: ptxas registers and spills, and the SASS
instruction mix. Only for kernels whose compile request the judge can read from the source (literal
``CudaKernel``/``compile_cubin`` calls); everything else gets no statistics."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kernelpro.config import CompileSettings
from kernelpro.harness.compile_ahead import compile_ahead

log = logging.getLogger(__name__)


def kernel_stats(sources: Sequence[str], settings: CompileSettings) -> list[dict[str, float]]:
    """Per candidate: the largest register count, spill and shared bytes over its kernels, and the shares of
    tensor-core, 128-bit global loads and FP64 instructions in their SASS; empty where nothing compiled."""
    try:
        compiled = compile_ahead(list(sources), settings)
    except Exception as exc:  # noqa: BLE001 - statistics are optional: a broken toolchain means none
        log.warning("no kernel statistics: %s", exc)
        return [{} for _ in sources]
    return [_summary(results) for results in compiled]


def _summary(results: list) -> dict[str, float]:
    from kernelpro.profiling.sass import analyze_cubin

    good = [r for r in results if r.ok and r.resources]
    if not good:
        return {}
    resources = [res for r in good for res in r.resources.values()]
    stats = {"max_registers": float(max((res.registers or 0) for res in resources)),
             "spill_bytes": float(sum((res.spill_stores or 0) + (res.spill_loads or 0) for res in resources)),
             "shared_bytes": float(max((res.shared_static or 0) for res in resources))}
    total = tensor = wide = loads = fp64 = 0
    for result in good:
        if result.kind != "cubin" or not result.binary:
            continue
        try:
            functions = analyze_cubin(result.binary).values()
        except Exception as exc:  # noqa: BLE001 - no disassembler: registers and spills only
            log.debug("no SASS: %s", exc)
            continue
        for sass in functions:
            total += sass.instructions
            tensor += sum(sass.tensor_core.values())
            fp64 += sum(sass.fp64.values())
            loads += sum(sass.global_load_bits.values())
            wide += sass.global_load_bits.get(128, 0)
    if total:
        stats |= {"tensor_core_share": tensor / total, "fp64_share": fp64 / total,
                  "wide_load_share": wide / loads if loads else 0.0}
    return stats
