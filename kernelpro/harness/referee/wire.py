"""The bytes between the referee and a model's process: a JSON header on a pipe, each tensor's raw bytes in
shared memory (``Arena``) or after the header.

Nothing crosses as a pickle or as code: a header is plain JSON of bounded size, a value is a nested structure of
lists, tuples, dicts, JSON scalars and tensors (dense, strided, of a plain dtype), and the reader refuses any
message that declares more bytes than it was told to expect. So the candidate's process can send the referee
numbers and tensors, and nothing that runs.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from typing import Any

import torch

HEADER_LIMIT = 1 << 20  # bytes of JSON in one header
_LENGTH = struct.Struct("<Q")
_NO_VALUE = object()


class WireError(RuntimeError):
    """A message that is not what the protocol allows (too big, malformed, cut short)."""


class CannotCarry(WireError):
    """A value of a kind that does not cross (``encode``): raised on the sending side."""


class ClosedPipe(WireError):
    """The other end closed its pipe (its process exited or was killed)."""


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise WireError(f"unknown dtype {name!r}")
    return dtype


def encode(value: Any, tensors: list[torch.Tensor]) -> Any:
    """The JSON shape of ``value``; its tensors appended to ``tensors`` (contiguous, on the host)."""
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided or value.is_meta or type(value) is not torch.Tensor and not isinstance(
                value, torch.nn.Parameter):
            raise CannotCarry(f"a {type(value).__name__} with layout {value.layout} cannot cross between processes")
        tensors.append(value.detach().contiguous())  # where it is: ``send`` copies it to the arena or the pipe
        return {"t": len(tensors) - 1}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"v": value}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [encode(v, tensors) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": [[k, encode(v, tensors)] for k, v in value.items()]}
    raise CannotCarry(f"a {type(value).__name__} cannot cross between processes")


def decode(shape: Any, tensors: list[torch.Tensor]) -> Any:
    if not isinstance(shape, dict) or len(shape) != 1:
        raise WireError("malformed value")
    (kind, body), = shape.items()
    if kind == "t":
        if not isinstance(body, int) or not 0 <= body < len(tensors):
            raise WireError("a value names a tensor that was not sent")
        return tensors[body]
    if kind == "v":
        return body
    if kind in ("list", "tuple") and isinstance(body, list):
        items = [decode(v, tensors) for v in body]
        return items if kind == "list" else tuple(items)
    if kind == "dict" and isinstance(body, list):
        return {str(k): decode(v, tensors) for k, v in body}
    raise WireError("malformed value")


class Arena:
    """Shared memory for one direction's tensor bytes: a memory file both processes map (made by the judge, which
    hands each end its descriptor), sized to the memory limit and filled only as far as a message needs. A message
    writes its tensors from the start, one after the other, and the reader copies them out before it answers, so
    each message may reuse the whole arena. Bytes too many for it go through the pipe."""

    ALIGN = 64

    def __init__(self, fd: int) -> None:
        self.size = os.fstat(fd).st_size
        self.map = mmap.mmap(fd, self.size) if self.size else None

    # Plain memory copies, not torch's: a torch copy this size runs on OpenMP's threads, and in a model's process
    # they are in whatever state its last call left them (an honest call that sets its own thread count and puts
    # it back left the next copy 0.1 ms to restart them, read as its own time from outside).
    def write(self, offset: int, tensor: torch.Tensor) -> None:
        host = tensor if tensor.device.type == "cpu" else tensor.to("cpu")
        with memoryview(self.map) as whole:
            whole[offset:offset + host.numel() * host.element_size()] = \
                memoryview(host.reshape(-1).view(torch.uint8).numpy())

    def read(self, offset: int, nbytes: int) -> bytearray:
        copy = bytearray(nbytes)
        with memoryview(self.map) as whole:
            memoryview(copy)[:] = whole[offset:offset + nbytes]
        return copy

    def view(self, offset: int, nbytes: int) -> torch.Tensor:
        """The arena's bytes there, shared (not a copy)."""
        return torch.frombuffer(self.map, dtype=torch.uint8, count=nbytes, offset=offset)


def make_arena_fd(size: int) -> int:
    """A memory file of ``size`` bytes (sparse: nothing is allocated until written), closed on exec: a child gets it
    only where it is passed on by name (``pass_fds``)."""
    fd = os.memfd_create("kernelpro-referee")
    os.ftruncate(fd, size)
    return fd


