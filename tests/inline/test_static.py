"""Reading load_inline/load calls from a candidate's source, and what the cache key depends on."""

from __future__ import annotations

import pytest

from kernelpro.harness.inline_build.spec import bind_arguments, spec_from_arguments, spec_key
from kernelpro.harness.inline_build.static import find_calls

HEAD = "import torch\nfrom torch.utils.cpp_extension import load_inline\n"


def test_literals_and_module_constants_resolve():
    source = HEAD + '''
cuda_src = """
__global__ void k() {}
"""
cpp_src = "torch::Tensor f(torch::Tensor x);"
ext = load_inline(name="ext", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["f"],
                  extra_cuda_cflags=["-O3"], verbose=True)
'''
    found = find_calls(source)
    assert not found.unresolved
    [spec] = found.specs
    assert (spec.name, spec.cpp_sources, spec.functions) == ("ext", ["torch::Tensor f(torch::Tensor x);"], {"f": "f"})
    assert spec.cuda_sources == ["\n__global__ void k() {}\n"] and spec.extra_cuda_cflags == ["-O3"]
    assert spec.line == 8 and spec.source_lines == {"cuda_sources": 4, "cpp_sources": 7}


def test_concatenations_f_strings_joins_and_function_locals_resolve():
    source = HEAD + '''
import torch.utils.cpp_extension as cpp_ext
BLOCK = 256
KERNEL = f"#define BLOCK {BLOCK}\\n" + "__global__ void k() {}"
DECL = "\\n".join(["int a();", "int b();"])


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        flags = ["-O3", "--use_fast_math"]
        self.ext = cpp_ext.load_inline("ext2", DECL, KERNEL, functions="a", extra_cuda_cflags=flags + ["-lineinfo"])
'''
    [spec] = find_calls(source).specs
    assert spec.cuda_sources == ["#define BLOCK 256\n__global__ void k() {}"]
    assert spec.cpp_sources == ["int a();\nint b();"]
    assert spec.extra_cuda_cflags == ["-O3", "--use_fast_math", "-lineinfo"] and spec.functions == {"a": "a"}


def test_run_time_values_are_left_to_the_worker_with_the_reason():
    source = HEAD + '''
import os
SRC = "int f();"
SRC2 = "a"
SRC2 = "b"
a = load_inline(name=os.environ["NAME"], cpp_sources=SRC)
b = load_inline(name="b", cpp_sources=SRC2)
c = load_inline(**{"name": "c", "cpp_sources": SRC})


def make(n):
    return load_inline(name=n, cpp_sources=SRC)
'''
    found = find_calls(source)
    assert found.specs == []
    reasons = {u.line: u.reason for u in found.unresolved}
    assert set(reasons) == {8, 9, 10, 14}
    assert "SRC2 is bound more than once" in reasons[9] and "**" in reasons[10] and "n is a parameter" in reasons[14]


def test_load_from_files_is_read_in_the_worker_never_by_the_judge(tmp_path):
    kernel = tmp_path / "k.cu"
    kernel.write_text("__global__ void k() {}")
    source = HEAD.replace("load_inline", "load") + f'ext = load(name="ext", sources=["{kernel}"])\n'
    found = find_calls(source)  # the judge's side: a path such as /proc/self/environ is never opened
    assert found.specs == [] and "never opens" in found.unresolved[0].reason
    spec = spec_from_arguments("load", {"name": "ext", "sources": ["k.cu"]}, base_dir=tmp_path)  # the worker's
    assert spec.kind == "load" and spec.sources == [(str(kernel), "__global__ void k() {}")]


@pytest.mark.parametrize("flag", ["-fplugin=/tmp/p.so", "-Xcompiler=-wrapper,sh", "-Wl,--plugin,/tmp/p.so",
                                  "-ccbin=/tmp/fake", "@/tmp/flags", "-B/tmp/bin"])
def test_flags_that_run_a_program_are_left_to_the_worker(flag):
    source = HEAD + f'ext = load_inline(name="ext", cpp_sources="int f();", extra_cflags=["{flag}"])\n'
    found = find_calls(source)
    assert found.specs == [] and "built inside the worker's walls" in found.unresolved[0].reason


def test_ordinary_flags_are_built_ahead():
    flags = ["-O3", "--use_fast_math", "-Wl,-Bsymbolic", "-lcublas", "-DB=1", "-std=c++17", "-Xptxas=-v"]
    source = HEAD + f'ext = load_inline(name="ext", cpp_sources="int f();", extra_cuda_cflags={flags!r})\n'
    [spec] = find_calls(source).specs
    assert spec.extra_cuda_cflags == flags


def test_unrelated_functions_named_load_are_ignored():
    source = "import json\nx = json.load(open('f'))\nfrom pickle import load\ny = load(f)\n"
    found = find_calls(source)
    assert found.specs == [] and found.unresolved == []


def _key(environment, **kwargs):
    return spec_key(spec_from_arguments("inline", bind_arguments("inline", (), kwargs)), environment)


def test_the_key_follows_what_changes_the_library_only(environment):
    base = _key(environment, name="e", cpp_sources="int f();", functions=["f"])
    assert base == _key(environment, name="e", cpp_sources=["int f();"], functions={"f": "f"}, verbose=True,
                        build_directory="/elsewhere", keep_intermediates=False)
    assert base != _key(environment, name="e", cpp_sources="int f();", functions=["f"], extra_cflags=["-O3"])
    assert base != _key(environment, name="e2", cpp_sources="int f();", functions=["f"])
    assert base != _key({**environment, "arch_list": "10.0"}, name="e", cpp_sources="int f();", functions=["f"])
    assert base != _key({**environment, "torch": "0.0"}, name="e", cpp_sources="int f();", functions=["f"])


def test_positional_arguments_bind_as_torch_binds_them(environment):
    assert _key(environment, name="e", cpp_sources="a", cuda_sources="b") == spec_key(
        spec_from_arguments("inline", bind_arguments("inline", ("e", "a", "b"), {})), environment)


def test_lean_headers_apply_only_where_the_cuda_source_needs_nothing_more():
    from kernelpro.harness.inline_build.build import lean_variant

    def spec(cuda):
        return spec_from_arguments("inline", bind_arguments("inline", (), {
            "name": "e", "cpp_sources": "#include <torch/extension.h>\nint f();", "cuda_sources": cuda}))

    plain = "#include <torch/extension.h>\n__global__ void k() {}\ntorch::Tensor f(torch::Tensor x) { return x; }"
    lean = lean_variant(spec(plain))
    assert lean.cuda_sources == [plain.replace("torch/extension.h", "torch/types.h")]
    assert lean.cpp_sources == spec(plain).cpp_sources  # main.cpp keeps torch/extension.h (the bindings need it)
    assert lean_variant(spec(plain + "\npy::object g();")) is None
    assert lean_variant(spec(plain + "\ntorch::nn::Linear l(1, 1);")) is None
    assert lean_variant(spec("#include <torch/types.h>\n__global__ void k() {}")) is None
