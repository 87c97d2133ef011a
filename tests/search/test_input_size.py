"""One call's input bytes, read from a problem's source the way KernelBench writes it, or None when unclear."""

import pytest

from kernelpro.search.input_size import input_bytes

HEADER = "import torch\n\n"


@pytest.mark.parametrize(("body", "expected"), [
    ("M = 16384 * 4\nN = 4096 * 4\n\ndef get_inputs():\n    A = torch.rand(M, N)\n    s = 3.14\n    return [A, s]",
     16384 * 4 * 4096 * 4 * 4),
    ("batch_size = 128\ndepth, height, width = 16, 32, 32\n\ndef get_inputs():\n"
     "    return [torch.rand(batch_size, 3, depth, height, width)]", 128 * 3 * 16 * 32 * 32 * 4),
    ("height = width = 128\n\ndef get_inputs():\n    return [torch.randn(2, 64, height, width).half()]",
     2 * 64 * 128 * 128 * 4),  # the factory's dtype: the cast after it is not followed
    ("batch_size = 32768\ninput_shape = (32768,)\n\ndef get_inputs():\n    scale = torch.rand(())\n"
     "    return [torch.rand(batch_size, *input_shape) * scale]", 32768 * 32768 * 4 + 4),
    ("def get_inputs():\n    return [torch.randn(8, 8, dtype=torch.float16), torch.randint(0, 10, (8,))]",
     8 * 8 * 2 + 8 * 8),
    ("shape = (4, 5)\n\ndef get_inputs():\n    return [torch.zeros(shape), torch.full((3,), 1.0)]", 20 * 4 + 12),
])
def test_sizes_of_kernelbench_style_inputs(body, expected):
    assert input_bytes(HEADER + body) == expected


@pytest.mark.parametrize("body", [
    "def get_inputs():\n    return [torch.randn(n) for n in range(3)]",  # a loop
    "import numpy as np\n\ndef get_inputs():\n    return [torch.from_numpy(np.ones(4))]",  # no torch factory
    "def get_inputs():\n    return [torch.randn(size_from_elsewhere)]",  # a name never bound to an integer
    "n = compute()\n\ndef get_inputs():\n    return [torch.randn(n)]",
    "def get_inputs():\n    return [torch.randn(4, dtype=some_dtype)]",
    "x = torch.randn(4)",  # no get_inputs at all
    "def get_inputs(:\n",  # not Python
])
def test_unclear_sources_give_no_size(body):
    assert input_bytes(HEADER + body) is None
