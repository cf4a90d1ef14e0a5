"""Adjoint step benchmark: the adjoint kernel of a drag step (wrt v and cd) at N = 2^20
float64, side by side in one process against the primal kernel and against jax.vjp of the
same step written in jax.numpy under jax.jit (same cotangent, block_until_ready).

    python benchmarks/adjoint_step.py          # prints a table of times and ratios

Targets: the adjoint <= 3x the primal's time; the adjoint no slower than jax.vjp under jit.
The numbers of the adjoint are checked against JAX's before anything is timed.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import eagle  # noqa: E402
import eagle.plan  # noqa: E402
from kernels import drag_step  # noqa: E402

N = 1 << 20
CD, DT, G = 0.1, 0.01, 9.81


def jax_step(v, cd):
    a = jnp.array([0.0, 0.0, -G])[:, None] - cd * jnp.linalg.norm(v, axis=0) * v
    return v + DT * a


@jax.jit
def jax_vjp(v, cd, ct):
    _, pullback = jax.vjp(jax_step, v, cd)
    return pullback(ct)


@jax.jit
def jax_primal(v, cd):
    return jax_step(v, cd)


def best(fn, repeat: int = 15) -> float:
    """The best of `repeat` timed calls (after one warm-up call), in seconds."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    tmp = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    v = rng.normal(size=(3, N))
    ct = rng.normal(size=(3, N))
    v_next = np.zeros_like(v)
    v_bar = np.zeros_like(v)
    cd_bar = np.zeros(1)

    adjoint = drag_step.adjoint(["v", "cd"])
    primal_plan, adjoint_plan = eagle.plan.auto([drag_step, adjoint], cache_dir=os.path.join(tmp, "cache"))
    primal = primal_plan.bind(v=v, cd=CD, dt=DT, g=G, v_next=v_next)
    adj = adjoint_plan.bind(v=v, cd=CD, dt=DT, g=G, v_next_bar=ct, v_bar=v_bar, cd_bar=cd_bar)

    # Correctness first: the same numbers as JAX.
    primal.launch()
    adj.launch()
    jv, jct, jcd = jnp.asarray(v), jnp.asarray(ct), jnp.float64(CD)
    want_next = np.asarray(jax_primal(jv, jcd))
    want_v, want_cd = (np.asarray(x) for x in jax_vjp(jv, jcd, jct))
    np.testing.assert_allclose(v_next, want_next, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(v_bar, want_v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cd_bar[0], want_cd, rtol=1e-10)

    t_primal = best(primal.launch)
    t_adj = best(adj.launch)
    t_jax = best(lambda: jax.block_until_ready(jax_vjp(jv, jcd, jct)))
    t_jax_primal = best(lambda: jax.block_until_ready(jax_primal(jv, jcd)))
    threads = eagle.host_runtime().num_threads

    print(f"drag step adjoint (wrt v, cd), N = 2^20 = {N} samples, float64, {threads} host threads, "
          f"jax {jax.__version__} on {jax.devices()[0].platform}")
    print(f"{'':40s} {'time':>10s}  ratio")
    rows = [
        ("hawk primal kernel", t_primal, "1.00x (baseline)"),
        ("hawk adjoint kernel", t_adj, f"{t_adj / t_primal:.2f}x the primal (target <= 3x)"),
        ("jax.vjp under jax.jit", t_jax, f"{t_jax / t_adj:.2f}x the hawk adjoint's time (target >= 1x: hawk no slower)"),
        ("jax primal under jax.jit", t_jax_primal, f"{t_jax_primal / t_primal:.2f}x the hawk primal's time"),
    ]
    for name, t, ratio in rows:
        print(f"{name:40s} {t * 1e3:8.3f} ms  {ratio}")
    print(f"checked: v_next, v_bar and cd_bar agree with JAX (cd_bar = {cd_bar[0]:.12g})")


if __name__ == "__main__":
    main()
