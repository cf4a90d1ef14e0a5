"""Per-sample linear algebra (docs/language.md "Linear algebra"): ``eye``, ``diag``, ``diagonal``,
``tril``, ``triu``, ``inv``, ``solve``, ``lu``/``lu_solve``, ``cholesky``/``cho_solve``, ``lstsq``
and ``eigh`` on ``Matrix[n, n]`` values, n = 1..6, sample by sample against NumPy and SciPy
(LAPACK's getrf/potrf for ``info`` on singular and indefinite matrices) in float32 and float64;
refusals with their texts and lines; the size of the largest (6x6 eigh). Derivatives:
test_linalg_jax.py, test_linalg_grads.py, test_linalg_eigh.py; the CUDA emission:
test_linalg_nvrtc.py; the shared kernels and inputs: linalg_cases.py.
"""

import numpy as np
import pytest
import scipy.linalg as sla
from scipy.linalg import lapack

import hawk
from hawk import Matrix, Mutable, Vector
from hawk.math import cholesky, eigh, lstsq, lu_solve, solve

from conftest import plan_kernels
from linalg_cases import KERNELS, N, SEED, SIZES, TOL, eigh6, inputs, per_sample, planes, run, signed, spd


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels(list(KERNELS.values()), module_cache_dir)


# ---------------------------------------------------------------- values against NumPy / SciPy


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", SIZES)
def test_values_against_numpy_and_scipy(plans, n, dtype):
    rng = np.random.default_rng(SEED + n)
    inp = inputs(rng, n, dtype)
    out = run(plans[f"linalg_{n}"], dtype, **inp)
    tol = TOL[dtype]
    A, S, H, J = (per_sample(inp[k]) for k in ("A", "S", "H", "J"))
    b, B, r = per_sample(inp["b"]), per_sample(inp["B"]), per_sample(inp["r"])
    x = np.linalg.solve(A, b[..., None])[..., 0]
    np.testing.assert_allclose(per_sample(out["x"]), x, **tol)
    np.testing.assert_allclose(per_sample(out["X"]), np.linalg.solve(A, B), **tol)
    np.testing.assert_allclose(per_sample(out["Ai"]), np.linalg.inv(A), **tol)
    for name in ("info", "iinfo", "luinfo", "cinfo", "sinfo", "einfo"):
        assert not out[name].any(), name
    for s in range(N):  # scipy.linalg.lu_factor: the same pivots, the same packed factor
        lu_ref, piv_ref = sla.lu_factor(A[s])
        np.testing.assert_array_equal(out["piv"][:, s], piv_ref)
        np.testing.assert_allclose(out["LU"][:, :, s], lu_ref, **tol)
        np.testing.assert_allclose(out["xl"][:, s], sla.lu_solve((lu_ref, piv_ref), b[s]), **tol)
    L = np.linalg.cholesky(S)
    np.testing.assert_allclose(per_sample(out["L"]), L, **tol)
    np.testing.assert_allclose(per_sample(out["xc"]), np.stack([sla.cho_solve((L[s], True), b[s]) for s in range(N)]), **tol)
    xs = np.stack([np.linalg.lstsq(J[s], r[s], rcond=None)[0] for s in range(N)])
    np.testing.assert_allclose(per_sample(out["xs"]), xs, **{**tol, "atol": 10 * tol["atol"]})
    w, V = np.linalg.eigh(H)
    np.testing.assert_allclose(per_sample(out["w"]), w, **tol)
    np.testing.assert_allclose(per_sample(out["V"]), signed(V), **tol)
    np.testing.assert_allclose(per_sample(out["shapes"]), np.tril(A) + 2.0 * np.triu(A, 1) + A * np.eye(n) + np.eye(n), **tol)
    np.testing.assert_allclose(per_sample(out["d"]), np.diagonal(A, axis1=1, axis2=2), **tol)


def _singular(rng, n, size):
    """Matrices that getrf finds exactly singular whatever its order of operations: a zero
    column (it stays zero through every update) or a zero row (never a nonzero pivot). The
    other entries are Gaussian, so no two pivot candidates tie (integers would, and rounding
    breaks a tie differently in LAPACK's blocked updates and in ours)."""
    a = rng.normal(size=(size, n, n))
    for s in range(size):
        if s % 2 == 0:
            a[s, :, rng.integers(n)] = 0.0
        else:
            a[s, rng.integers(n), :] = 0.0
    return a


