"""Per-sample linear algebra (docs/language.md "Linear algebra"): ``eye``, ``diag``, ``diagonal``,
``tril``, ``triu``, ``inv``, ``solve``, ``lu``/``lu_solve``, ``cholesky``/``cho_solve``, ``lstsq``
and ``eigh`` on ``Matrix[n, n]`` values, n = 1..6, sample by sample against NumPy and SciPy
(LAPACK's getrf/potrf for ``info`` on singular and indefinite matrices) in float32 and float64;
derivatives against jax.numpy.linalg through the JAX bridge on both lowerings, and
``jax.test_util.check_grads`` at order 2 over every differentiable name; refusals with their
texts and lines; the CUDA emission with NVRTC; the compile time of the largest (6x6 eigh).
"""

import time

import numpy as np
import pytest
import scipy.linalg as sla
from scipy.linalg import lapack

import hawk
from hawk import Matrix, Mutable, Scalar, Vector
from hawk.math import (
    cho_solve, cholesky, diag, diagonal, eigh, eye, inv, lstsq, lu, lu_solve, solve, tril, triu,
)

import conftest
from conftest import plan_kernels

N = 24
SEED = 2707
SIZES = (1, 2, 3, 4, 5, 6)
TOL = {"float32": dict(rtol=3e-4, atol=3e-4), "float64": dict(rtol=1e-10, atol=1e-11)}


# ---------------------------------------------------------------- kernels, one per size


def _all_ops(n: int):
    """A kernel named linalg_<n> using every name on n x n inputs (B two columns, J (n + 2) x n;
    annotations are evaluated when the def runs, so they read n and m here)."""
    m = n + 2

    def k(A: Matrix[n, n], S: Matrix[n, n], H: Matrix[n, n], b: Vector[n], B: Matrix[n, 2],
          J: Matrix[m, n], r: Vector[m],
          x: Mutable[Vector[n]], info: Mutable[Scalar[hawk.int32]], X: Mutable[Matrix[n, 2]],
          Ai: Mutable[Matrix[n, n]], iinfo: Mutable[Scalar[hawk.int32]],
          LU: Mutable[Matrix[n, n]], piv: Mutable[Vector[n, hawk.int32]],
          luinfo: Mutable[Scalar[hawk.int32]], xl: Mutable[Vector[n]],
          L: Mutable[Matrix[n, n]], cinfo: Mutable[Scalar[hawk.int32]], xc: Mutable[Vector[n]],
          xs: Mutable[Vector[n]], sinfo: Mutable[Scalar[hawk.int32]],
          w: Mutable[Vector[n]], V: Mutable[Matrix[n, n]], einfo: Mutable[Scalar[hawk.int32]],
          shapes: Mutable[Matrix[n, n]], d: Mutable[Vector[n]]):
        x, info = solve(A, b)
        X, _ = solve(A, B)
        Ai, iinfo = inv(A)
        f, luinfo = lu(A)
        LU, piv = f
        xl = lu_solve(f, b)
        L, cinfo = cholesky(S)
        xc = cho_solve(L, b)
        xs, sinfo = lstsq(J, r)
        w, V, einfo = eigh(H)
        shapes = tril(A) + 2.0 * triu(A, 1) + diag(diagonal(A)) + eye(n)
        d = diag(A)

    k.__name__ = f"linalg_{n}"  # the kernel's name
    return hawk.kernel(k)


KERNELS = {n: _all_ops(n) for n in SIZES}


def _compile_as_they_are(*kernels) -> None:
    """The session's NVRTC check (conftest.py) also derives each kernel it records. The
    derivatives of the 4x4 to 6x6 kernels here are the rules of diff3's 3x3 ones (whose
    derivatives it does compile) written out larger, and NVRTC takes minutes on them (a 6x6
    eigh adjoint: 256 s of CPU): these are compiled as they are, as stepping passes are."""
    for k in kernels:
        conftest._not_derived.add(id(k._core))


_compile_as_they_are(KERNELS[4], KERNELS[5], KERNELS[6])


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels(list(KERNELS.values()), module_cache_dir)


# ---------------------------------------------------------------- inputs and references


def per_sample(a):
    """(r, c, N) -> (N, r, c); (k, N) -> (N, k)."""
    return np.moveaxis(a, -1, 0)


def planes(a):
    return np.ascontiguousarray(np.moveaxis(a, 0, -1))


def pivoting(rng, n, size):
    """Well conditioned matrices whose rows are shuffled, so partial pivoting swaps rows."""
    base = 2.0 * np.eye(n) + rng.uniform(-0.5, 0.5, (size, n, n))
    perm = np.array([rng.permutation(n) for _ in range(size)])
    return planes(np.take_along_axis(base, perm[:, :, None], axis=1))


