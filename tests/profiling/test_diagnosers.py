"""Stage-2 diagnosers on the real H200 fixtures (tests/data/ncu/planted) and on hand-built edge cases."""

from __future__ import annotations

import random
import re
from functools import cache
from pathlib import Path

import pytest

from kernelpro.profiling.diagnose import diagnose, diagnose_program
from kernelpro.profiling.diagnosers import DIAGNOSERS
from kernelpro.profiling.diagnosers.ranking import rank_findings
from kernelpro.profiling.findings import FINDING_IDS, Finding
from kernelpro.profiling.gpu_specs import lookup
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.ncu_csv import read_ncu_csv

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "ncu" / "planted"
SOURCES = ROOT / "benchmarks" / "profiling" / "planted"
GPU = lookup("NVIDIA H200")

# Fixture -> the id it was planted for (None: a healthy control).
PLANTED = {name: name for name in FINDING_IDS if (FIXTURES / f"{name}.csv").exists()} | {
    "occupancy_limited_registers": "occupancy_limited", "occupancy_limited_smem": "occupancy_limited",
    "occupancy_limited_blocksize": "occupancy_limited", "healthy_smem_padded": None, "healthy_wmma_gemm": None}
# The legitimate second ids (benchmarks/profiling/README.md): symptoms of the planted cause, or the healthy
# state of a control.
SECONDARY = {"occupancy_limited_registers": {"memory_latency_bound"},
             "occupancy_limited_smem": {"memory_latency_bound"},
             "occupancy_limited_blocksize": {"memory_latency_bound"}, "warp_divergence": {"compute_bound"},
             "tensor_cores_unused": {"compute_bound"}, "uncoalesced_global": {"memory_bound"},
             "healthy_smem_padded": {"memory_bound"}}
OCCUPANCY_DETAIL = {"occupancy_limited_registers": "registers", "occupancy_limited_smem": "shared memory",
                    "occupancy_limited_blocksize": "blocks per SM"}


@cache
def load(name: str) -> KernelMetrics:
    return read_ncu_csv(FIXTURES / f"{name}.csv")[0]


def must_not_fire(name: str) -> set[str]:
    """The ids a plant's header comment says must not fire (the list up to the sentence's full stop)."""
    header = (SOURCES / f"{name}.cu").read_text().split("#include")[0]
    text = " ".join(line.lstrip("/ ") for line in header.splitlines())
    match = re.search(r"Must NOT fire:(.*?)\.(\s|$)", text)
    assert match, f"{name}.cu has no 'Must NOT fire' list"
    return {token for token in re.findall(r"[a-z_]+", match[1]) if token in FINDING_IDS}


def fired(k: KernelMetrics) -> set[str]:
    return {f.id for diagnoser in DIAGNOSERS.values() for f in diagnoser(k, GPU)}


def test_every_fixture_is_accounted_for():
    assert {p.stem for p in FIXTURES.glob("*.csv")} == set(PLANTED)
    assert set(DIAGNOSERS) == set(FINDING_IDS)


@pytest.mark.parametrize("name", [n for n, planted in PLANTED.items() if planted])
def test_planted_cause_ranks_first(name):
    findings = diagnose(load(name), GPU).findings
    assert findings, f"{name}: no finding"
    assert findings[0].id == PLANTED[name], [f.id for f in findings]
    assert not findings[0].symptom_of


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_only_the_planted_cause_and_its_symptoms_fire(name):
    """Every diagnoser run directly (no stage-1 routing) on every fixture."""
    allowed = {PLANTED[name]} | SECONDARY.get(name, set())
    assert fired(load(name)) <= allowed


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_plants_must_not_fire_lists_hold(name):
    forbidden = must_not_fire(name)
    assert forbidden, name
    assert not fired(load(name)) & forbidden


