"""``jax.test_util.check_grads`` at order 2, forward and reverse, over every differentiable
linear algebra name (diff3 of linalg_cases.py), through the JAX bridge."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

from jax.test_util import check_grads  # noqa: E402

from linalg_cases import SEED, _diff_inputs, diff3  # noqa: E402


def test_check_grads_order_2_over_every_name():
    rng = np.random.default_rng(SEED + 21)
    args = tuple(jnp.asarray(a) for a in _diff_inputs(rng, 3))
    f = eagle_jax.function(diff3, wrt=("A", "S", "H", "b", "J", "r"))
    check_grads(f, args, order=2, modes=("fwd", "rev"))
