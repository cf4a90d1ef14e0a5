"""Matrices and quaternions (docs/language.md "Matrices and quaternions"): ``Matrix[r, c]``
planes of shape (r, c, N), ``hawk.math``'s matrix and quaternion functions, against NumPy and
SciPy's Rotation (quaternions (x, y, z, w), scalar last) in float32 and float64; derivatives
with ``jax.test_util.check_grads`` at order 2, forward and reverse, through the JAX bridge;
refusals naming the kernel, the line or the plane, and the fix; the CUDA emission with NVRTC.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import hawk
from hawk import Matrix, Mutable, Param, Scalar, Table, Vector
from hawk.math import (
    det, identity, inverse, mat, outer, quat_conj, quat_from_axis_angle, quat_mul, quat_rotate,
    quat_to_matrix, sin, trace, transpose, vec,
)

from conftest import plan_kernels

N = 64
SEED = 1105
TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-11, atol=1e-12)}


# ---------------------------------------------------------------- kernels


@hawk.kernel
def square_ops(A: Matrix[3, 3], B: Matrix[3, 3], v: Vector[3], C: Mutable[Matrix[3, 3]],
               w: Mutable[Vector[3]], d: Mutable[Scalar], Ai: Mutable[Matrix[3, 3]],
               t: Mutable[Scalar]):
    C = A @ B - 0.5 * transpose(A) + identity(3)
    w = A @ v
    d = det(A)
    Ai = inverse(A)
    t = trace(A @ B) + v @ v


@hawk.kernel
def sizes_2_4(A2: Matrix[2, 2], A4: Matrix[4, 4], d2: Mutable[Scalar], d4: Mutable[Scalar],
              I2: Mutable[Matrix[2, 2]], I4: Mutable[Matrix[4, 4]]):
    d2 = det(A2)
    d4 = det(A4)
    I2 = inverse(A2)
    I4 = inverse(A4)


@hawk.kernel
def rect(M: Matrix[2, 3], u: Vector[3], x: Vector[2], y: Mutable[Vector[2]], z: Mutable[Vector[3]],
         T: Mutable[Matrix[3, 2]], O: Mutable[Matrix[2, 3]]):
    y = M @ u
    z = x @ M
    T = transpose(M)
    O = outer(x, u) + M * 2.0 - sin(M)


@hawk.kernel
def built(a: Scalar, b: Scalar, m: Mutable[Matrix[2, 3]], r: Mutable[Vector[3]], s: Mutable[Scalar]):
    M = mat(vec(a, b, 1.0), (b, a, 2.0))
    M[1, 2] = a * b
    M[0] = M[0] + vec(0.0, 0.0, 3.0)
    m = M
    r = M[1] + identity(3)[0]
    s = M[0, 1] + M[-1, -1]


@hawk.kernel
def quats(q: Vector[4], p: Vector[4], v: Vector[3], axis: Vector[3], ang: Scalar,
          qp: Mutable[Vector[4]], qc: Mutable[Vector[4]], rv: Mutable[Vector[3]],
          R: Mutable[Matrix[3, 3]], qa: Mutable[Vector[4]]):
    qp = quat_mul(q, p)
    qc = quat_conj(q)
    rv = quat_rotate(q, v)
    R = quat_to_matrix(q)
    qa = quat_from_axis_angle(axis, ang)


@hawk.kernel
def table_matrix(W: Table[Matrix[2, 2]], idx: Scalar, v: Vector[2], y: Mutable[Vector[2]]):
    y = W.at(idx) @ v


@hawk.kernel
def inout_matrix(dt: Param, M: Mutable[Matrix[2, 2]]):
    M = M + dt * (M @ M)


# ---------------------------------------------------------------- NumPy references


def well_conditioned(rng, n, size):
    """n x n matrices per sample (n, n, N): the identity times 2 plus noise."""
    return 2.0 * np.eye(n)[:, :, None] + rng.uniform(-0.5, 0.5, (n, n, size))


def per_sample(a):
    """(r, c, N) -> (N, r, c)."""
    return np.moveaxis(a, -1, 0)


def planes(a):
    """(N, r, c) or (N, k) -> samples last."""
    return np.ascontiguousarray(np.moveaxis(a, 0, -1))


def unit_quats(rng, size):
    q = rng.normal(size=(4, size))
    return q / np.linalg.norm(q, axis=0)


def hamilton(a, b):
    """Hamilton product of quaternion planes (4, N) in (x, y, z, w) order."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.stack([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels([square_ops, sizes_2_4, rect, built, quats, table_matrix, inout_matrix], module_cache_dir)