@pytest.mark.parametrize("name", ["healthy_smem_padded", "healthy_wmma_gemm"])
def test_healthy_controls_get_no_false_alarm(name):
    ids = {f.id for f in diagnose(load(name), GPU).findings}
    assert not ids & {"smem_bank_conflicts", "tensor_cores_unused", "uncoalesced_global", "occupancy_limited"}


@pytest.mark.parametrize("name,symptom", [(n, s) for n, ids in SECONDARY.items() if PLANTED[n] for s in ids])
def test_symptoms_rank_after_their_cause_and_name_it(name, symptom):
    findings = diagnose(load(name), GPU).findings
    ids = [f.id for f in findings]
    assert ids.index(PLANTED[name]) < ids.index(symptom)
    assert findings[ids.index(symptom)].symptom_of == PLANTED[name]


@pytest.mark.parametrize("name,detail", OCCUPANCY_DETAIL.items())
def test_occupancy_names_its_limiter(name, detail):
    (finding,) = DIAGNOSERS["occupancy_limited"](load(name), GPU)
    assert finding.detail == detail


@pytest.mark.parametrize("name,id,expected", [
    ("occupancy_limited_registers", "occupancy_limited", "__launch_bounds__(128, 4)"),
    ("occupancy_limited_registers", "occupancy_limited", "204 registers"),
    ("occupancy_limited_smem", "occupancy_limited", "Under 56 KiB per block 4 fit"),
    ("occupancy_limited_blocksize", "occupancy_limited", "at least 64 threads per block"),
    ("smem_bank_conflicts", "smem_bank_conflicts", "[32][33]"),
    ("low_parallelism", "low_parallelism", ">= 264 blocks of 256 threads"),
    ("uncoalesced_global", "uncoalesced_global", "covers 4 sectors"),
    ("register_spills", "register_spills", "at 64 registers 4 blocks of 256 threads still fit (50% occupancy)"),
    ("memory_latency_bound", "memory_latency_bound", "3.4x more bytes in flight"),
    ("tensor_cores_unused", "tensor_cores_unused", "989 against 67 TFLOP/s"),
])
def test_advice_carries_numbers_from_the_profile(name, id, expected):
    (finding,) = DIAGNOSERS[id](load(name), GPU)
    assert any(expected in advice for advice in finding.advice), finding.advice


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_findings_are_complete_and_ranked(name):
    findings = diagnose(load(name), GPU).findings
    for f in findings:
        assert f.id in FINDING_IDS and f.evidence and f.advice and f.explanation.count(".") >= 2
        assert all(e.threshold for e in f.evidence[:1]), "the deciding metric states its threshold"
    causes = [f.impact for f in findings if not f.symptom_of]
    assert causes == sorted(causes, reverse=True)


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_render_is_concise(name):
    text = diagnose(load(name), GPU).render()
    assert len(text.split()) < 400
    assert text.splitlines()[1].startswith("Roofline: ")


def test_dict_form_has_the_agreed_shape():
    entry = diagnose(load("uncoalesced_global"), GPU).to_dict()
    assert {"name", "launch", "duration_ns", "sm_clock_hz", "roofline", "findings"} <= set(entry)
    assert {"kind", "distances", "summary"} <= set(entry["roofline"])
    first = entry["findings"][0]
    assert {"id", "severity", "evidence", "explanation", "advice", "impact"} <= set(first)
    assert {"metric", "value", "threshold"} <= set(first["evidence"][0])


# --- programs ---------------------------------------------------------------------------------------------

def test_program_groups_launches_and_orders_by_time():
    kernels = read_ncu_csv(FIXTURES / "launch_overhead.csv") + [load("memory_bound"), load("compute_bound")]
    program = diagnose_program(kernels, GPU, top=2)
    assert [g.name for g in program.kernels] == ["planted_compute_bound", "planted_memory_bound",
                                                 "planted_launch_overhead"]
    assert program.kernels[2].launches == 5 and program.kernels[2].diagnosis is None
    assert abs(sum(g.share for g in program.kernels) - 1) < 1e-9
    assert not program.findings  # the short launches are 1 % of the time
    data = program.to_dict()
    assert data["kernels"][0]["roofline"]["kind"] == "compute_bound" and "roofline" not in data["kernels"][2]


