"""Order a kernel's findings by impact, with each cause ahead of the symptoms it explains.

Several plants show a second id as a symptom (a register-limited kernel is also latency-bound; a divergent
one keeps the FMA pipe busy; an uncoalesced one keeps DRAM busy). A symptom's own impact can exceed its
cause's, since it measures the same lost time from the other side, so impact alone would put it first.
"""

from __future__ import annotations

from kernelpro.profiling.findings import Finding

# Symptom id -> the ids that, when present on the same kernel, explain it (most specific first).
SYMPTOM_CAUSES: dict[str, tuple[str, ...]] = {
    "memory_latency_bound": ("occupancy_limited", "register_spills", "uncoalesced_global", "atomic_contention",
                             "low_parallelism"),
    "compute_bound": ("tensor_cores_unused", "warp_divergence"),
    "memory_bound": ("uncoalesced_global", "register_spills", "smem_bank_conflicts"),
}


def rank_findings(findings: list[Finding]) -> list[Finding]:
    """Highest impact first; a symptom is marked and placed right after its cause."""
    by_id = {f.id: f for f in findings}
    marked = []
    for f in findings:
        cause = next((by_id[c] for c in SYMPTOM_CAUSES.get(f.id, ()) if c in by_id), None)
        marked.append((f.model_copy(update={"symptom_of": cause.id}) if cause else f, cause))
    return [f for f, _ in sorted(marked, key=lambda pair: (-(pair[1] or pair[0]).impact, pair[1] is not None,
                                                           -pair[0].impact, pair[0].id))]
