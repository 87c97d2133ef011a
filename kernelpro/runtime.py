"""Compile a CUDA kernel in a candidate's ``ModelNew`` and launch it on torch tensors, in milliseconds.

NVRTC compiles the source (through the shared compile cache, so a kernel seen before costs a file read)
and the CUDA driver API loads and launches it on PyTorch's current stream: no torch C++ headers, no
``load_inline``, no build directory::

    from kernelpro.runtime import CudaKernel

    add = CudaKernel(SRC, "add_kernel")  # compiled once, cached on disk
    add(grid=(blocks,), block=(256,), args=(x, y, out, n))

Arguments are packed from the kernel's declared parameter types (a Python float for a ``float`` parameter
is a 4-byte C float), and tensors are checked: on CUDA, on the current device, contiguous, and of the
element size the pointer type implies.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from kernelpro.config import CompileSettings, load_settings
from kernelpro.harness.compile.cache import compile_cached
from kernelpro.harness.compile.resources import KernelResources
from kernelpro.harness.compile.result import Backend, CompileRequest, CompileResult
from kernelpro.harness.compile.signature import (
    KernelSignature,
    Param,
    SignatureError,
    pack_args,
    parse_param_list,
    parse_signature,
)
from kernelpro.harness.guards.launch_ledger import LEDGER

__all__ = ["CubinKernel", "CudaKernel", "KernelCompileError", "KernelLaunchError", "SignatureError", "compile_cubin"]

DEFAULT_SHARED_LIMIT = 48 * 1024  # dynamic shared memory beyond this needs an opt-in attribute per kernel


class KernelCompileError(RuntimeError):
    """The kernel did not compile; the message is the compiler's condensed diagnostics."""

    def __init__(self, message: str, result: CompileResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class KernelLaunchError(RuntimeError):
    """The driver refused to load or launch the kernel."""


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def _check(driver: Any, result: Any, what: str) -> None:
    if result != driver.CUresult.CUDA_SUCCESS:
        err, name = driver.cuGetErrorName(result)
        raise KernelLaunchError(f"{what} failed: {name.decode() if err == driver.CUresult.CUDA_SUCCESS else result}")


def _dims(value: int | Sequence[int], what: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or d < 1 for d in dims):
        raise ValueError(f"{what} must be 1 to 3 positive ints, got {value!r}")
    x, y, z = (*dims, 1, 1)[:3]
    return x, y, z


def _tensor_pointer(label: str, device: int) -> Any:
    def pointer(param: Param, value: Any) -> int:
        where = f"{label}: parameter '{param.text}'"
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{where} takes a CUDA tensor or a device address (int), got {type(value).__name__}")
        if value.device.type != "cuda":
            raise ValueError(f"{where} got a tensor on {value.device}; it must be on CUDA")
        if value.device.index != device:
            raise ValueError(f"{where} got a tensor on {value.device}, but the current device is cuda:{device}")
        if not value.is_contiguous():
            raise ValueError(f"{where} got a non-contiguous tensor (shape {tuple(value.shape)}, stride "
                             f"{value.stride()}); the kernel takes a plain pointer: pass .contiguous()")
        expected = param.element_size
        if expected is not None and value.element_size() != expected:
            raise TypeError(f"{where} points to {param.ctype} ({expected} bytes) but got a {value.dtype} tensor "
                            f"({value.element_size()} bytes per element)")
        return value.data_ptr()

    return pointer


class _Launcher:
    """One kernel of a cubin: loaded once per device into torch's context, launched on torch's stream."""

    def __init__(self, binary: bytes, symbol: str, signature: KernelSignature, label: str) -> None:
        self.binary, self.symbol, self.signature, self.label = binary, symbol, signature, label
        LEDGER.built(label)
        self._library: Any = None
        self._functions: dict[int, Any] = {}
        self._shared_limit: dict[int, int] = {}

    def _function(self, device: int) -> Any:
        if device in self._functions:
            return self._functions[device]
        driver = _driver()
        torch.cuda.init()  # torch's CUDA state first, so the context below is the one torch uses
        _check(driver, driver.cuInit(0)[0], "cuInit")
        err, dev = driver.cuDeviceGet(device)
        _check(driver, err, "cuDeviceGet")
        err, current = driver.cuCtxGetCurrent()
        _check(driver, err, "cuCtxGetCurrent")
        if int(current) == 0 or int(driver.cuCtxGetDevice()[1]) != int(dev):
            err, context = driver.cuDevicePrimaryCtxRetain(dev)  # the primary context is the one torch uses
            _check(driver, err, "cuDevicePrimaryCtxRetain")
            _check(driver, driver.cuCtxSetCurrent(context)[0], "cuCtxSetCurrent")
        if self._library is None:
            err, self._library = driver.cuLibraryLoadData(self.binary, None, None, 0, None, None, 0)
            _check(driver, err, f"loading the cubin of {self.label}")
        err, kernel = driver.cuLibraryGetKernel(self._library, self.symbol.encode())
        _check(driver, err, f"finding {self.symbol} in the cubin")
        err, function = driver.cuKernelGetFunction(kernel)
        _check(driver, err, f"cuKernelGetFunction({self.symbol})")
        self._functions[device] = function
        self._shared_limit[device] = DEFAULT_SHARED_LIMIT
        return function

    def launch(self, grid: int | Sequence[int], block: int | Sequence[int], args: Sequence[Any],
               shared_mem: int = 0, stream: Any = None) -> None:
        if not torch.cuda.is_available():
            raise KernelLaunchError(f"{self.label}: CUDA is not available")
        grid3, block3 = _dims(grid, "grid"), _dims(block, "block")
        device = torch.cuda.current_device()
        packed = pack_args(self.signature, args, _tensor_pointer(self.label, device))
        driver = _driver()
        function = self._function(device)
        if shared_mem > self._shared_limit[device]:
            attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _check(driver, driver.cuFuncSetAttribute(function, attribute, shared_mem)[0],
                   f"allowing {shared_mem} bytes of dynamic shared memory for {self.label}")
            self._shared_limit[device] = shared_mem
        if stream is None:
            stream = torch.cuda.current_stream(device)
        handle = stream.cuda_stream if hasattr(stream, "cuda_stream") else int(stream)
        # The driver copies each argument from these buffers during the call, so they only need to outlive it.
        buffers = [ctypes.create_string_buffer(p, len(p)) for p in packed]
        pointers = (ctypes.c_void_p * max(1, len(buffers)))(*[ctypes.addressof(b) for b in buffers])
        (err,) = driver.cuLaunchKernel(function, *grid3, *block3, shared_mem, driver.CUstream(handle),
                                       ctypes.addressof(pointers) if buffers else None, 0)
        _check(driver, err, f"launching {self.label}")
        LEDGER.launched(self.label)


class CudaKernel:
    """A ``__global__`` function compiled from source (NVRTC by default, nvcc for CUTLASS/CuTe), launchable.

    ``name`` is the kernel's name, or a name expression for a template (``"scale<float>"``, NVRTC only).
    Compile errors raise ``KernelCompileError`` with condensed, line-referenced diagnostics.
    """

    def __init__(self, source: str, name: str, *, backend: Backend = "nvrtc", arch: str | None = None,
                 include_dirs: Sequence[str | Path] = (), defines: dict[str, str | None] | None = None,
                 extra_flags: Sequence[str] = (), std: str = "c++17", signature: str | None = None,
                 settings: CompileSettings | None = None) -> None:
        request = CompileRequest(source=source, backend=backend, arch=arch, std=std,
                                 include_dirs=[str(d) for d in include_dirs], defines=dict(defines or {}),
                                 extra_flags=list(extra_flags), name_expressions=[name] if backend == "nvrtc" else [])
        self.result = compile_cached(request, settings or load_settings().compile)
        if not self.result.ok:
            raise KernelCompileError(self.result.message or "compilation failed", self.result)
        self.name = name
        self.symbol = self.result.lowered_names.get(name, name)
        if self.result.resources and self.symbol not in self.result.resources:
            raise KernelCompileError(f'no kernel "{name}" in the compiled binary (it has: '
                                     f'{", ".join(self.result.resources)}); with nvcc, declare it extern "C"',
                                     self.result)
        self.signature = parse_param_list(name, signature) if signature is not None else parse_signature(source, name)
        self._launcher = _Launcher(self.result.binary, self.symbol, self.signature, name)

    @property
    def resources(self) -> KernelResources | None:
        """Registers, spills, stack and shared memory of this kernel, from the compiler's report."""
        return self.result.resources.get(self.symbol)

    def __call__(self, grid: int | Sequence[int], block: int | Sequence[int], args: Sequence[Any],
                 shared_mem: int = 0, stream: Any = None) -> None:
        """Launch on ``stream`` (default: torch's current stream) with ``shared_mem`` bytes of dynamic shared memory."""
        self._launcher.launch(grid, block, args, shared_mem, stream)

    def __repr__(self) -> str:
        return f"CudaKernel({self.signature}, {self.result.backend}, {self.result.arch})"


def compile_cubin(source: str, *, arch: str | None = None, include_dirs: Sequence[str | Path] = (),
                  defines: dict[str, str | None] | None = None, extra_flags: Sequence[str] = (), std: str = "c++17",
                  settings: CompileSettings | None = None) -> bytes:
    """Build ``source`` with nvcc into a cubin (through the shared cache) for ``CubinKernel``.

    CUTLASS's headers are on the include path. Raises ``KernelCompileError`` with condensed diagnostics.
    """
    request = CompileRequest(source=source, backend="nvcc", arch=arch, std=std,
                             include_dirs=[str(d) for d in include_dirs], defines=dict(defines or {}),
                             extra_flags=list(extra_flags))
    result = compile_cached(request, settings or load_settings().compile)
    if not result.ok:
        raise KernelCompileError(result.message or "compilation failed", result)
    return result.binary


class CubinKernel:
    """A kernel from a cubin built elsewhere (e.g. by nvcc), launched like ``CudaKernel``.

    The cubin does not record parameter types, so give them: ``signature="const float* x, float* y, int n"``,
    or the ``source`` the cubin was built from. ``name`` is the symbol (an ``extern "C"`` name).
    """

    def __init__(self, cubin: bytes | str | Path, name: str, *, signature: str | None = None,
                 source: str | None = None) -> None:
        self.binary = cubin if isinstance(cubin, bytes) else Path(cubin).read_bytes()
        if signature is not None:
            self.signature = parse_param_list(name, signature)
        elif source is not None:
            self.signature = parse_signature(source, name)
        else:
            raise TypeError(f"CubinKernel({name!r}) needs the parameter types: signature='const float* x, ...' "
                            "or source=<the CUDA source>")
        self.name = name
        self._launcher = _Launcher(self.binary, name, self.signature, name)

    def __call__(self, grid: int | Sequence[int], block: int | Sequence[int], args: Sequence[Any],
                 shared_mem: int = 0, stream: Any = None) -> None:
        """Launch on ``stream`` (default: torch's current stream) with ``shared_mem`` bytes of dynamic shared memory."""
        self._launcher.launch(grid, block, args, shared_mem, stream)
