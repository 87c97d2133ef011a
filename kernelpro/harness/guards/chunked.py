"""Float64 reductions over outputs a slice at a time, so checking a large output needs no float64 copy of it.

The judge compares in float64. Upcasting whole tensors made the comparison the largest user of GPU memory: a
6 GiB float32 output of KernelBench's level-1 ReLU took about ten float64 temporaries of 12 GiB each (the
tensors, their difference, magnitudes, bounds), and the H200 ran out of its 140 GiB. Taken a slice of
``CHUNK_ELEMENTS`` at a time, the temporaries stay under a gigabyte whatever the output's size. The
reductions stay on the device and come to the host once per call, so a small output costs one transfer, as
before.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

CHUNK_ELEMENTS = 1 << 24  # 16 Mi elements: 128 MiB per float64 temporary


def flat(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor as one row (a view where its layout allows, else a copy in its own dtype)."""
    return tensor.detach().reshape(-1)


def take(tensor: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The elements at flat (row-major) ``positions``, without the copy a non-contiguous tensor's flat row
    would make."""
    tensor = tensor.detach()
    if tensor.is_contiguous():
        return tensor.reshape(-1)[positions]
    return tensor[torch.unravel_index(positions, tensor.shape)]


def slices(numel: int) -> Iterator[slice]:
    chunk = CHUNK_ELEMENTS  # read at each call, so a test can make it small
    for start in range(0, numel, chunk):
        yield slice(start, min(start + chunk, numel))


def abs_max(tensor: torch.Tensor) -> float:
    """``max |x|`` in float64 (0 for an empty tensor)."""
    row = flat(tensor)
    if row.numel() == 0:
        return 0.0
    parts = [row[s].double().abs().max() for s in slices(row.numel())]
    return float(torch.stack(parts).max())


def abs_diff_max(a: torch.Tensor, b: torch.Tensor) -> float:
    """``max |a - b|`` in float64, for tensors of one shape."""
    ra, rb = flat(a), flat(b)
    if ra.numel() == 0:
        return 0.0
    parts = [(ra[s].double() - rb[s].double()).abs().max() for s in slices(ra.numel())]
    return float(torch.stack(parts).max())


def relative_norm_error(value: torch.Tensor, exact: torch.Tensor) -> float:
    """``||value - exact|| / ||exact||`` in float64 (the 2-norm over every element)."""
    rv, re = flat(value), flat(exact)
    if rv.numel() == 0:
        return 0.0
    errors, norms = [], []
    for s in slices(rv.numel()):
        e64 = re[s].double()
        errors.append((rv[s].double() - e64).square().sum())
        norms.append(e64.square().sum())
    error, norm = torch.stack(errors).sum().sqrt(), torch.stack(norms).sum().sqrt()
    return float(error / norm.clamp_min(1e-300))


def all_finite(tensor: torch.Tensor) -> bool:
    """No NaN or Inf anywhere (``torch.isfinite`` of a whole float tensor makes a full-size copy first)."""
    row = flat(tensor)
    return bool(torch.stack([torch.isfinite(row[s]).all() for s in slices(row.numel())]).all()) \
        if row.numel() else True


def finite_sum(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of every element in float64, NaN and Inf replaced as ``nan_to_num`` does, as a device scalar."""
    row = flat(tensor)
    if row.numel() == 0:
        return torch.zeros((), dtype=torch.float64, device=row.device)
    return torch.stack([row[s].to(torch.float64).nan_to_num().sum() for s in slices(row.numel())]).sum()


def unravel(index: int, shape: torch.Size) -> list[int]:
    """The multi-dimensional index of flat position ``index`` in a row-major tensor of ``shape``."""
    position = []
    for size in reversed(shape):
        index, rest = divmod(index, size)
        position.append(rest)
    return position[::-1]
