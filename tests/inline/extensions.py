"""load_inline sources that build in about a second on any machine: a CPython extension in plain C API (no
torch headers), so tests exercise real g++/ninja builds through torch's own cpp_extension."""

from __future__ import annotations

import textwrap

# A module named after TORCH_EXTENSION_NAME (torch defines it), with one function: twice(x) = x + x.
C_API_SOURCE = r'''
#include <Python.h>
static PyObject* twice(PyObject* self, PyObject* x) { return PyNumber_Add(x, x); }
static PyMethodDef methods[] = {{"twice", twice, METH_O, "x + x"}, {NULL, NULL, 0, NULL}};
#define KP_STR2(x) #x
#define KP_STR(x) KP_STR2(x)
static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, KP_STR(TORCH_EXTENSION_NAME), NULL, -1, methods};
#define KP_CAT2(a, b) a##b
#define KP_CAT(a, b) KP_CAT2(a, b)
PyMODINIT_FUNC KP_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&module_def); }
'''

BROKEN_SOURCE = C_API_SOURCE.replace("return PyNumber_Add(x, x);", "return PyNumber_Add(x, y);")

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(64, 32)]


def get_init_inputs():
    return []
'''


def candidate(source: str = C_API_SOURCE, name: str = "kp_twice", marker: str = "") -> str:
    """A ModelNew whose forward is the extension's twice(x), its load_inline call at module level."""
    return textwrap.dedent('''\
        import torch
        import torch.nn as nn
        from torch.utils.cpp_extension import load_inline

        SOURCE = r"""{source}"""
        ext = load_inline(name="{name}", cpp_sources=SOURCE, no_implicit_headers=True, verbose=True)
        MARKER = "{marker}"


        class ModelNew(nn.Module):
            def forward(self, x):
                return ext.twice(x)
        ''').format(source=source, name=name, marker=marker)


def runtime_candidate() -> str:
    """The same extension, its name only known at run time: built in the worker."""
    return candidate().replace('name="kp_twice"', 'name="kp_twice_" + str(len(torch.__version__) > 0).lower()')
