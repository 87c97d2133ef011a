"""One extension built with torch's own ``load_inline``/``load``, and never imported by the builder.

The build goes through torch's code path (the same generated ``main.cpp`` with its pybind11 bindings, the
same ninja file and flags), with the final import replaced by nothing: in the judge's pool no candidate code
(not even a static initialiser in its C++) runs. ``python -m kernelpro.harness.inline_build.build`` builds
one job given as JSON on stdin into the cache and writes its outcome as JSON to ``result_path``.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from kernelpro.harness.inline_build.cache import InlineCache
from kernelpro.harness.inline_build.spec import BUILD_ONLY, InlineSpec

BUILD_ERROR_PREFIX = "Error building extension"


class BuildFailed(Exception):
    """The compiler or linker refused the sources; ``log`` is what they printed."""

    def __init__(self, log: str) -> None:
        super().__init__(log)
        self.log = log


FULL_HEADER = "#include <torch/extension.h>"
LEAN_HEADER = "#include <torch/types.h>"
# What torch/extension.h declares beyond torch/types.h (torch/all.h's libraries, torch/python.h's bindings): a CUDA
# source naming any of these keeps the full header.
NEEDS_FULL_HEADER = ("py::", "pybind11", "PYBIND11", "PyObject", "Py_", "THP", "torch::nn", "torch::optim",
                     "torch::autograd", "torch::jit", "torch::data", "torch::serialize", "torch::python",
                     "torch::cuda::", "torch::fft", "torch::linalg", "torch::special", "torch::nested",
                     "torch::sparse")


def lean_variant(spec: InlineSpec) -> InlineSpec | None:
    """``spec`` with its CUDA source on ``torch/types.h``, where that cannot change what the source means: every
    name it uses then comes from the same declarations (types.h is part of what extension.h includes), and a
    name only extension.h declares makes the lean build fail, not resolve elsewhere. None where it does not
    apply."""
    text = "\n".join(spec.cuda_sources)
    if FULL_HEADER not in text or any(word in text for word in NEEDS_FULL_HEADER):
        return None
    return spec.model_copy(update={"cuda_sources": [s.replace(FULL_HEADER, LEAN_HEADER) for s in spec.cuda_sources]})


def build_library(spec: InlineSpec, build_dir: Path, lean_headers: bool = False) -> bool:
    """Build ``spec`` into ``build_dir`` (leaving ``<name>.so`` there) with ``TORCH_CUDA_ARCH_LIST`` as set.

    With ``lean_headers``, the CUDA source is tried on ``torch/types.h`` first (``lean_variant``) and built as
    written if that fails. Returns whether the lean build is the one kept.
    """
    lean = lean_variant(spec) if lean_headers else None
    if lean is not None:
        try:
            _build_once(lean, build_dir / "lean")
        except BuildFailed:
            pass
        else:
            shutil.move(str(build_dir / "lean" / f"{spec.name}.so"), str(build_dir / f"{spec.name}.so"))
            return True
    _build_once(spec, build_dir)
    return False


def _build_once(spec: InlineSpec, build_dir: Path) -> None:
    build_dir.mkdir(parents=True, exist_ok=True)
    from torch.utils import cpp_extension

    builder = cpp_extension.load_inline if spec.kind == "inline" else cpp_extension.load
    builder = getattr(builder, "__wrapped__", builder)  # the real one, when a worker has put its own in place
    importer = cpp_extension._import_module_from_library
    # A name torch has built before in this process gets a version suffix (``name_v1``), or no build at all if
    # the sources look unchanged: every build here starts from a clean slate.
    cpp_extension.JIT_EXTENSION_VERSIONER.entries.pop(spec.name, None)
    cpp_extension._import_module_from_library = lambda *args, **kwargs: None
    try:
        arguments = {k: v for k, v in spec.load_arguments().items() if k not in BUILD_ONLY}
        builder(**arguments, build_directory=str(build_dir), verbose=False)
    except RuntimeError as exc:
        text = str(exc)
        if BUILD_ERROR_PREFIX in text or "Error compiling objects" in text:
            raise BuildFailed(text.split(": ", 1)[1] if ": " in text else text) from None
        raise
    finally:
        cpp_extension._import_module_from_library = importer
        cpp_extension.JIT_EXTENSION_VERSIONER.entries.pop(spec.name, None)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build_into_cache(spec: InlineSpec, key: str, cache: InlineCache, built_by: str,
                     lean_headers: bool = False) -> dict[str, Any]:
    """The entry for ``key``, built now (under its lock) unless some process already did.

    Returns ``{"built": bool, "build_s", "cpu_s", "entry"}``; raises ``BuildFailed`` for sources that do not
    build.
    """
    if cache.lookup(key, spec.name) is not None:
        return {"built": False, "entry": str(cache.entry(key)), **_recorded(cache, key)}
    with cache.lock(key):
        if cache.lookup(key, spec.name) is not None:  # built by another process while we waited
            return {"built": False, "entry": str(cache.entry(key)), **_recorded(cache, key)}
        build_dir = cache.staging(key)
        try:
            started, cpu_before = time.monotonic(), _children_cpu_s()
            lean = build_library(spec, build_dir, lean_headers)
            record = {"build_s": round(time.monotonic() - started, 3),
                      "cpu_s": round(_children_cpu_s() - cpu_before, 3), "built_by": built_by, "lean_headers": lean}
            entry = cache.publish(key, spec.name, build_dir, record)
        finally:
            shutil.rmtree(build_dir, ignore_errors=True)
    return {"built": True, "entry": str(entry), **record}


def _recorded(cache: InlineCache, key: str) -> dict[str, Any]:
    record = cache.record(key)
    return {"first_build_s": record.get("build_s"), "first_built_by": record.get("built_by")}


BUILD_NICENESS = 10  # the compilers yield the CPU to the judging lanes' workers, whose timing it would disturb


def main() -> None:
    from kernelpro.harness.isolation.walls import isolate_worker

    os.nice(BUILD_NICENESS)  # inherited by ninja, nvcc and the host compiler
    job = json.loads(sys.stdin.read())
    # The sources are a candidate's: an #include of /proc/<pid>/environ, or a flag that slipped through
    # ``spec.runs_a_program``, must find no ancestor to read and no network.
    isolate_worker(landlock=True)
    os.environ["TORCH_CUDA_ARCH_LIST"] = job["arch_list"]
    spec = InlineSpec.model_validate(job["spec"])
    try:
        outcome: dict[str, Any] = {"ok": True, **build_into_cache(spec, job["key"], InlineCache(job["cache_root"]),
                                                                  "pool", job.get("lean_headers", False))}
    except BuildFailed as failure:
        outcome = {"ok": False, "failure": "compile", "log": failure.log}
    except Exception as exc:  # noqa: BLE001 - whatever else happens is this build's outcome
        outcome = {"ok": False, "failure": "internal", "log": f"{type(exc).__name__}: {exc}"}
    Path(job["result_path"]).write_text(json.dumps(outcome))


if __name__ == "__main__":
    main()