def test_program_of_short_launches_gets_launch_overhead():
    program = diagnose_program(read_ncu_csv(FIXTURES / "launch_overhead.csv"), GPU)
    (finding,) = program.findings
    assert finding.id == "launch_overhead" and finding.detail == "program" and finding.severity == "high"
    group = program.kernels[0]
    assert group.launches == 5 and group.diagnosis is not None
    assert group.diagnosis.findings[0].id == "launch_overhead"
    assert "5 launches" in program.render()


def test_empty_program():
    program = diagnose_program([], GPU)
    assert program.kernels == [] and program.findings == [] and program.total_ns == 0


# --- edge cases -------------------------------------------------------------------------------------------

def test_no_metrics_at_all():
    k = KernelMetrics(name="bare", launch=0)
    assert all(diagnoser(k, GPU) == [] for diagnoser in DIAGNOSERS.values())
    result = diagnose(k, GPU)
    assert result.roofline.kind == "unknown" and result.findings == []
    assert "No specific bottleneck found" in result.render()


def test_zero_duration_does_not_crash():
    values = dict(load("memory_bound").values) | {"gpu__time_duration.sum": 0.0}
    result = diagnose(KernelMetrics(name="zero", launch=0, values=values), GPU)
    assert result.roofline.achieved_gbs is None and result.roofline.kind == "memory_bound"
    assert "launch_overhead" not in {f.id for f in result.findings}


def test_speed_of_light_section_alone():
    sol = {m: v for m, v in load("memory_bound").values.items()
           if m.startswith(("sm__throughput", "gpu__compute_memory", "gpu__dram", "gpu__time", "launch__"))}
    result = diagnose(KernelMetrics(name="sol", launch=0, values=sol), GPU)
    assert result.roofline.kind == "memory_bound"
    assert [f.id for f in result.findings] == ["memory_bound"]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_random_missing_metrics_never_crash(name, seed):
    values = load(name).values
    kept = dict(random.Random(seed).sample(sorted(values.items()), len(values) // 3))
    diagnose(KernelMetrics(name=name, launch=0, values=kept), GPU, only=FINDING_IDS)


def test_partial_last_warp_is_not_divergence():
    k = KernelMetrics(name="k", launch=0, values={"launch__block_size": 48,
                                                  "smsp__thread_inst_executed_per_inst_executed.ratio": 24.0})
    assert DIAGNOSERS["warp_divergence"](k, GPU) == []
    k = KernelMetrics(name="k", launch=0, values={"launch__block_size": 48,
                                                  "smsp__thread_inst_executed_per_inst_executed.ratio": 12.0})
    assert DIAGNOSERS["warp_divergence"](k, GPU)[0].impact > 0


def test_local_arrays_are_told_apart_from_spills():
    k = KernelMetrics(name="k", launch=0, values={"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum": 900.0,
                                                  "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 100.0,
                                                  "sass__inst_executed_register_spilling": 0.0})
    (finding,) = DIAGNOSERS["register_spills"](k, GPU)
    assert finding.detail == "local arrays" and finding.impact == 0.45


def test_ranking_puts_causes_before_symptoms():
    def f(id: str, impact: float) -> Finding:
        return Finding(id=id, severity="low", title=id, explanation="x.", impact=impact)

    ranked = rank_findings([f("memory_latency_bound", 0.9), f("barrier_stalls", 0.5), f("occupancy_limited", 0.3)])
    assert [r.id for r in ranked] == ["barrier_stalls", "occupancy_limited", "memory_latency_bound"]
    assert ranked[2].symptom_of == "occupancy_limited" and not ranked[0].symptom_of
    assert [r.id for r in rank_findings([f("compute_bound", 0.2), f("barrier_stalls", 0.1)])] == [
        "compute_bound", "barrier_stalls"]
