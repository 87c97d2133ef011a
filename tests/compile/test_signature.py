"""Reading kernel parameters from source and packing Python values by the declared C types."""

from __future__ import annotations

import struct

import pytest

from kernelpro.harness.compile.signature import (
    Param,
    SignatureError,
    pack_args,
    pack_value,
    parse_param_list,
    parse_signature,
)
from tests.compile import kernels


def test_plain_extern_c_kernel():
    sig = parse_signature(kernels.ADD, "add_kernel")
    assert [(p.ctype, p.pointer, p.name) for p in sig.params] == [
        ("float", True, "x"), ("float", True, "y"), ("float", True, "out"), ("int", False, "n")]
    assert str(sig) == ("add_kernel(const float* __restrict__ x, const float* __restrict__ y, float* out, int n)")


def test_attributes_comments_arrays_and_unnamed_parameters():
    source = """
    // __global__ void decoy(int a)
    /* extern "C" __global__ void k(double d) */
    extern "C" __global__ void __launch_bounds__(256, 2)
    k(const __half* __restrict__ a, __nv_bfloat16 b, unsigned long long, std::int64_t n, float v[], bool flag,
      const int64_t* idx) { }
    """
    sig = parse_signature(source, "k")
    assert [(p.ctype, p.pointer) for p in sig.params] == [
        ("__half", True), ("__nv_bfloat16", False), ("unsigned long long", False), ("int64_t", False),
        ("float", True), ("bool", False), ("int64_t", True)]
    assert [p.element_size for p in sig.params if p.pointer] == [2, 4, 8]


def test_template_parameters_are_substituted_from_the_name_expression():
    sig = parse_signature(kernels.TEMPLATED, "fill<double, 128>")
    assert [(p.ctype, p.pointer) for p in sig.params] == [("double", True), ("double", False)]
    assert sig.name == "fill<double, 128>"


def test_missing_kernel_and_empty_parameter_list():
    with pytest.raises(SignatureError, match='no __global__ function named "nope"'):
        parse_signature(kernels.ADD, "nope")
    with pytest.raises(SignatureError):
        parse_signature("__device__ void helper(int x) {}", "helper")
    assert parse_signature('extern "C" __global__ void k(void) {}', "k").params == ()
    assert parse_param_list("k", "const float* x, int n").params[1] == Param("int", False, "n", "int n")


def test_float_parameter_gets_a_c_float_never_a_double():
    sig = parse_signature(kernels.SCALE, "scale_kernel")
    packed = pack_args(sig, (0x1000, 0x2000, 0.1, 7))
    assert packed[2] == struct.pack("<f", 0.1) and len(packed[2]) == 4
    assert packed[3] == struct.pack("<q", 7)
    assert pack_args(sig, (None, 0, 3, 1))[2] == struct.pack("<f", 3.0)  # an int for a float is converted
    assert packed[0] == struct.pack("<Q", 0x1000) and pack_args(sig, (None, 0, 1.0, 1))[0] == bytes(8)


@pytest.mark.parametrize(("ctype", "value", "expected"), [
    ("double", 0.1, struct.pack("<d", 0.1)),
    ("int", -3, struct.pack("<i", -3)),
    ("unsigned", 2**32 - 1, struct.pack("<I", 2**32 - 1)),
    ("size_t", 2**40, struct.pack("<Q", 2**40)),
    ("bool", True, b"\x01"),
    ("__half", 1.5, struct.pack("<e", 1.5)),
    ("__nv_bfloat16", 1.0, b"\x80\x3f"),
    ("__nv_bfloat16", -2.5, b"\x20\xc0"),
    ("float4", b"\x00" * 16, b"\x00" * 16),
])
def test_scalar_packing(ctype, value, expected):
    assert pack_value(Param(ctype, False, "v", f"{ctype} v"), value) == expected


def test_wrong_values_are_clear_errors():
    sig = parse_signature(kernels.ADD, "add_kernel")
    with pytest.raises(TypeError, match=r"add_kernel takes 4 argument\(s\), got 3: add_kernel\(const float\*"):
        pack_args(sig, (0, 0, 0))
    with pytest.raises(TypeError, match="takes an integer, got float 2.5"):
        pack_args(sig, (0, 0, 0, 2.5))
    with pytest.raises(TypeError, match="takes a device pointer"):
        pack_args(sig, ("x", 0, 0, 1))
    with pytest.raises(OverflowError, match="does not fit"):
        pack_value(Param("int", False, "n", "int n"), 2**31)
    with pytest.raises(TypeError, match="give its raw bytes"):
        pack_value(Param("float4", False, "v", "float4 v"), 1.0)


def test_tensors_go_through_the_pointer_callback():
    import torch

    sig = parse_signature(kernels.ADD, "add_kernel")
    seen = []
    packed = pack_args(sig, (torch.ones(2), 0, None, 5), lambda p, v: seen.append(p.name) or 0xABC)
    assert seen == ["x"] and packed[0] == struct.pack("<Q", 0xABC)
    with pytest.raises(TypeError, match=r"not a tensor"):
        pack_args(sig, (0, 0, 0, torch.tensor(3)))