def send(fd: int, header: dict[str, Any], value: Any = _NO_VALUE, arena: Arena | None = None) -> None:
    """One message: ``header`` and, when given, ``value``: its tensors' bytes in ``arena`` where they fit, else
    after the header on the pipe."""
    tensors: list[torch.Tensor] = []
    if value is not _NO_VALUE:
        header = {**header, "value": encode(value, tensors)}
    specs, offset = [], 0
    in_arena = arena is not None and arena.map is not None and sum(
        _aligned(t.numel() * t.element_size()) for t in tensors) <= arena.size
    for tensor in tensors:
        spec: dict[str, Any] = {"dtype": str(tensor.dtype).removeprefix("torch."), "shape": list(tensor.shape)}
        nbytes = tensor.numel() * tensor.element_size()
        if in_arena and nbytes:
            arena.write(offset, tensor)
            spec["offset"] = offset
            offset += _aligned(nbytes)
        specs.append(spec)
    header["tensors"] = specs
    data = json.dumps(header).encode()
    _write_all(fd, _LENGTH.pack(len(data)) + data)
    for tensor, spec in zip(tensors, specs, strict=True):
        if tensor.numel() and "offset" not in spec:
            _write_all(fd, memoryview(tensor.to("cpu").reshape(-1).view(torch.uint8).numpy()))


def _aligned(nbytes: int) -> int:
    return -(-nbytes // Arena.ALIGN) * Arena.ALIGN


def receive(fd: int, byte_limit: int, arena: Arena | None = None) -> tuple[dict[str, Any], Any]:
    """The next message's header and value, refusing one whose tensors declare more than ``byte_limit`` bytes.
    Tensors sent through ``arena`` are copied out of it: what the sender writes there later changes nothing."""
    length, = _LENGTH.unpack(_read_exact(fd, _LENGTH.size))
    if length > HEADER_LIMIT:
        raise WireError(f"a header of {length} bytes (at most {HEADER_LIMIT})")
    try:
        header = json.loads(_read_exact(fd, length))
    except ValueError as exc:
        raise WireError(f"a header that is not JSON: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("tensors", []), list):
        raise WireError("a header that is not an object")
    specs = []
    total = 0
    for spec in header.get("tensors", []):
        try:
            dtype, shape = _dtype(str(spec["dtype"])), [int(n) for n in spec["shape"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise WireError(f"a malformed tensor description: {exc}") from None
        if any(n < 0 for n in shape):
            raise WireError("a negative dimension")
        count = 1
        for n in shape:
            count *= n
        nbytes = count * torch.empty((), dtype=dtype).element_size()
        total += nbytes
        if total > byte_limit:
            raise WireError(f"the message declares more than the {byte_limit} bytes expected")
        offset = spec.get("offset")
        if offset is not None and (arena is None or arena.map is None or not isinstance(offset, int)
                                   or offset < 0 or offset + nbytes > arena.size):
            raise WireError("a tensor outside the shared arena")
        specs.append((dtype, shape, nbytes, offset))
    tensors = []
    for dtype, shape, nbytes, offset in specs:
        if not nbytes:
            flat = torch.empty(0, dtype=torch.uint8)
        elif offset is not None:
            flat = torch.frombuffer(arena.read(offset, nbytes), dtype=torch.uint8)
        else:
            raw = bytearray(nbytes)
            _read_into(fd, memoryview(raw))
            flat = torch.frombuffer(raw, dtype=torch.uint8)
        tensors.append(flat.view(dtype).reshape(shape))
    value = decode(header["value"], tensors) if "value" in header else None
    return header, value


def tensor_bytes(value: Any) -> int:
    """The bytes ``value``'s tensors take on the wire."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    return 0


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data).cast("B")
    while view:
        try:
            written = os.write(fd, view)
        except BrokenPipeError:
            raise ClosedPipe("the other process closed its pipe") from None
        view = view[written:]


def _read_into(fd: int, view: memoryview) -> None:
    while view:
        chunk = os.readv(fd, [view])
        if chunk == 0:
            raise ClosedPipe("the other process closed its pipe")
        view = view[chunk:]


def _read_exact(fd: int, n: int) -> bytes:
    buffer = bytearray(n)
    _read_into(fd, memoryview(buffer))
    return bytes(buffer)
