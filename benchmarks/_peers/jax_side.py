"""The JAX side of benchmarks/peers.py: each case of cases.py inside ``jax.jit`` three ways,
timed in one process in rounds that alternate them:

- ``raptor-jax``: the hawk kernel through ``eagle.frameworks.jax.function`` (an XLA FFI
  custom call into raptor's compiled kernel);
- ``warp-jax``: the Warp kernel of warp_steps.py through ``warp.jax_kernel`` (Warp's
  XLA FFI call, on the CPU);
- ``jax``: the same step in jax.numpy (XLA fuses it).

The constants (cd, dt, g, c) are closed over by every side (Warp's jax_kernel takes scalars
only as static values). Start reading at ``run_worker``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from _peers.cases import (CD, DT, G, OSC_C, OSC_DT, PEND_DRIVE, PEND_DT, PEND_FREQ, PEND_GAMMA, PEND_OUT, check,
                          make_inputs, reference)
from _peers.timing import Rounds

JAX_SYSTEMS = ("raptor-jax", "warp-jax", "jax")
LABELS = {"raptor-jax": "raptor in jit", "warp-jax": "Warp jax_kernel", "jax": "jax.numpy"}
OSC_OUT = ("x", "v", "t", "terminated")


def _jnp_step(case: str) -> Callable:
    import jax.numpy as jnp

    if case == "drag":
        def drag(v):
            f = v.dtype.type
            s = f(CD) * jnp.sqrt((v * v).sum(axis=0))
            return v + f(DT) * jnp.stack([-s * v[0], -s * v[1], f(-G) - s * v[2]])
        return drag

    if case == "pend":
        def pend(theta, omega, phase):
            f = theta.dtype.type
            dt = f(PEND_DT)
            om = omega + dt * (-jnp.sin(theta) - f(PEND_GAMMA) * omega + f(PEND_DRIVE) * jnp.cos(phase))
            return theta + dt * om, om, phase + dt * f(PEND_FREQ)
        return pend

    def osc(t_final, corr, terminated, x, v, t):
        f = x.dtype.type
        live = ~terminated
        vn = v + f(OSC_DT) * (-x - f(OSC_C) * v + corr * v)
        xn, tn = x + f(OSC_DT) * v, t + f(OSC_DT)
        return (jnp.where(live, xn, x), jnp.where(live, vn, v), jnp.where(live, tn, t),
                terminated | (live & (tn >= t_final)))
    return osc


def _raptor_step(case: str) -> Callable:
    from eagle.frameworks import jax as eagle_jax
    from kernels import drag_step, osc, pendulum

    if case == "drag":
        fn = eagle_jax.function(drag_step)
        return lambda v: fn(v, CD, DT, G)
    if case == "pend":
        fn = eagle_jax.function(pendulum)
        return lambda theta, omega, phase: fn(PEND_DT, PEND_GAMMA, PEND_DRIVE, PEND_FREQ, theta, omega, phase)
    fn = eagle_jax.function(osc)
    return lambda t_final, corr, terminated, x, v, t: fn(OSC_DT, OSC_C, t_final, corr, terminated, x, v, t)


def _warp_step(case: str, dtype: str, n: int) -> Callable:
    import warp as wp

    from _peers.warp_steps import warp_kernels

    k = warp_kernels(dtype)[case]
    f = np.dtype(dtype).type
    if case == "drag":
        wk = wp.jax_kernel(k, num_outputs=1, launch_dims=(n,), output_dims=(3, n))
        return lambda v: wk(v, f(CD), f(DT), f(G))[0]
    if case == "pend":
        wk = wp.jax_kernel(k, num_outputs=3, launch_dims=(n,), in_out_argnames=list(PEND_OUT))
        return lambda theta, omega, phase: tuple(
            wk(f(PEND_DT), f(PEND_GAMMA), f(PEND_DRIVE), f(PEND_FREQ), theta, omega, phase))
    wk = wp.jax_kernel(k, num_outputs=4, launch_dims=(n,), in_out_argnames=["terminated", "x", "v", "t"])
    def osc(t_final, corr, terminated, x, v, t):
        term, xn, vn, tn = wk(f(OSC_DT), f(OSC_C), t_final, corr, terminated, x, v, t)  # the in-outs, in kernel order
        return xn, vn, tn, term
    return osc


def _order(case: str, outs) -> dict[str, np.ndarray]:
    if case == "drag":
        return {"v_next": np.asarray(outs)}
    return {k: np.asarray(o) for k, o in zip(PEND_OUT if case == "pend" else OSC_OUT, outs)}


def run_worker(systems: list[str], ns: list[int], cases: list[str], dtypes: list[str], repeat: int, min_round_s: float) -> list[dict]:
    """Times every JAX-side system in ``systems`` on every case, dtype and N, alternating the
    systems round by round; each is checked against the NumPy reference first."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    jax.config.update("jax_enable_x64", True)
    if "warp-jax" in systems:
        import warp as wp

        wp.config.quiet = True
        wp.init()
    records = []
    for case in cases:
        for dtype in dtypes:
            for n in ns:
                fresh = make_inputs(case, n, dtype)
                want = reference(case, fresh)
                names = {"drag": ("v",), "pend": PEND_OUT}.get(case, ("t_final", "corr", "terminated", "x", "v", "t"))
                args = [jax.device_put(fresh[k]) for k in names]
                fns = {}
                for system in systems:
                    step = {"raptor-jax": lambda: _raptor_step(case), "warp-jax": lambda: _warp_step(case, dtype, n),
                            "jax": lambda: _jnp_step(case)}[system]()
                    jitted = jax.jit(step)
                    check(system, case, dtype, n, _order(case, jax.block_until_ready(jitted(*args))), want)
                    fns[system] = (lambda j: lambda: j(*args))(jitted)
                best = Rounds(fns, min_round_s, sync=jax.block_until_ready).run(repeat)
                records += [{"side": "jax", "system": s, "case": case, "dtype": dtype, "n": n, "seconds": t} for s, t in best.items()]
    return records
