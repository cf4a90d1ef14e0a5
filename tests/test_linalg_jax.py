"""Per-sample linear algebra's derivatives through the JAX bridge (docs/derivatives.md): values,
jvp and vjp of diff3 (every differentiable name on 3x3 inputs) against jax.numpy.linalg and
jax.scipy.linalg, on both lowerings. Kernels and inputs: linalg_cases.py."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.scipy.linalg as jsl  # noqa: E402

from linalg_cases import SEED, _diff_inputs, diff3  # noqa: E402


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
