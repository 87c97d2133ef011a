# ---- standalone CUDA kernel launcher in place of kernelpro.runtime: load_inline builds the kernels ----
import hashlib as _hashlib
import operator as _operator

import torch as _torch
from torch.utils.cpp_extension import load_inline as _load_inline

_EXPORTED: dict = {}  # @exported-kernels

_HALF_FLAGS: list[str] = []  # @half-flags
_MODULES = {}


class KernelCompileError(RuntimeError):
    """The kernel could not be built."""


class KernelLaunchError(RuntimeError):
    """The kernel could not be launched."""


class SignatureError(ValueError):
    """The kernel's parameters could not be read."""


def _dims(value, what):
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or d < 1 for d in dims):
        raise ValueError(f"{what} must be 1 to 3 positive ints, got {value!r}")
    return list((*dims, 1, 1)[:3])


class CudaKernel:
    """The call interface of kernelpro.runtime.CudaKernel, on a load_inline extension built once per process."""

    def __init__(self, source, name, *, backend="nvrtc", arch=None, include_dirs=(), defines=None, extra_flags=(),
                 std="c++17", signature=None, settings=None):
        digest = _hashlib.sha256(source.encode()).hexdigest()
        entry = _EXPORTED.get(digest)
        if entry is None or name not in entry["kernels"]:
            raise KernelCompileError(f"kernel {name!r} was not exported with this file")
        flags = ["-O3", f"-std={std}", *_HALF_FLAGS, *extra_flags]
        flags += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in (defines or {}).items()]
        if arch:
            flags.append(f"-gencode=arch=compute_{arch.removeprefix('sm_')},code={arch}")
        key = _hashlib.sha256("\n".join([digest, *flags, *map(str, include_dirs)]).encode()).hexdigest()[:16]
        if key not in _MODULES:
            _MODULES[key] = _load_inline(name=f"kp_export_{key}", cpp_sources=[entry["cpp"]],
                                         cuda_sources=[source, entry["launch_cu"]], extra_cuda_cflags=flags,
                                         extra_include_paths=[str(d) for d in include_dirs],
                                         no_implicit_headers=True)
        function, self.params = entry["kernels"][name]
        self.function = getattr(_MODULES[key], function)
        self.name = name

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        """Launch on ``stream`` (default: torch's current stream) with ``shared_mem`` bytes of dynamic shared memory."""
        if len(args) != len(self.params):
            raise TypeError(f"{self.name} takes {len(self.params)} argument(s), got {len(args)}")
        pairs = enumerate(zip(self.params, args, strict=True))
        values = [self._value(i, kind, size, value) for i, ((kind, size), value) in pairs]
        handle = None if stream is None else int(getattr(stream, "cuda_stream", stream))
        self.function(_dims(grid, "grid"), _dims(block, "block"), int(shared_mem), handle, *values)

    def _value(self, index, kind, size, value):
        where = f"{self.name}: argument {index}"
        if kind == "pointer":
            if value is None:
                return None
            if not isinstance(value, _torch.Tensor) or value.device.type != "cuda":
                raise TypeError(f"{where} takes a CUDA tensor, got {type(value).__name__}")
            if value.device.index != _torch.cuda.current_device():
                raise ValueError(f"{where} is on {value.device}, not on the current device")
            if not value.is_contiguous():
                raise ValueError(f"{where} is not contiguous; the kernel takes a plain pointer: pass .contiguous()")
            if size is not None and value.element_size() != size:
                raise TypeError(f"{where} needs {size}-byte elements, got {value.dtype}")
            return value
        if kind == "float":
            return float(value)
        if kind == "bool":
            return bool(value)
        return _operator.index(value)