def spd(rng, n, size):
    m = rng.normal(size=(size, n, n))
    return planes(m @ np.swapaxes(m, 1, 2) + n * np.eye(n))


def symmetric_with_gaps(rng, n, size):
    """Q diag(w) Q^T with eigenvalues at least 0.3 apart (eigenvectors well determined)."""
    q, _ = np.linalg.qr(rng.normal(size=(size, n, n)))
    w = np.cumsum(rng.uniform(0.3, 1.5, (size, n)), axis=1) - 2.0
    h = q @ (w[:, :, None] * np.swapaxes(q, 1, 2))
    return planes((h + np.swapaxes(h, 1, 2)) / 2)


def signed(V):
    """Each column of each (.., n, n) V times the sign of its largest-magnitude component."""
    idx = np.argmax(np.abs(V), axis=-2)
    s = np.sign(np.take_along_axis(V, idx[..., None, :], axis=-2))
    return V * s


def inputs(rng, n, dtype):
    m = n + 2
    vals = dict(A=pivoting(rng, n, N), S=spd(rng, n, N), H=symmetric_with_gaps(rng, n, N),
                b=rng.normal(size=(n, N)), B=rng.normal(size=(n, 2, N)),
                J=planes(rng.normal(size=(N, m, n)) + np.eye(m, n)), r=rng.normal(size=(m, N)))
    # the kernel's inputs exactly, so the references start from the same numbers
    return {k: v.astype(dtype).astype(np.float64) for k, v in vals.items()}


def run(plan, dtype, **inputs):
    """Binds inputs and zero outputs of the interface's shapes and dtypes; launches once."""
    k = plan.kernel
    iface = k.interface(dtype)
    vals = {name: np.ascontiguousarray(v, dtype=dtype) for name, v in inputs.items()}
    n = next(v.shape[-1] for v in vals.values())
    for i, s in enumerate(k.slots):
        if s.kind == "mutable" and s.name not in vals:
            vals[s.name] = np.zeros(tuple(iface.expected_shape(i, n, [])), dtype=dtype if s.dtype == "float" else s.dtype)
    plan.bind(**vals).launch()
    return vals


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


# ---------------------------------------------------------------- derivatives through JAX


jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

NG = 4


@hawk.kernel
def diff3(A: Matrix[3, 3], S: Matrix[3, 3], H: Matrix[3, 3], b: Vector[3], J: Matrix[4, 3],
          r: Vector[4], x: Mutable[Vector[3]], Ai: Mutable[Matrix[3, 3]], xl: Mutable[Vector[3]],
          L: Mutable[Matrix[3, 3]], xc: Mutable[Vector[3]], xs: Mutable[Vector[3]],
          w: Mutable[Vector[3]], V: Mutable[Matrix[3, 3]], sh: Mutable[Matrix[3, 3]]):
    x, _ = solve(A, b)
    Ai, _ = inv(A)
    f, _ = lu(A)
    xl = lu_solve(f, b) + f[0] @ b
    L, _ = cholesky(S)
    xc = cho_solve(L, b)
    xs, _ = lstsq(J, r)
    w, V, _ = eigh(H)
    sh = tril(A) * triu(A) + diag(diagonal(A) * b) + eye(3)


def _ref3(A, S, H, b, J, r):
    """diff3 in jax.numpy / jax.scipy: planes (.., N) in, the same outputs."""
    P = lambda a: jnp.moveaxis(a, -1, 0)  # noqa: E731
    U = lambda a: jnp.moveaxis(a, 0, -1)  # noqa: E731
    A, S, H, J, b, r = P(A), P(S), P(H), P(J), P(b), P(r)
    x = jnp.linalg.solve(A, b[..., None])[..., 0]
    Ai = jnp.linalg.inv(A)
    lu_, piv = jax.vmap(jsl.lu_factor)(A)
    xl = x + jnp.einsum("sij,sj->si", lu_, b)
    L = jnp.linalg.cholesky((S + jnp.swapaxes(S, 1, 2)) / 2)
    xc = jax.vmap(lambda l, v: jsl.cho_solve((l, True), v))(L, b)
    xs = jax.vmap(lambda j, v: jnp.linalg.lstsq(j, v)[0])(J, r)
    w, V = jnp.linalg.eigh((H + jnp.swapaxes(H, 1, 2)) / 2)
    idx = jnp.argmax(jnp.abs(V), axis=1)
    V = V * jax.lax.stop_gradient(jnp.sign(jnp.take_along_axis(V, idx[:, None, :], 1)))
    sh = jnp.tril(A) * jnp.triu(A) + jax.vmap(jnp.diag)(jnp.diagonal(A, axis1=1, axis2=2) * b) + jnp.eye(3)
    return tuple(U(o) for o in (x, Ai, xl, L, xc, xs, w, V, sh))