def _indefinite(rng, n, size):
    """SPD matrices with one diagonal component made negative: potrf fails at that minor or
    before it."""
    a = per_sample(spd(rng, n, size))
    for s in range(size):
        j = rng.integers(n)
        a[s, j, j] = -1.0
    return a


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", SIZES)
def test_info_on_singular_and_indefinite_matrices_is_lapacks(plans, n, dtype):
    rng = np.random.default_rng(SEED + 10 + n)
    inp = inputs(rng, n, dtype)
    A = _singular(rng, n, N)
    S = _indefinite(rng, n, N)
    H = per_sample(inp["H"]).copy()
    H[::3, 0, 0] = np.nan  # eigh does not converge on a NaN
    J = per_sample(inp["J"]).copy()
    J[::2, :, 0] = 0.0  # a zero column: J^T J is singular
    inp.update(A=planes(A), S=planes(S), H=planes(H), J=planes(J))
    out = run(plans[f"linalg_{n}"], dtype, **inp)
    getrf = np.array([lapack.dgetrf(A[s])[2] for s in range(N)])
    potrf = np.array([lapack.dpotrf(S[s], lower=1)[1] for s in range(N)])
    assert (getrf > 0).all() and (potrf > 0).all()
    np.testing.assert_array_equal(out["info"], getrf)
    np.testing.assert_array_equal(out["iinfo"], getrf)
    np.testing.assert_array_equal(out["luinfo"], getrf)
    np.testing.assert_array_equal(out["cinfo"], potrf)
    for name in ("x", "X", "Ai", "xl", "L", "xc"):  # a failed sample's results are zeros
        assert not out[name].any(), name
    for s in range(N):
        # The factor is getrf's up to the zero pivot, which it keeps: past it the candidates
        # are rounding noise (or exact zeros), whose order LAPACK's blocked updates and ours
        # need not share.
        lu_ref, piv_ref, info_ref = lapack.dgetrf(A[s])
        k = info_ref - 1
        np.testing.assert_array_equal(out["piv"][:k, s], piv_ref[:k])
        for row in range(k):  # U's rows above it never move again
            np.testing.assert_allclose(out["LU"][row, row:, s], lu_ref[row, row:], **TOL[dtype])
        assert out["LU"][k, k, s] == 0.0
    np.testing.assert_array_equal(out["einfo"], np.where(np.arange(N) % 3 == 0, 1, 0))
    assert not out["w"][:, ::3].any() and not out["V"][:, :, ::3].any()
    np.testing.assert_array_equal(out["sinfo"][::2] > 0, True)
    assert not out["xs"][:, ::2].any()
    if n > 1:  # the other samples solve
        np.testing.assert_array_equal(out["sinfo"][1::2], 0)


# ---------------------------------------------------------------- refusals


def _refused(src_fn):
    with pytest.raises(hawk.KernelError) as e:
        src_fn()
    return str(e.value)


def test_refusals_name_the_kernel_the_line_and_the_fix():
    def nonsquare():
        @hawk.kernel
        def solve_rect(A: Matrix[2, 3], b: Vector[2], x: Mutable[Vector[2]]):
            x, info = solve(A, b)
    msg = _refused(nonsquare)
    assert "solve_rect" in msg and "test_linalg.py" in msg
    assert "solve() takes a square Matrix, got a Matrix[2, 3]; for a least-squares solution use lstsq(A, b)" in msg

    def too_big():
        @hawk.kernel
        def eigh7(A: Matrix[7, 7], w: Mutable[Vector[7]]):
            w, V, info = eigh(A)
    msg = _refused(too_big)
    assert "eigh7" in msg and "eigh() of a Matrix[7, 7]: hawk.math writes it out for sizes 1 to 6" in msg

    def wrong_rhs():
        @hawk.kernel
        def bad_b(A: Matrix[3, 3], b: Vector[2], x: Mutable[Vector[3]]):
            x, info = solve(A, b)
    msg = _refused(wrong_rhs)
    assert "bad_b" in msg and "solve(): A is 3x3, so b is a Vector[3] or a Matrix[3, k], got a Vector[2]" in msg

    def not_a_factor():
        @hawk.kernel
        def bad_factor(A: Matrix[3, 3], b: Vector[3], x: Mutable[Vector[3]]):
            x = lu_solve(A, b)
    msg = _refused(not_a_factor)
    assert "bad_factor" in msg and "lu_solve() takes the factor lu() returns" in msg and "f, info = lu(A)" in msg

    def unpack_two():
        @hawk.kernel
        def eigh_two(A: Matrix[3, 3], w: Mutable[Vector[3]]):
            w, V = eigh(A)
    msg = _refused(unpack_two)
    assert "eigh_two" in msg and "cannot unpack" in msg and "into 2 names" in msg

    def vector_in():
        @hawk.kernel
        def chol_vec(v: Vector[3], y: Mutable[Vector[3]]):
            y, info = cholesky(v)
    msg = _refused(vector_in)
    assert "chol_vec" in msg and "cholesky() takes a Matrix, got a Vector[3]; build one with mat(row, row, ...)" in msg

    def wide_lstsq():
        @hawk.kernel
        def lstsq7(J: Matrix[8, 7], r: Vector[8], x: Mutable[Vector[7]]):
            x, info = lstsq(J, r)
    msg = _refused(wide_lstsq)
    assert "lstsq7" in msg and "lstsq() of a Matrix[8, 7]: hawk.math writes it out for up to 6 unknowns" in msg


def test_refusal_points_at_the_line():
    import inspect

    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def chol_rect(A: Matrix[2, 3], L: Mutable[Matrix[2, 3]]):
            L, info = cholesky(A)
    line = inspect.currentframe().f_lineno - 1  # the statement just above
    assert f"test_linalg.py:{line}" in str(e.value)


# ---------------------------------------------------------------- cost


def test_eigh_6x6_stays_a_reasonable_size():
    """The unrolled 6x6 eigh (7 Jacobi sweeps, sort, signs) is straight-line code of a bounded
    size: a guard against a change that multiplies it."""
    src = eigh6.cpp("float64")
    lines = src.count("\n")
    assert 3000 < lines < 12000, lines
