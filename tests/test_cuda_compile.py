"""CUDA code for derived kernels compiles with NVRTC to cubins (issue 9, no GPU needed).

A Param cotangent (ParamSum), a Table cotangent (TableSum) and a stepped kernel with a mask,
each in float32 and float64, compile to cubins for sm_80 and sm_90; the emitted CUDA sums over
samples through block partials and a ``_finish`` kernel, never with float atomics. The kernels
are compiled, not run (running them needs a GPU). Skipped only when NVRTC is missing.
"""

from __future__ import annotations

import pytest

import hawk
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import norm, sin
from raptor_core import _core
from conftest import nvrtc_missing  # noqa: E402




pytestmark = pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")

ARCHS = ("sm_80", "sm_90")


@hawk.kernel
def drag(v: Vector[3], cd: Param, dt: Param, v_next: Mutable[Vector[3]]):
    v_next = v - dt * cd * norm(v) * v


@hawk.kernel
def lookup(w: Table[Vector[2]], idx: Scalar, x: Scalar, y: Mutable[Scalar]):
    f = w.at(idx)
    y = f[0] * x + f[1] * w.at(idx + 1.0)[0]


@hawk.kernel(steps=6)
def osc(dt: Param, c: Param, t_final: Scalar, terminated: Terminated,
        x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-sin(x) - c * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final


CASES = {
    "param_sum_adjoint": lambda: drag.adjoint(["v", "cd"]),
    "table_sum_adjoint": lambda: lookup.adjoint(["w", "x"]),
    "stepped_masked": lambda: osc,
    "stepped_masked_tangent": lambda: osc.tangent(["x", "c"]),
}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_compiles_to_cubin(case: str, arch: str) -> None:
    kernel = CASES[case]()
    assert _core.nvrtc_check([kernel._core], arch) == 2  # float32 and float64


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sums_use_block_partials_not_float_atomics(dtype: str) -> None:
    for kernel, slot in ((drag.adjoint(["cd"]), "cd_bar"), (lookup.adjoint(["w"]), "w_bar")):
        code = kernel.cuda(dtype)
        body = code[code.index("// ---- kernel"):]
        assert "atomic" not in body, "a kernel body merges through atomics"
        assert "_finish(const raptor_cuda_args args)" in body
        assert f"part_{slot}" in body
        t = "float" if dtype == "float32" else "double"
        assert f"using T = {t};" in body and "rp_finish<T>(a, " in body  # written in the dtype


def test_a_batch_of_kernels_compiles_once_each() -> None:
    ks = [drag._core, drag._core, lookup._core, osc._core]
    assert _core.nvrtc_check(ks, "sm_90") == 6  # three distinct kernels, two dtypes


def test_a_bad_arch_fails_with_nvrtcs_log_and_the_kernel_names() -> None:
    with pytest.raises(RuntimeError, match=r"(?s)drag.*sm_1"):
        _core.nvrtc_check([drag._core], "sm_1")


def test_the_session_check_names_each_kernel_that_fails() -> None:
    from conftest import _nvrtc_failures

    assert _nvrtc_failures([drag._core, lookup._core], "sm_90") == []
    failures = _nvrtc_failures([drag._core, lookup._core], "sm_1")  # no such architecture
    assert len(failures) == 2
    assert "drag" in failures[0] and "lookup" not in failures[0]
    assert "lookup" in failures[1]


def drag_again(v: Vector[3], cd: Param, dt: Param, v_next: Mutable[Vector[3]]):
    v_next = v - dt * cd * norm(v) * v  # drag's body under another name, file line and comment


def drag_other(v: Vector[3], cd: Param, dt: Param, v_next: Mutable[Vector[3]]):
    v_next = v + dt * cd * norm(v) * v  # one operator differs


def drag_continued(v: Vector[3], cd: Param, dt: Param, v_next: Mutable[Vector[3]]):
    v_next = v - dt * cd * \
        norm(v) * v  # a line continuation: the line's comment must not end in a backslash


def test_a_source_line_ending_in_a_backslash_compiles(cache_dir) -> None:
    """The generated code's comment quoting a source line that ends in a backslash drops it:
    otherwise the comment swallows the next line of code (host and CUDA both failed)."""
    import numpy as np

    import eagle.plan

    cont = hawk.kernel(drag_continued)
    for code in (cont._core.cuda("float64"), cont._core.cpp("float64")):
        assert "test_cuda_compile.py:" in code
        comments = [ln for ln in code.splitlines() if ln.lstrip().startswith("//")]
        assert not any(ln.endswith("\\") for ln in comments)
    for arch in ARCHS:
        assert _core.nvrtc_check([cont._core], arch, True) == 2
    plans = eagle.plan.auto([cont, drag], cache_dir=cache_dir)
    v = np.random.default_rng(0).uniform(-2.0, 2.0, (3, 33))
    outs = []
    for p in plans:
        vals = dict(v=v, cd=0.3, dt=0.1, v_next=np.zeros((3, 33)))
        p.bind(**vals).launch()
        outs.append(vals["v_next"])
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], v - 0.1 * 0.3 * np.linalg.norm(v, axis=0) * v, rtol=1e-14)


def test_the_session_check_compiles_each_structure_once() -> None:
    """Kernels whose CUDA differs only in names, comments and symbols are compiled once; a
    different body is not."""
    from conftest import _cuda_structure, _nvrtc_kernels

    again, other = (hawk.kernel(f) for f in (drag_again, drag_other))
    assert again._core.digest("float64") != drag._core.digest("float64")
    assert _cuda_structure(again._core) == _cuda_structure(drag._core)
    assert _cuda_structure(other._core) != _cuda_structure(drag._core)
    # drag_again folds into drag before deriving: drag and drag_other, with a tangent and an
    # adjoint each, out of 3 + 4 digests
    kernels, digests = _nvrtc_kernels([drag._core, again._core, other._core])
    assert (len(kernels), digests) == (6, 7)
    assert {k.name for k in kernels} >= {"drag", "drag_other"}
    assert "drag_again" not in {k.name for k in kernels}
