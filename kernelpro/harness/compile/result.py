"""What a compile is asked to do (``CompileRequest``) and what came of it (``CompileResult``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kernelpro.harness.compile.diagnostics import Diagnostic
from kernelpro.harness.compile.resources import KernelResources

Backend = Literal["nvrtc", "nvcc"]
OutputKind = Literal["cubin", "ptx"]
# compile: the source is wrong; timeout/crash: the compiler did not finish; missing_toolchain: nothing to
# compile with; internal: anything else (a binding error, a full disk).
FailureKind = Literal["compile", "timeout", "crash", "missing_toolchain", "internal"]


class CompileRequest(BaseModel):
    """One translation unit to compile, with every option that changes the binary."""

    source: str
    backend: Backend = "nvrtc"
    filename: str = "kernel.cu"
    """The name the compiler reports positions in."""
    arch: str | None = None
    """``sm_90a`` and the like; unset means ``CompileSettings.arch`` or the visible GPU's."""
    output: OutputKind = "cubin"
    std: str = "c++17"
    lineinfo: bool = True
    """Line tables for profilers (no effect on the code generated)."""
    include_dirs: list[str] = Field(default_factory=list)
    defines: dict[str, str | None] = Field(default_factory=dict)
    extra_flags: list[str] = Field(default_factory=list)
    name_expressions: list[str] = Field(default_factory=list)
    """NVRTC only: kernel names to lower, e.g. ``scale<float>`` (their mangled names come back)."""
    warnings: bool = False
    """Keep warnings in the condensed diagnostics (errors are always kept)."""


class CompileResult(BaseModel):
    """A binary and its resource report, or the reason there is none."""

    ok: bool
    backend: Backend
    kind: OutputKind = "cubin"
    arch: str = ""
    binary: bytes = Field(default=b"", exclude=True)
    """The cubin or NUL-terminated PTX. Left out of ``model_dump`` and JSON: reports carry no binaries."""
    lowered_names: dict[str, str] = Field(default_factory=dict)
    """Name expression -> symbol in the binary (NVRTC)."""
    log: str = ""
    """The compiler's full output."""
    elapsed_s: float = 0.0
    resources: dict[str, KernelResources] = Field(default_factory=dict)
    """Per entry function, by its symbol name."""
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    message: str = ""
    """Condensed diagnostics (or the failure's cause) for a person or an LLM; empty when ok."""
    failure: FailureKind | None = None
    toolchain: str = ""
    """The compiler's version, e.g. ``nvrtc 13.0`` or ``nvcc 13.0.88``."""
    cached: bool = False
    key: str | None = None

    @property
    def kernels(self) -> list[str]:
        """The entry functions in the binary."""
        return list(self.resources)


def failed(request: CompileRequest, failure: FailureKind, message: str, *, arch: str = "", log: str = "",
           elapsed_s: float = 0.0, toolchain: str = "") -> CompileResult:
    """A result for a compile that produced no binary."""
    return CompileResult(ok=False, backend=request.backend, kind=request.output, arch=arch, log=log,
                         elapsed_s=elapsed_s, message=message, failure=failure, toolchain=toolchain)
