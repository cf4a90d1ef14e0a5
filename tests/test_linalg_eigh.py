"""The 6x6 ``eigh``'s derivatives (values, jvp, vjp) against jax.numpy.linalg.eigh where the
eigenvalues are distinct, each eigenvector signed so its largest component is positive."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

from linalg_cases import NG, SEED, eigh6, symmetric_with_gaps  # noqa: E402


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