def run(plan, dtype, **inputs):
    """Binds float arrays of `dtype` and zero outputs of the interface's shapes; launches once."""
    k = plan.kernel
    iface = k.interface(dtype)
    vals = {name: (np.ascontiguousarray(v, dtype=dtype) if isinstance(v, np.ndarray) else v) for name, v in inputs.items()}
    n = next(v.shape[-1] for name, v in vals.items() if isinstance(v, np.ndarray) and k.slot(name).kind in ("plane", "mutable"))
    for i, s in enumerate(k.slots):
        if s.kind == "mutable" and s.name not in vals:
            vals[s.name] = np.zeros(tuple(iface.expected_shape(i, n, [])), dtype=dtype)
    plan.bind(**vals).launch()
    return vals


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_square_ops_against_numpy(plans, dtype):
    rng = np.random.default_rng(SEED)
    A, B = well_conditioned(rng, 3, N), rng.normal(size=(3, 3, N))
    v = rng.normal(size=(3, N))
    A, B, v = (x.astype(dtype).astype(np.float64) for x in (A, B, v))  # the kernel's inputs, exactly
    out = run(plans["square_ops"], dtype, A=A, B=B, v=v)
    An, Bn = per_sample(A), per_sample(B)
    tol = TOL[dtype]
    np.testing.assert_allclose(out["C"], planes(An @ Bn - 0.5 * np.swapaxes(An, 1, 2) + np.eye(3)), **tol)
    np.testing.assert_allclose(out["w"], planes(np.einsum("nij,jn->ni", An, v)), **tol)
    np.testing.assert_allclose(out["d"], np.linalg.det(An), **tol)
    np.testing.assert_allclose(out["Ai"], planes(np.linalg.inv(An)), **tol)
    np.testing.assert_allclose(out["t"], np.trace(An @ Bn, axis1=1, axis2=2) + np.sum(v * v, axis=0), **tol)
    assert out["C"].shape == (3, 3, N)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_det_and_inverse_2x2_and_4x4(plans, dtype):
    rng = np.random.default_rng(SEED + 1)
    A2, A4 = well_conditioned(rng, 2, N), well_conditioned(rng, 4, N)
    A2, A4 = (x.astype(dtype).astype(np.float64) for x in (A2, A4))
    out = run(plans["sizes_2_4"], dtype, A2=A2, A4=A4)
    tol = TOL[dtype]
    np.testing.assert_allclose(out["d2"], np.linalg.det(per_sample(A2)), **tol)
    np.testing.assert_allclose(out["d4"], np.linalg.det(per_sample(A4)), **tol)
    np.testing.assert_allclose(out["I2"], planes(np.linalg.inv(per_sample(A2))), **tol)
    np.testing.assert_allclose(out["I4"], planes(np.linalg.inv(per_sample(A4))), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rectangular_products_transpose_outer(plans, dtype):
    rng = np.random.default_rng(SEED + 2)
    M, u, x = rng.normal(size=(2, 3, N)), rng.normal(size=(3, N)), rng.normal(size=(2, N))
    M, u, x = (a.astype(dtype).astype(np.float64) for a in (M, u, x))
    out = run(plans["rect"], dtype, M=M, u=u, x=x)
    Mn = per_sample(M)
    tol = TOL[dtype]
    np.testing.assert_allclose(out["y"], planes(np.einsum("nij,jn->ni", Mn, u)), **tol)
    np.testing.assert_allclose(out["z"], planes(np.einsum("in,nij->nj", x, Mn)), **tol)
    np.testing.assert_allclose(out["T"], planes(np.swapaxes(Mn, 1, 2)), **tol)
    np.testing.assert_allclose(out["O"], planes(np.einsum("in,jn->nij", x, u) + 2.0 * Mn - np.sin(Mn)), **tol)
    assert out["T"].shape == (3, 2, N)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mat_indexing_and_component_assignment(plans, dtype):
    rng = np.random.default_rng(SEED + 3)
    a, b = rng.normal(size=N), rng.normal(size=N)
    a, b = a.astype(dtype).astype(np.float64), b.astype(dtype).astype(np.float64)
    out = run(plans["built"], dtype, a=a, b=b)
    M = np.stack([np.stack([a, b, np.ones(N) + 3.0]), np.stack([b, a, a * b])])
    tol = TOL[dtype]
    np.testing.assert_allclose(out["m"], M, **tol)
    np.testing.assert_allclose(out["r"], M[1] + np.array([1.0, 0.0, 0.0])[:, None], **tol)
    np.testing.assert_allclose(out["s"], M[0, 1] + M[1, 2], **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_quaternions_against_scipy_rotation(plans, dtype):
    rng = np.random.default_rng(SEED + 4)
    q, p = unit_quats(rng, N), unit_quats(rng, N)
    v, axis = rng.normal(size=(3, N)), rng.normal(size=(3, N))
    ang = rng.uniform(-3.0, 3.0, N)
    q, p, v, axis, ang = (x.astype(dtype).astype(np.float64) for x in (q, p, v, axis, ang))
    out = run(plans["quats"], dtype, q=q, p=p, v=v, axis=axis, ang=ang)
    tol = TOL[dtype]
    rq, rp = Rotation.from_quat(q.T), Rotation.from_quat(p.T)
    np.testing.assert_allclose(out["qp"], hamilton(q, p), **tol)
    # quat_mul(q, p) is the rotation p then q, as SciPy's rq * rp
    np.testing.assert_allclose(Rotation.from_quat(out["qp"].T.astype(np.float64)).as_matrix(), (rq * rp).as_matrix(), **{**tol, "atol": 1e-4 if dtype == "float32" else 1e-10})
    np.testing.assert_allclose(out["qc"], np.concatenate([-q[:3], q[3:]]), **tol)
    np.testing.assert_allclose(out["rv"], rq.apply(v.T).T, **{**tol, "atol": 1e-4 if dtype == "float32" else 1e-10})
    np.testing.assert_allclose(out["R"], np.moveaxis(rq.as_matrix(), 0, -1), **{**tol, "atol": 1e-5 if dtype == "float32" else 1e-12})
    unit = axis / np.linalg.norm(axis, axis=0)
    np.testing.assert_allclose(out["qa"], Rotation.from_rotvec((unit * ang).T).as_quat().T, **{**tol, "atol": 1e-5 if dtype == "float32" else 1e-12})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_table_of_matrices_and_inout_matrix_plane(plans, dtype):
    rng = np.random.default_rng(SEED + 5)
    W = rng.normal(size=(5, 2, 2))
    idx = rng.integers(0, 5, N).astype(np.float64)
    v = rng.normal(size=(2, N))
    W, v = W.astype(dtype).astype(np.float64), v.astype(dtype).astype(np.float64)
    out = run(plans["table_matrix"], dtype, W=W, idx=idx, v=v)
    np.testing.assert_allclose(out["y"], np.einsum("nij,jn->in", W[idx.astype(int)], v), **TOL[dtype])
    M0 = rng.normal(size=(2, 2, N)).astype(dtype)
    M = M0.copy()
    run(plans["inout_matrix"], dtype, dt=0.1, M=M)
    Mn = per_sample(M0.astype(np.float64))
    np.testing.assert_allclose(M, planes(Mn + 0.1 * (Mn @ Mn)), **TOL[dtype])


def test_interface_shapes_and_annotations():
    iface = square_ops.interface("float64")
    names = [s.name for s in iface.slots]
    assert list(iface.expected_shape(names.index("A"), 7, [])) == [3, 3, 7]
    assert list(iface.expected_shape(names.index("w"), 7, [])) == [3, 7]
    t = table_matrix.interface("float32")
    tn = [s.name for s in t.slots]
    sizes = [0] * len(tn)
    sizes[tn.index("W")] = 5
    assert list(t.expected_shape(tn.index("W"), 7, sizes)) == [5, 2, 2]
    assert repr(rect).startswith("<hawk.Kernel rect(M: Matrix[2, 3], u: Vector[3], x: Vector[2], y: Mutable[Vector[2]]")
    # the adjoint's cotangent of a Table[Matrix] is a sum of the table's shape
    adj = table_matrix.adjoint(["W"]).interface("float64")
    an = [s.name for s in adj.slots]
    sizes = [0] * len(an)
    sizes[an.index("W")] = 5
    assert list(adj.expected_shape(an.index("W_bar"), 7, sizes)) == [5, 2, 2]


# ---------------------------------------------------------------- derivatives through JAX


jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

NG = 6


def test_grads_of_matrix_ops_order_2():
    rng = np.random.default_rng(SEED + 6)
    f = eagle_jax.function(square_ops, wrt=("A", "B", "v"))
    A = jnp.asarray(well_conditioned(rng, 3, NG))
    B, v = jnp.asarray(rng.normal(size=(3, 3, NG))), jnp.asarray(rng.normal(size=(3, NG)))
    check_grads(f, (A, B, v), order=2, modes=("fwd", "rev"))
    g = eagle_jax.function(sizes_2_4, wrt=("A2", "A4"))
    check_grads(g, (jnp.asarray(well_conditioned(rng, 2, NG)), jnp.asarray(well_conditioned(rng, 4, NG))), order=2, modes=("fwd", "rev"))


def test_grads_of_quaternion_ops_order_2():
    rng = np.random.default_rng(SEED + 7)
    f = eagle_jax.function(quats, wrt=("q", "p", "v", "axis", "ang"))
    args = (unit_quats(rng, NG), unit_quats(rng, NG), rng.normal(size=(3, NG)), rng.normal(size=(3, NG)), rng.uniform(-3, 3, NG))
    check_grads(f, tuple(jnp.asarray(a) for a in args), order=2, modes=("fwd", "rev"))


def test_grads_of_rect_table_and_inout_order_2():
    rng = np.random.default_rng(SEED + 8)
    f = eagle_jax.function(rect, wrt=("M", "u", "x"))
    check_grads(f, tuple(jnp.asarray(rng.normal(size=s)) for s in ((2, 3, NG), (3, NG), (2, NG))), order=2, modes=("fwd", "rev"))
    g = eagle_jax.function(table_matrix, wrt=("W", "v"))
    idx = jnp.asarray(rng.integers(0, 4, NG).astype(np.float64))
    check_grads(lambda W, v: g(W, idx, v), (jnp.asarray(rng.normal(size=(4, 2, 2))), jnp.asarray(rng.normal(size=(2, NG)))), order=2, modes=("fwd", "rev"))
    h = eagle_jax.function(inout_matrix, wrt=("M",))
    check_grads(lambda M: h(0.1, M), (jnp.asarray(rng.normal(size=(2, 2, NG))),), order=2, modes=("fwd", "rev"))


def test_jax_values_match_numpy_and_vmap():
    rng = np.random.default_rng(SEED + 9)
    f = eagle_jax.function(rect)
    M, u, x = rng.normal(size=(2, 3, NG)), rng.normal(size=(3, NG)), rng.normal(size=(2, NG))
    y, z, T, O = f(jnp.asarray(M), jnp.asarray(u), jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(y), np.einsum("ijn,jn->in", M, u), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(T), np.swapaxes(M, 0, 1), rtol=1e-12)
    Mb = rng.normal(size=(3, 2, 3, NG))  # a batch of 3 in front
    yb = jax.vmap(lambda m: f(m, jnp.asarray(u), jnp.asarray(x))[0])(jnp.asarray(Mb))
    np.testing.assert_allclose(np.asarray(yb), np.einsum("bijn,jn->bin", Mb, u), rtol=1e-12)


# ---------------------------------------------------------------- refusals


def test_matmul_of_incompatible_shapes_is_refused_with_the_line():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def bad_matmul(M: Matrix[2, 3], y: Mutable[Matrix[2, 3]]):
            y = M @ M
    msg = str(e.value)
    assert "bad_matmul" in msg and "test_matrix.py" in msg
    assert "3 columns but the right one has 2 rows" in msg and "transpose(m)" in msg


def test_inverse_of_5x5_is_refused_with_the_fix():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def big_inverse(M: Matrix[5, 5], y: Mutable[Matrix[5, 5]]):
            y = inverse(M)
    msg = str(e.value)
    assert "big_inverse" in msg and "inverse() of a Matrix[5, 5]" in msg and "sizes 1 to 4" in msg and "`for` loops" in msg


def test_other_shape_errors_are_refused():
    with pytest.raises(hawk.KernelError, match=r"cannot combine a Matrix\[2, 2\] and a Vector\[4\]"):
        @hawk.kernel
        def mat_plus_vec(M: Matrix[2, 2], v: Vector[4], y: Mutable[Vector[4]]):
            y = M + v
    with pytest.raises(hawk.KernelError, match=r"'y' is a Mutable\[Matrix\[2, 2\]\] but the value assigned is a Matrix\[2, 3\]"):
        @hawk.kernel
        def wrong_out(M: Matrix[2, 3], y: Mutable[Matrix[2, 2]]):
            y = M
    with pytest.raises(hawk.KernelError, match=r"det\(\) takes a square Matrix"):
        @hawk.kernel
        def det_rect(M: Matrix[2, 3], y: Mutable[Scalar]):
            y = det(M)
    with pytest.raises(hawk.KernelError, match=r"column index 3 is out of range for a Matrix\[2, 3\]"):
        @hawk.kernel
        def bad_index(M: Matrix[2, 3], y: Mutable[Scalar]):
            y = M[0, 3]
    with pytest.raises(hawk.KernelError, match=r"quat_mul\(\) takes quaternions as Vector\[4\]"):
        @hawk.kernel
        def bad_quat(q: Vector[3], y: Mutable[Vector[4]]):
            y = quat_mul(q, q)
    with pytest.raises(TypeError, match=r"Matrix\[r, c\] needs two sizes"):
        Matrix[3]


def test_a_matrix_of_the_wrong_shape_is_refused_when_bound(plans):
    rng = np.random.default_rng(1)
    bad = dict(M=rng.normal(size=(6, 4)), u=rng.normal(size=(3, 4)), x=rng.normal(size=(2, 4)))
    with pytest.raises(ValueError) as e:
        run(plans["rect"], "float64", **bad)
    msg = str(e.value)
    assert "rect" in msg and "'M' must have shape (2, 3, 4)" in msg and "got (6, 4)" in msg
    f = eagle_jax.function(rect)
    with pytest.raises(ValueError) as e:
        f(jnp.zeros((3, 2, 4)), jnp.zeros((3, 4)), jnp.zeros((2, 4)))
    msg = str(e.value)
    assert "rect" in msg and "'M' must have shape (2, 3, 4)" in msg


# ---------------------------------------------------------------- CUDA emission


def test_cuda_emission_compiles_with_nvrtc():
    from raptor_core import _core

    try:
        _core.nvrtc_check([], "sm_80")
    except RuntimeError as err:
        pytest.fail(f"NVRTC is needed for this check: {err}")
    ks = [quats, square_ops, table_matrix, quats.adjoint(["q", "v"]), square_ops.tangent(["A"])]
    assert _core.nvrtc_check([k._core for k in ks], "sm_80") == 2 * len(ks)
