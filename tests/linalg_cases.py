"""The kernels, inputs and references the per-sample linear algebra tests share (docs/language.md
"Linear algebra"): one kernel per size n = 1..6 using every name (``linalg_<n>``), the 3x3 kernel
whose derivatives are checked (``diff3``), the 6x6 ``eigh`` (``eigh6``), and input generators
(pivoting, SPD, symmetric with eigenvalue gaps). The tests are split over test_linalg.py (values,
``info``, refusals, size), test_linalg_jax.py (jvp/vjp against jax.numpy.linalg on both
lowerings), test_linalg_grads.py (check_grads at order 2), test_linalg_eigh.py (6x6 eigh
derivatives) and test_linalg_nvrtc.py (the CUDA emission), so pytest-xdist (--dist loadfile)
can run them on different workers: together they are among the suite's longest.
"""

import numpy as np

import hawk
from hawk import Matrix, Mutable, Scalar, Vector
from hawk.math import (
    cho_solve, cholesky, diag, diagonal, eigh, eye, inv, lstsq, lu, lu_solve, solve, tril, triu,
)

import conftest

N = 24
NG = 4
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
    eigh adjoint: 256 s of CPU): these are compiled as they are, as stepping passes are, and
    the derivatives the tests make of them (through the JAX bridge) are not compiled by that
    check either (test_linalg_nvrtc.py compiles the 6x6 eigh's tangent itself)."""
    for k in kernels:
        conftest._not_derived.add(id(k._core))
        conftest._underived_names.add(k.name)


_compile_as_they_are(KERNELS[4], KERNELS[5], KERNELS[6])


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



# ---------------------------------------------------------------- the derivative kernels


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


# The session's NVRTC check compiles diff3 and its first derivatives, not the second and
# third ones check_grads makes (conftest._first_order_names: the same rules again, on kernels
# of up to 8,821 lines that took NVRTC minutes).
conftest._first_order_names.add(diff3.name)


def _diff_inputs(rng, size=NG):
    return (pivoting(rng, 3, size), spd(rng, 3, size), symmetric_with_gaps(rng, 3, size),
            rng.normal(size=(3, size)), planes(rng.normal(size=(size, 4, 3)) + np.eye(4, 3)),
            rng.normal(size=(4, size)))


@hawk.kernel
def eigh6(H: Matrix[6, 6], w: Mutable[Vector[6]], V: Mutable[Matrix[6, 6]]):
    w, V, _ = eigh(H)


_compile_as_they_are(eigh6)  # its tangent is compiled below
