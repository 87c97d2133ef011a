"""What crosses between the referee and a model's process: plain values and tensors, within the sizes expected,
through a real pipe and real shared memory."""

from __future__ import annotations

import json
import os
import struct
import threading

import pytest
import torch

from kernelpro.harness.referee import wire


@pytest.fixture
def pipe():
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        try:
            os.close(fd)
        except OSError:
            pass


def through(pipe, value, arena_bytes: int = 0, limit: int = 1 << 26):
    """``value`` sent and received (the sender in a thread: a pipe holds only so much)."""
    read_end, write_end = pipe
    arena = wire.Arena(wire.make_arena_fd(arena_bytes)) if arena_bytes else None
    sender = threading.Thread(target=wire.send, args=(write_end, {"op": "x"}, value, arena))
    sender.start()
    header, received = wire.receive(read_end, limit, arena)
    sender.join()
    return header, received, arena


VALUE = {"a": [torch.randn(3, 4), (torch.tensor(7), 2.5, None, "text")],
         "b": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3).t(),  # not contiguous
         "c": torch.tensor([True, False]), "d": torch.empty(0, 5)}


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("arena_bytes", [0, 1 << 20, 64])  # the pipe, shared memory, too small an arena
def test_nested_values_and_every_plain_dtype_cross_unchanged(pipe, arena_bytes):
    header, received, _ = through(pipe, VALUE, arena_bytes)
    assert header["op"] == "x" and same(VALUE, received)
    in_arena = [spec for spec in header["tensors"] if "offset" in spec]
    assert bool(in_arena) == (arena_bytes == 1 << 20)


def test_what_the_sender_writes_into_the_arena_later_changes_nothing_received(pipe):
    header, received, arena = through(pipe, [torch.ones(1000)], 1 << 20)
    arena.view(0, 4000).fill_(0)
    assert torch.equal(received[0], torch.ones(1000))


def test_a_message_declaring_more_bytes_than_expected_is_refused_before_reading_them(pipe):
    with pytest.raises(wire.WireError, match="more than the 1000 bytes"):
        through(pipe, [torch.zeros(1000)], limit=1000)


def raw_header(pipe, header: dict) -> None:
    data = json.dumps(header).encode()
    os.write(pipe[1], struct.pack("<Q", len(data)) + data)


@pytest.mark.parametrize(("header", "match"), [
    ({"tensors": [{"dtype": "Tensor", "shape": [1]}]}, "unknown dtype"),
    ({"tensors": [{"dtype": "float32", "shape": [-1]}]}, "negative dimension"),
    ({"tensors": [{"dtype": "float32", "shape": [4], "offset": 0}]}, "outside the shared arena"),
    ({"tensors": [], "value": {"t": 0}}, "not sent"),
    ({"tensors": [], "value": {"pickle": "gASV"}}, "malformed value"),
])
def test_malformed_messages_are_refused(pipe, header, match):
    raw_header(pipe, header)
    with pytest.raises(wire.WireError, match=match):
        wire.receive(pipe[0], 1 << 20)


def test_a_header_too_large_is_refused_unread(pipe):
    os.write(pipe[1], struct.pack("<Q", wire.HEADER_LIMIT + 1))
    with pytest.raises(wire.WireError, match="header of"):
        wire.receive(pipe[0], 1 << 20)


def test_objects_other_than_plain_values_do_not_cross(pipe):
    with pytest.raises(wire.WireError, match="cannot cross"):
        wire.send(pipe[1], {}, [object()])


def test_a_closed_end_is_told_apart(pipe):
    os.close(pipe[1])
    with pytest.raises(wire.ClosedPipe):
        wire.receive(pipe[0], 1 << 20)
