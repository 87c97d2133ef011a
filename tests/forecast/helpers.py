"""Judged rows for forecast tests: small problems whose candidates' speedups follow their code, so a forecaster
that reads the code can learn them and one that does not cannot."""

from __future__ import annotations

import random

from kernelpro.forecast.classes import speedup_class
from kernelpro.forecast.dataset import JudgedRow, source_hash

KERNEL = 'import torch\nfrom kernelpro.runtime import CudaKernel\nSRC = "__global__ void k(float4* x){}"\n' \
         'class ModelNew(torch.nn.Module):\n    pass\n'
PLAIN = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"


def reference(index: int) -> str:
    return (f"import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
            f"        return torch.relu(x) * {index}\n\ndef get_inputs():\n    return [torch.randn(8)]\n\n"
            "def get_init_inputs():\n    return []\n")


def judged_rows(problems: int = 24, per_problem: int = 6, seed: int = 0, failures: int = 1) -> list[JudgedRow]:
    rng = random.Random(seed)
    rows = []
    for p in range(problems):
        source = reference(p)
        for c in range(per_problem):
            fast = rng.random() < 0.5
            speedup = rng.uniform(2.1, 3.9) if fast else rng.uniform(0.72, 0.98)
            failed = c < failures
            rows.append(JudgedRow(
                problem_name=f"p{p}", problem_hash=source_hash(source), problem_source=source,
                candidate_source=(KERNEL if fast else PLAIN) + f"# {c}\n", hardware="NVIDIA H200",
                verdict="incorrect" if failed else "ok", speedup=None if failed else speedup,
                speed_class=0 if failed else speedup_class(speedup), reference_ms=1.0, traffic_bytes=10**6))
    return rows
