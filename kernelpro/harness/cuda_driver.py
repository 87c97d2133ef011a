"""The few CUDA driver calls the judge makes itself, through ctypes on ``libcuda`` (always present with a driver).

Only the L2 persistence controls: PyTorch exposes neither the limit nor the reset.
"""

from __future__ import annotations

import ctypes
import functools

CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


@functools.lru_cache(maxsize=1)
def _libcuda() -> ctypes.CDLL | None:
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def persisting_l2_limit() -> int | None:
    """The current context's persisting-L2 limit in bytes (0 = no persistence), or None without a driver."""
    lib = _libcuda()
    if lib is None:
        return None
    value = ctypes.c_size_t(0)
    if lib.cuCtxGetLimit(ctypes.byref(value), CU_LIMIT_PERSISTING_L2_CACHE_SIZE) != 0:
        return None
    return value.value


def reset_persisting_l2() -> bool:
    """Drop every persisting L2 line and set the limit to zero, so no access policy can survive a flush."""
    lib = _libcuda()
    if lib is None:
        return False
    ok = lib.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0)) == 0
    return lib.cuCtxResetPersistingL2Cache() == 0 and ok
