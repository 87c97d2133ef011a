"""What each of ncu's warp stall reasons means and what an engineer tries about it (the names as in
`smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`)."""

from __future__ import annotations

# reason -> (what the warps wait for, what to try)
STALL_ADVICE: dict[str, tuple[str, str]] = {
    "long_scoreboard": ("a global, local or texture load to return",
                        "more independent loads in flight per thread (unroll, float4 loads, cp.async prefetch), or "
                        "more resident warps"),
    "short_scoreboard": ("a shared-memory load or a transcendental (MUFU) result",
                         "fewer shared-memory round trips per FMA: hold operands in registers (register tiling), "
                         "vector loads (LDS.128), padding against bank conflicts"),
    "mio_throttle": ("the memory-input/output queue (shared memory, special functions) to drain",
                     "fewer and wider shared-memory instructions (LDS.128, ldmatrix), register tiling so each load "
                     "feeds several FMAs"),
    "lg_throttle": ("the local/global load-store queue to drain",
                    "fewer, wider global accesses (16-byte vectors), and no spills to local memory"),
    "barrier": ("the rest of their block at __syncthreads",
                "even work between barriers, fewer barriers per tile (double-buffered shared tiles), warp-level sync"),
    "membar": ("a memory fence", "fewer __threadfence calls, or a narrower scope (block instead of device)"),
    "math_pipe_throttle": ("a busy math pipe",
                           "cheaper instructions or a faster unit (tensor cores for products, packed half2)"),
    "wait": ("a fixed-latency dependency",
             "more independent instructions between dependent ones: unroll with separate accumulators"),
    "not_selected": ("another warp that the scheduler picked instead (the SM is busy issuing)",
                     "nothing about latency: fewer instructions per result"),
    "dispatch_stall": ("the dispatcher", "fewer instructions that conflict at dispatch; usually a minor cost"),
    "no_instruction": ("instructions to be fetched (instruction-cache misses, jumps)",
                       "less code in the hot loop: avoid very deep unrolling and large switch statements"),
    "branch_resolving": ("a branch target to be computed",
                         "fewer data-dependent branches in the hot loop: predication or branch-free arithmetic"),
    "drain": ("their stores to drain at exit", "fewer or coalesced stores at the end of the kernel"),
    "imc_miss": ("the immediate-constant cache", "fewer distinct constants read per loop, or pass them in registers"),
    "tex_throttle": ("the texture unit's queue", "fewer texture or surface fetches, or plain global loads instead"),
    "sleeping": ("__nanosleep or a yield", "shorter sleeps in spin loops"),
    "gmma": ("a warpgroup MMA (WGMMA) to complete", "deeper pipelining of the tile loads behind the MMAs"),
    "misc": ("miscellaneous hardware reasons", "look at the source-level stall columns in the full ncu report"),
}


def stall_meaning(reason: str) -> tuple[str, str]:
    return STALL_ADVICE.get(reason, (reason.replace("_", " "), "see ncu's warp state section for this reason"))
