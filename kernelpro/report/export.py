"""The best candidate as a file to take away, and, for NVRTC candidates, a version that runs without kernelpro.

A candidate that launches kernels through ``kernelpro.runtime.CudaKernel`` gets a standalone twin: its import
of kernelpro is replaced by a small ``CudaKernel`` with the same constructor and call, built on
``torch.utils.cpp_extension.load_inline``. For every kernel the export generates a launcher in two translation
units: the ``.cu`` one holds the kernel source and a torch-free launch function (nvcc only ever sees CUDA
headers there), the ``.cpp`` one binds it to Python with tensors and scalars and launches on torch's current
stream. The rest of the candidate is left as it was.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from kernelpro.atomic_write import write_atomic
from kernelpro.harness.compile.signature import SCALARS, KernelSignature, parse_param_list, parse_signature
from kernelpro.search.kinds import detect_kind

SHIMMED_NAMES = {"CudaKernel", "KernelCompileError", "KernelLaunchError", "SignatureError"}
# load_inline passes torch's -D__CUDA_NO_HALF_OPERATORS__ and friends to nvcc; NVRTC kernels may use them.
HALF_FLAGS = ["-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__",
              "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_BFLOAT16_OPERATORS__"]
FLOAT_FORMATS = {"f", "d", "e", "bf16"}


class ExportError(ValueError):
    """The candidate cannot be made standalone (the reason is the message)."""


@dataclass(frozen=True)
class ExportedExtension:
    """One load_inline extension: every exported kernel of one CUDA source."""

    source_sha256: str
    cuda_source: str
    """The ``.cu`` as load_inline compiles it: the kernel source, then the generated launchers."""
    cpp_source: str
    """The ``.cpp``: Python bindings taking tensors and scalars."""
    kernels: dict[str, str]
    """Kernel name (as given to CudaKernel) -> the Python function that launches it."""


@dataclass
class ExportedCandidate:
    source: str
    """The candidate as judged."""
    kind: str
    standalone_source: str | None
    """A version that needs only torch (the source itself when it never imported kernelpro); None if impossible."""
    extensions: list[ExportedExtension] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def write(self, out_dir: Path, stem: str = "best_candidate") -> list[Path]:
        """``<stem>.py``, and ``<stem>_standalone.py`` when that differs; returns the paths written."""
        out_dir.mkdir(parents=True, exist_ok=True)
        files = {f"{stem}.py": self.source}
        if self.standalone_source is not None and self.standalone_source != self.source:
            files[f"{stem}_standalone.py"] = self.standalone_source
        for name, text in files.items():
            write_atomic(out_dir / name, text)
        return [out_dir / name for name in files]


def export_candidate(source: str) -> ExportedCandidate:
    """Export a candidate; never raises for a candidate that cannot be made standalone (see ``notes``)."""
    kind = detect_kind(source)
    if "kernelpro" not in source:
        return ExportedCandidate(source=source, kind=kind, standalone_source=source)
    try:
        text, extensions = _standalone(source)
    except (ExportError, SyntaxError, ValueError) as exc:
        return ExportedCandidate(source=source, kind=kind, standalone_source=None,
                                 notes=[f"needs kernelpro to run: {exc}"])
    return ExportedCandidate(source=source, kind=kind, standalone_source=text, extensions=extensions)


# -- reading the candidate ---------------------------------------------------------------------------------------
def _constants(tree: ast.Module) -> dict[str, object]:
    found: dict[str, object] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            try:
                found[statement.targets[0].id] = ast.literal_eval(statement.value)
            except ValueError:
                continue
    return found


def _literal(node: ast.AST, constants: dict[str, object]) -> object:
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ExportError(f"line {node.lineno}: a CudaKernel argument is computed at run time") from None


def _kernels(tree: ast.Module, aliases: set[str]) -> list[tuple[str, KernelSignature]]:
    """(source, signature) of every ``CudaKernel(...)`` call, in order, each once."""
    constants = _constants(tree)
    found: list[tuple[str, KernelSignature]] = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in aliases):
            continue
        named = {k.arg: k.value for k in call.keywords if k.arg}
        nodes = dict(zip(("source", "name"), call.args[:2], strict=False)) | named
        if "source" not in nodes or "name" not in nodes:
            raise ExportError(f"line {call.lineno}: CudaKernel without a source and a name")
        source, name = _literal(nodes["source"], constants), _literal(nodes["name"], constants)
        if not isinstance(source, str) or not isinstance(name, str):
            raise ExportError(f"line {call.lineno}: CudaKernel's source and name must be strings")
        signature = (parse_param_list(name, str(_literal(nodes["signature"], constants))) if "signature" in nodes
                     else parse_signature(source, name))
        if (source, signature) not in found:
            found.append((source, signature))
    return found


# -- generating the launchers ------------------------------------------------------------------------------------
def _scalar_format(ctype: str, text: str) -> str:
    fmt = SCALARS.get(ctype)
    if fmt is None:
        raise ExportError(f"parameter '{text}' has type {ctype!r}: only pointers and C scalars can be exported")
    return fmt


def _launcher(index: int, signature: KernelSignature) -> tuple[str, str, str, list[tuple[str, int | None]]]:
    """(.cu launch function, .cpp declaration, .cpp binding, parameter kinds for the Python shim)."""
    cu_params, cu_args, binding_params, call_args, kinds = [], [], [], [], []
    for j, param in enumerate(signature.params):
        if param.pointer:
            cu_params.append(f"void* a{j}")
            cu_args.append(f"kp_export::DevicePointer{{a{j}}}")
            binding_params.append(f"std::optional<torch::Tensor> a{j}")
            call_args.append(f"kp_address(a{j})")
            kinds.append(("pointer", param.element_size))
            continue
        fmt = _scalar_format(param.ctype, param.text)
        converted = {"e": f"__float2half(a{j})", "bf16": f"__float2bfloat16(a{j})"}.get(fmt, f"a{j}")
        cu_type = "float" if fmt in ("e", "bf16") else param.ctype
        cu_params.append(f"{cu_type} a{j}")
        cu_args.append(converted)
        kind = "float" if fmt in FLOAT_FORMATS else "bool" if fmt == "?" else "int"
        binding_params.append(f"{ {'float': 'double', 'bool': 'bool', 'int': 'int64_t'}[kind]} a{j}")
        call_args.append(f"static_cast<{cu_type}>(a{j})")
        kinds.append((kind, None))
    head = (f"const char* kp_launch_{index}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, "
            f"unsigned bz, unsigned smem, void* stream{''.join(', ' + p for p in cu_params)})")
    name = signature.name
    cu = f"""{head} {{
    if (smem > 48 * 1024) {{
        cudaError_t status = cudaFuncSetAttribute({name}, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (status != cudaSuccess) return cudaGetErrorString(status);
    }}
    {name}<<<dim3(gx, gy, gz), dim3(bx, by, bz), smem, static_cast<cudaStream_t>(stream)>>>({', '.join(cu_args)});
    cudaError_t status = cudaGetLastError();
    return status == cudaSuccess ? nullptr : cudaGetErrorString(status);
}}
"""
    binding = f"""void launch_{index}(std::vector<int64_t> grid, std::vector<int64_t> block, int64_t shared_mem,
        std::optional<int64_t> stream{''.join(', ' + p for p in binding_params)}) {{
    TORCH_CHECK(grid.size() == 3 && block.size() == 3, "grid and block take three dimensions");
    void* handle = stream ? reinterpret_cast<void*>(static_cast<intptr_t>(*stream)) : kp_current_stream();
    const char* error = kp_launch_{index}(grid[0], grid[1], grid[2], block[0], block[1], block[2],
        static_cast<unsigned>(shared_mem), handle{''.join(', ' + a for a in call_args)});
    TORCH_CHECK(error == nullptr, "launching {name} failed: ", error);
}}
"""
    return cu, head + ";", binding, kinds


CU_PRELUDE = """
// ---- launchers generated by the export: no torch headers in this translation unit ----
#include <cuda_runtime.h>
namespace kp_export {
// Converts to whatever pointer type the kernel's parameter has.
struct DevicePointer {
    void* address;
    template <typename T> operator T*() const { return static_cast<T*>(address); }
};
}  // namespace kp_export
"""
CPP_PRELUDE = """#include <torch/extension.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

static void* kp_current_stream() {
    const auto* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
    return cuda->getStream(cuda->getDevice()).native_handle();
}

static void* kp_address(const std::optional<torch::Tensor>& tensor) {
    return tensor ? tensor->data_ptr() : nullptr;
}
"""


def _extension(source: str, signatures: list[KernelSignature], first_index: int
               ) -> tuple[ExportedExtension, dict[str, object]]:
    """The extension of one kernel source, and its entry in the standalone file's registry."""
    launchers = [_launcher(first_index + i, s) for i, s in enumerate(signatures)]
    launch_cu = CU_PRELUDE + "\n".join(cu for cu, _, _, _ in launchers)
    functions = [f"launch_{first_index + i}" for i in range(len(signatures))]
    module = "\n".join(f'    m.def("{f}", &{f});' for f in functions)
    cpp = (CPP_PRELUDE + "\n" + "\n".join(decl for _, decl, _, _ in launchers) + "\n\n"
           + "\n".join(binding for _, _, binding, _ in launchers)
           + f"\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n{module}\n}}\n")
    digest = hashlib.sha256(source.encode()).hexdigest()
    kernels = {s.name: functions[i] for i, s in enumerate(signatures)}
    extension = ExportedExtension(source_sha256=digest, cuda_source=source + "\n" + launch_cu, cpp_source=cpp,
                                  kernels=kernels)
    entries = {s.name: (kernels[s.name], launchers[i][3]) for i, s in enumerate(signatures)}
    return extension, {"launch_cu": launch_cu, "cpp": cpp, "kernels": entries}


# -- writing the standalone file ---------------------------------------------------------------------------------
def _py_string(text: str) -> str:
    return f"r'''{text}'''" if "'''" not in text and not text.endswith("\\") else repr(text)


def _registry(entries: dict[str, dict[str, object]]) -> str:
    lines = ["_EXPORTED = {  # sha256 of a kernel source -> its generated launchers"]
    for digest, entry in entries.items():
        lines += [f'    "{digest}": {{', f'        "launch_cu": {_py_string(entry["launch_cu"])},',
                  f'        "cpp": {_py_string(entry["cpp"])},', f'        "kernels": {entry["kernels"]!r},', "    },"]
    return "\n".join([*lines, "}"])


def _shim(entries: dict[str, dict[str, object]]) -> str:
    """``export_shim.py`` (the launcher that stands in for kernelpro.runtime), with this file's kernels and the
    half-precision flags filled in."""
    text = (Path(__file__).with_name("export_shim.py")).read_text()
    text = text.replace("_EXPORTED: dict = {}  # @exported-kernels", _registry(entries))
    return text.replace("_HALF_FLAGS: list[str] = []  # @half-flags", f"_HALF_FLAGS = {HALF_FLAGS!r}").rstrip()


def _standalone(source: str) -> tuple[str, list[ExportedExtension]]:
    tree = ast.parse(source)
    imports = [s for s in ast.walk(tree) if isinstance(s, (ast.Import, ast.ImportFrom))
               and any("kernelpro" in (getattr(s, "module", None) or a.name) for a in s.names)]
    aliases: set[str] = set()
    extra: list[str] = []
    for statement in imports:
        if not (isinstance(statement, ast.ImportFrom) and statement.module == "kernelpro.runtime"
                and statement in tree.body):
            raise ExportError(f"line {statement.lineno}: only top-level 'from kernelpro.runtime import ...' "
                              "can be replaced")
        for alias in statement.names:
            if alias.name not in SHIMMED_NAMES:
                raise ExportError(f"{alias.name} has no standalone equivalent (a cubin built elsewhere)")
            if alias.asname and alias.asname != alias.name:
                extra.append(f"{alias.asname} = {alias.name}")
            if alias.name == "CudaKernel":
                aliases.add(alias.asname or alias.name)
    kernels = _kernels(tree, aliases)
    by_source: dict[str, list[KernelSignature]] = {}
    for kernel_source, signature in kernels:
        by_source.setdefault(kernel_source, []).append(signature)
    extensions, entries, index = [], {}, 0
    for kernel_source, signatures in by_source.items():
        extension, entry = _extension(kernel_source, signatures, index)
        extensions.append(extension)
        entries[extension.source_sha256] = entry
        index += len(signatures)
    shim = "\n".join([_shim(entries), *extra])
    lines = source.splitlines(keepends=True)
    spans = sorted(((s.lineno - 1, s.end_lineno or s.lineno) for s in imports), reverse=True)
    for position, (start, end) in enumerate(spans):
        lines[start:end] = [shim + "\n"] if position == len(spans) - 1 else []
    return "".join(lines), extensions
