"""JAX bridge benchmark: a hawk kernel called through eagle.frameworks.jax, side by side in one
process with the same step written in jax.numpy, both under jax.jit, on the CPU.

    python benchmarks/jax_bridge.py            # prints a table of times and ratios

Cases (float64):
  drag step        one drag step (3-vector, norm, Params) at N = 2^20
  scan 360         lax.scan of 360 steps of the flight kernel of the user's page 002
                   (a stepping kernel with a Terminated mask) at N = 256
  grad scan 360    value_and_grad of the mean range through that scan, w.r.t. cd
  floor rows       the same two scans with a kernel that does almost no arithmetic (`coast`),
                   against the same plain-JAX flight step: what the bridge costs per step
                   whatever the kernel does (docs/jax.md, "Performance")

Targets (SPEC §3): drag step at least as fast as XLA (ratio <= 1.0); scan and grad through
scan within 1.5x of plain JAX (ratio <= 1.5). Times are the best of several runs, each ended
by block_until_ready, in rounds that alternate the two sides; compile time is excluded (one
warm-up call each).
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax
import jax.numpy as jnp

from eagle.frameworks import jax as eagle_jax
from kernels import coast, drag_step, flight

jax.config.update("jax_enable_x64", True)


def jnp_drag(v, cd, dt, g):
    a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -g])[:, None]
    return v + dt * a


def jnp_flight(r, v, cd, dt, g, terminated):
    """The flight kernel in jax.numpy: a finished sample's outputs are zero, the mask grows."""
    a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -g])[:, None]
    v_new = v + dt * a
    r_new = r + dt * v_new
    live = ~terminated
    return jnp.where(live, r_new, 0.0), jnp.where(live, v_new, 0.0), terminated | (live & (r_new[2] < 0.0))


def side_by_side(f_eagle, f_jax, *args, repeat: int = 15, number: int = 1) -> tuple[float, float]:
    """Best time in seconds of `number` calls of each function, over `repeat` rounds that
    alternate them, so that both see the same machine. Each turn starts with one untimed
    call: right after a switch the other side's threads may still be spinning."""
    times: tuple[list, list] = ([], [])
    for _ in range(repeat):
        for fn, out_times in ((f_eagle, times[0]), (f_jax, times[1])):
            jax.block_until_ready(fn(*args))
            t0 = time.perf_counter()
            for _ in range(number):
                out = fn(*args)
            jax.block_until_ready(out)
            out_times.append((time.perf_counter() - t0) / number)
    return min(times[0]), min(times[1])


def main() -> None:
    rows = []

    # --- one drag step at N = 2^20
    n = 1 << 20
    v = 5.0 * jax.random.normal(jax.random.key(0), (3, n))
    step = eagle_jax.function(drag_step, wrt=("v", "cd"))
    e = jax.jit(lambda v, cd: step(v, cd, 0.01, 9.81))
    j = jax.jit(lambda v, cd: jnp_drag(v, cd, 0.01, 9.81))
    assert jnp.allclose(e(v, 0.1), j(v, 0.1), rtol=1e-12)
    rows.append(("drag step, N=2^20", *side_by_side(e, j, v, 0.1, repeat=25), 1.0))

    # --- lax.scan of 360 flight steps at N = 256 (page 002)
    N, STEPS, DT, G, CD = 256, 360, 0.02, 9.81, 0.004
    k = jax.random.split(jax.random.key(0), 3)
    speed = 20 + 20 * jax.random.uniform(k[0], (N,))
    elevation = jnp.radians(20) + jnp.radians(50) * jax.random.uniform(k[1], (N,))
    heading = 2 * jnp.pi * jax.random.uniform(k[2], (N,))
    v0 = jnp.stack([speed * jnp.cos(elevation) * jnp.cos(heading),
                    speed * jnp.cos(elevation) * jnp.sin(heading),
                    speed * jnp.sin(elevation)])
    r0 = jnp.zeros((3, N)).at[2].set(1.0)
    fstep = eagle_jax.function(flight, wrt=("r", "v", "cd"))

    def make(s):
        def body(carry, _, cd):
            r, v, landed = carry
            rn, vn, ln = s(r, v, cd, DT, G, landed)
            rn, vn = jnp.where(landed, r, rn), jnp.where(landed, v, vn)
            return (rn, vn, ln), ln.sum()

        def fly(cd):
            return jax.lax.scan(lambda c, x: body(c, x, cd), (r0, v0, jnp.zeros(N, dtype=bool)), None, length=STEPS)

        def mean_range(cd):
            (r, _, _), _ = fly(cd)
            return jnp.hypot(r[0], r[1]).mean()

        return jax.jit(fly), jax.jit(jax.value_and_grad(mean_range))

    fly_e, grad_e = make(fstep)
    fly_j, grad_j = make(jnp_flight)
    (re_, _, le), ce = fly_e(CD)
    (rj, _, lj), cj = fly_j(CD)
    assert (ce == cj).all() and jnp.allclose(re_, rj, rtol=1e-9)
    ge, gj = grad_e(CD), grad_j(CD)
    assert jnp.allclose(ge[0], gj[0], rtol=1e-9) and jnp.allclose(ge[1], gj[1], rtol=1e-8), (ge, gj)
    rows.append(("scan 360 flight steps, N=256", *side_by_side(fly_e, fly_j, CD, repeat=40, number=5), 1.5))
    rows.append(("grad through the scan, N=256", *side_by_side(grad_e, grad_j, CD, repeat=40, number=3), 1.5))
    # The floor: a step with no real arithmetic through the bridge, against the same plain-JAX
    # flight step. What it costs is XLA running a loop body with a custom call thunk by thunk.
    fly_c, grad_c = make(eagle_jax.function(coast, wrt=("r", "v", "cd")))
    rows.append(("  floor: scan, no-arithmetic step", *side_by_side(fly_c, fly_j, CD, repeat=40, number=5), None))
    rows.append(("  floor: grad through the scan", *side_by_side(grad_c, grad_j, CD, repeat=40, number=3), None))

    print(f"jax {jax.__version__}, backend {jax.default_backend()}, float64; best of several runs")
    print(f"{'case':<32}{'eagle (ms)':>12}{'jax.numpy (ms)':>16}{'ratio':>8}{'target':>9}  ok")
    for name, te, tj, target in rows:
        ratio = te / tj
        if target is None:
            print(f"{name:<32}{te * 1e3:>12.3f}{tj * 1e3:>16.3f}{ratio:>8.2f}{'-':>9}")
            continue
        print(f"{name:<32}{te * 1e3:>12.3f}{tj * 1e3:>16.3f}{ratio:>8.2f}{'<= ' + format(target, '.1f'):>9}  {'yes' if ratio <= target else 'NO'}")


if __name__ == "__main__":
    main()