def _diff_inputs(rng, size=NG):
    return (pivoting(rng, 3, size), spd(rng, 3, size), symmetric_with_gaps(rng, 3, size),
            rng.normal(size=(3, size)), planes(rng.normal(size=(size, 4, 3)) + np.eye(4, 3)),
            rng.normal(size=(4, size)))


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_values_jvp_and_vjp_against_jax_numpy_linalg(lowering):
    rng = np.random.default_rng(SEED + 20)
    args = tuple(jnp.asarray(a) for a in _diff_inputs(rng))
    f = eagle_jax.function(diff3, wrt=("A", "S", "H", "b", "J", "r"), lowering=lowering)
    got, want = f(*args), _ref3(*args)
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w_), rtol=1e-10, atol=1e-11)
    tangents = tuple(jnp.asarray(rng.normal(size=a.shape)) for a in args)
    _, jt = jax.jvp(f, args, tangents)
    _, jr = jax.jvp(_ref3, args, tangents)
    for g, w_ in zip(jt, jr):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w_), rtol=1e-8, atol=1e-9)
    cots = tuple(jnp.asarray(rng.normal(size=np.shape(o))) for o in want)
    _, vf = jax.vjp(f, *args)
    _, vr = jax.vjp(_ref3, *args)
    for g, w_ in zip(vf(cots), vr(cots)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w_), rtol=1e-8, atol=1e-9)


def test_check_grads_order_2_over_every_name():
    rng = np.random.default_rng(SEED + 21)
    args = tuple(jnp.asarray(a) for a in _diff_inputs(rng, 3))
    f = eagle_jax.function(diff3, wrt=("A", "S", "H", "b", "J", "r"))
    check_grads(f, args, order=2, modes=("fwd", "rev"))


@hawk.kernel
def eigh6(H: Matrix[6, 6], w: Mutable[Vector[6]], V: Mutable[Matrix[6, 6]]):
    w, V, _ = eigh(H)


_compile_as_they_are(eigh6)  # its tangent is compiled below


def test_eigh_6x6_derivatives_match_jax_where_eigenvalues_are_distinct():
    rng = np.random.default_rng(SEED + 22)
    H = jnp.asarray(symmetric_with_gaps(rng, 6, NG))
    f = eagle_jax.function(eigh6, wrt=("H",))

    def ref(h):
        w, V = jnp.linalg.eigh(jnp.moveaxis((h + jnp.swapaxes(h, 0, 1)) / 2, -1, 0))
        idx = jnp.argmax(jnp.abs(V), axis=1)
        V = V * jax.lax.stop_gradient(jnp.sign(jnp.take_along_axis(V, idx[:, None, :], 1)))
        return jnp.moveaxis(w, 0, -1), jnp.moveaxis(V, 0, -1)

    T = jnp.asarray(rng.normal(size=H.shape))
    (w, V), (dw, dV) = jax.jvp(f, (H,), (T,))
    (wr, Vr), (dwr, dVr) = jax.jvp(ref, (H,), (T,))
    for g, r_ in ((w, wr), (V, Vr), (dw, dwr), (dV, dVr)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r_), rtol=1e-9, atol=1e-10)
    cw, cV = jnp.asarray(rng.normal(size=w.shape)), jnp.asarray(rng.normal(size=V.shape))
    g = jax.vjp(f, H)[1]((cw, cV))[0]
    gr = jax.vjp(ref, H)[1]((cw, cV))[0]
    np.testing.assert_allclose(np.asarray(g), np.asarray(gr), rtol=1e-9, atol=1e-10)


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


# ---------------------------------------------------------------- CUDA emission and cost


def test_cuda_emission_compiles_with_nvrtc():
    from raptor_core import _core

    try:
        _core.nvrtc_check([], "sm_80")
    except RuntimeError as err:
        pytest.fail(f"NVRTC is needed for this check: {err}")
    ks = [KERNELS[6], diff3, diff3.adjoint(["A", "H"]), eigh6.tangent(["H"])]
    assert _core.nvrtc_check([k._core for k in ks], "sm_80") == 2 * len(ks)


def test_eigh_6x6_stays_a_reasonable_size():
    """The unrolled 6x6 eigh (7 Jacobi sweeps, sort, signs) is straight-line code of a bounded
    size: a guard against a change that multiplies it."""
    src = eigh6.cpp("float64")
    lines = src.count("\n")
    assert 3000 < lines < 12000, lines
