"""A C++ compiler failure names the user's file and line as well as the generated line.

The generated code is valid for every kernel the language accepts, so the failure is made by
the test: a macro (through $RAPTOR_CXXFLAGS) that breaks the C++ statement the kernel's
line `y = a * x + 1.0` became.
"""

from __future__ import annotations

import os
import re

import pytest

import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar
from raptor_core import _core


@hawk.kernel
def axpy_broken(x: Scalar, a: Param, y: Mutable[Scalar]):
    y = a * x + 1.0  # the line the error must name




def _user_line() -> int:
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            if "the line the error must name" in text and "y = a * x" in text:
                return number
    raise AssertionError("marker line not found")


def test_compiler_failure_names_the_users_line(tmp_path, monkeypatch):
    code = axpy_broken.cpp("float64")
    names = re.findall(r"const T (v\d+_y) = ", code)
    assert names, code
    monkeypatch.setenv("RAPTOR_CXXFLAGS", _core.default_host_flags() + f" -D{names[-1]}=)")
    with pytest.raises(RuntimeError) as err:
        eagle.plan.auto([axpy_broken], cache_dir=tmp_path)
    msg = str(err.value)
    assert "the C++ compiler rejected the code generated for kernel 'axpy_broken'" in msg
    assert f"test_compile_errors.py:{_user_line()}" in msg
    assert "y = a * x + 1.0" in msg
    assert re.search(r"generated line \d+ of .*\.cpp", msg)
    assert "error" in msg  # the compiler's own message follows
    # Nothing half-built is left to be loaded: a clean build afterwards works.
    monkeypatch.delenv("RAPTOR_CXXFLAGS")
    (plan,) = eagle.plan.auto([axpy_broken], cache_dir=tmp_path)
    assert not plan.info["cache_hit"]
    assert os.path.exists(plan.info["so_path"])


def test_big_endian_planes_are_refused_with_a_clear_message(tmp_path):
    import numpy as np

    import eagle
    from eagle.interop import import_buffer

    (plan,) = eagle.plan.auto([axpy_broken], cache_dir=tmp_path)
    x = np.arange(4.0).astype(">f8")
    y = np.zeros(4)
    with pytest.raises(eagle.ModeError, match="big-endian"):
        plan.bind(x=x, a=1.0, y=y)
    assert np.array_equal(y, np.zeros(4))
    with pytest.raises(TypeError, match="big-endian"):
        import_buffer(x)


def test_kernels_emit_cuda_cpp_for_both_dtypes():
    for dtype, t in (("float32", "float"), ("float64", "double")):
        code = axpy_broken.cuda(dtype)
        assert "__global__ void raptor_axpy_broken_" in code
        assert f"using T = {t};" in code
        assert "y = a * x + 1.0" in code  # comments map to the user's lines
        assert "raptor_cuda_args" in code
