"""JAX bridge benchmark: a hawk kernel called through eagle.frameworks.jax, side by side in one
process with the same step written in jax.numpy, both under jax.jit, on the CPU.

    python benchmarks/jax_bridge.py              # prints a table of times and ratios
    python benchmarks/jax_bridge.py --crossover  # "ffi" against "xla" over N: the threshold
                                                 # of lowering="auto", benchmarks/out/jax_crossover.png
    python benchmarks/jax_bridge.py --copies     # in-out planes on "ffi": aliased only where
                                                 # the update can be in place (docs/jax.md)

Cases (float64):
  drag step        one drag step (3-vector, norm, Params) at N = 2^20
  scan 360         lax.scan of 360 steps of the flight kernel of the user's page 002
                   (a stepping kernel with a Terminated mask) at N = 256
  grad scan 360    value_and_grad of the mean range through that scan, w.r.t. cd
  floor rows       the same two scans with a kernel that does almost no arithmetic (`coast`),
                   against the same plain-JAX flight step: what the bridge costs per step
                   whatever the kernel does (docs/jax.md, "Performance")

Each case runs with lowering="ffi" (the C++ custom call) and lowering="xla" (the kernel's IR as
XLA's own operations); "jacfwd scan 360" is jacfwd through a 360-step scan of the drag step.

Targets: SPEC §3 for "ffi" (drag step at least as fast as XLA, ratio <= 1.0; scan and grad
through scan within 1.5x of plain JAX); issue 12 for "xla" (flight scan <= 1.1x, grad <= 1.15x,
jacfwd through the scan <= 1.15x) and the drag step at N = 2^20 <= 0.5x with "ffi". Times are the best of several runs, each ended
by block_until_ready, in rounds that alternate the two sides; compile time is excluded (one
warm-up call each).
"""

from __future__ import annotations

import os
import sys
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


def flight_cases(lowering: str) -> tuple:
    """The jitted flight scan and its value_and_grad (page 002) for one lowering, and plain JAX's."""
    N, STEPS, DT, G = 256, 360, 0.02, 9.81
    k = jax.random.split(jax.random.key(0), 3)
    speed = 20 + 20 * jax.random.uniform(k[0], (N,))
    elevation = jnp.radians(20) + jnp.radians(50) * jax.random.uniform(k[1], (N,))
    heading = 2 * jnp.pi * jax.random.uniform(k[2], (N,))
    v0 = jnp.stack([speed * jnp.cos(elevation) * jnp.cos(heading),
                    speed * jnp.cos(elevation) * jnp.sin(heading),
                    speed * jnp.sin(elevation)])
    r0 = jnp.zeros((3, N)).at[2].set(1.0)

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

    return make(eagle_jax.function(flight, wrt=("r", "v", "cd"), lowering=lowering)), make(jnp_flight), make


def drag_jacfwd(step, n: int = 64, steps: int = 360):
    """jacfwd of the final velocities through a `steps`-step scan of the drag step, w.r.t. cd."""
    v0 = 5.0 * jax.random.normal(jax.random.key(1), (3, n))

    def final(cd):
        return jax.lax.scan(lambda v, _: (step(v, cd, 0.01, 9.81), None), v0, None, length=steps)[0]

    return jax.jit(jax.jacfwd(final))


def main() -> None:
    rows = []
    CD = 0.004
    n = 1 << 20
    v = 5.0 * jax.random.normal(jax.random.key(0), (3, n))
    j = jax.jit(lambda v, cd: jnp_drag(v, cd, 0.01, 9.81))
    _, (fly_j, grad_j), make = flight_cases("ffi")
    jac_j = drag_jacfwd(jnp_drag)
    for lowering in ("ffi", "xla"):
        # --- one drag step at N = 2^20
        step = eagle_jax.function(drag_step, wrt=("v", "cd"), lowering=lowering)
        e = jax.jit(lambda v, cd, step=step: step(v, cd, 0.01, 9.81))
        assert jnp.allclose(e(v, 0.1), j(v, 0.1), rtol=1e-12)
        rows.append((f"{lowering}: drag step, N=2^20", *side_by_side(e, j, v, 0.1, repeat=25), 0.5 if lowering == "ffi" else None))

        # --- lax.scan of 360 flight steps at N = 256 (page 002), and grad through it
        (fly_e, grad_e), _, _ = flight_cases(lowering)
        (re_, _, le), ce = fly_e(CD)
        (rj, _, lj), cj = fly_j(CD)
        assert (ce == cj).all() and jnp.allclose(re_, rj, rtol=1e-9)
        ge, gj = grad_e(CD), grad_j(CD)
        assert jnp.allclose(ge[0], gj[0], rtol=1e-9) and jnp.allclose(ge[1], gj[1], rtol=1e-8), (ge, gj)
        rows.append((f"{lowering}: scan 360 flight, N=256", *side_by_side(fly_e, fly_j, CD, repeat=40, number=5), 1.5 if lowering == "ffi" else 1.1))
        rows.append((f"{lowering}: grad through the scan", *side_by_side(grad_e, grad_j, CD, repeat=40, number=3), 1.5 if lowering == "ffi" else 1.15))
        jac_e = drag_jacfwd(step)
        assert jnp.allclose(jac_e(0.07), jac_j(0.07), rtol=1e-8, atol=1e-10)
        rows.append((f"{lowering}: jacfwd scan 360 drag", *side_by_side(jac_e, jac_j, 0.07, repeat=20, number=2), None if lowering == "ffi" else 1.15))
        if lowering == "ffi":
            # The floor: a step with no real arithmetic through the custom call, against the
            # same plain-JAX flight step: XLA running a loop body with a custom call thunk by thunk.
            fly_c, grad_c = make(eagle_jax.function(coast, wrt=("r", "v", "cd"), lowering="ffi"))
            rows.append(("  floor: scan, no-arithmetic step", *side_by_side(fly_c, fly_j, CD, repeat=40, number=5), None))
            rows.append(("  floor: grad through the scan", *side_by_side(grad_c, grad_j, CD, repeat=40, number=3), None))

    print(f"jax {jax.__version__}, backend {jax.default_backend()}, float64; best of several runs, rounds alternating")
    print(f"{'case':<36}{'eagle (ms)':>12}{'jax.numpy (ms)':>16}{'ratio':>8}{'target':>10}  ok")
    for name, te, tj, target in rows:
        ratio = te / tj
        if target is None:
            print(f"{name:<36}{te * 1e3:>12.3f}{tj * 1e3:>16.3f}{ratio:>8.2f}{'-':>10}")
            continue
        print(f"{name:<36}{te * 1e3:>12.3f}{tj * 1e3:>16.3f}{ratio:>8.2f}{'<= ' + format(target, '.2f'):>10}  {'yes' if ratio <= target else 'NO'}")


def crossover(png: str = os.path.join(os.path.dirname(__file__), "out", "jax_crossover.png")) -> None:
    """The drag step with lowering="ffi" against "xla" for N = 2^6 .. 2^20, rounds alternating
    in this process, in two settings: one jitted call, and a jitted lax.scan of 50 steps (what
    XLA can fuse: the loop body). Where "xla" stops winning in the scan is the threshold of
    "auto" (_jax_lowering.XLA_MAX_WORK). Prints the ratios and writes a PNG plot."""
    ffi = eagle_jax.function(drag_step, lowering="ffi")
    xla = eagle_jax.function(drag_step, lowering="xla")
    SCAN = 50

    def one(step):
        return jax.jit(lambda v, cd: step(v, cd, 0.01, 9.81))

    def scanned(step):
        return jax.jit(lambda v, cd: jax.lax.scan(lambda v, _: (step(v, cd, 0.01, 9.81), None), v, None, length=SCAN)[0])

    cases = {"one call": (one(ffi), one(xla)), f"scan of {SCAN} steps": (scanned(ffi), scanned(xla))}
    ns = [1 << p for p in (6, 7, 8, 9, 10, 11, 12, 14, 16, 18, 20)]
    times: dict[str, tuple[list, list]] = {k: ([], []) for k in cases}
    print(f"jax {jax.__version__}, drag step, float64; best of alternating rounds")
    print(f"{'N':>9}{'case':>20}{'ffi (us)':>12}{'xla (us)':>12}{'xla/ffi':>9}")
    for n in ns:
        v = 5.0 * jax.random.normal(jax.random.key(n), (3, n))
        for name, (e, x) in cases.items():
            assert jnp.allclose(e(v, 0.1), x(v, 0.1), rtol=1e-12)
            per = SCAN if name != "one call" else 1
            number = max(1, (1 << 17) // (n * per))
            tf, tx = side_by_side(e, x, v, 0.1, repeat=9 if n < (1 << 18) else 5, number=number)
            times[name][0].append(tf * 1e6 / per)
            times[name][1].append(tx * 1e6 / per)
            print(f"{n:>9}{name:>20}{tf * 1e6 / per:>12.2f}{tx * 1e6 / per:>12.2f}{tx / tf:>9.2f}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from eagle.frameworks._jax_lowering import XLA_MAX_WORK

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for name, (tf, tx) in times.items():
        a.loglog(ns, tf, "o-", label=f'ffi, {name}')
        a.loglog(ns, tx, "s--", label=f'xla, {name}')
        b.semilogx(ns, [x / f for x, f in zip(tx, tf)], "o-", label=name)
    a.set_xlabel("N (samples)")
    a.set_ylabel("time per step (us)")
    a.legend(fontsize=8)
    a.set_title("drag step, per step")
    b.axhline(1.0, color="gray", lw=0.8)
    b.axvline(XLA_MAX_WORK, color="red", lw=0.8, ls="--", label=f"auto: xla up to N x steps = {XLA_MAX_WORK}")
    b.set_xlabel("N (samples)")
    b.set_ylabel("xla time / ffi time (below 1: xla wins)")
    b.legend(fontsize=8)
    fig.suptitle(f"jax {jax.__version__}, 2-core CPU shared with other jobs (heavily loaded while measured)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(png), exist_ok=True)
    fig.savefig(png, dpi=90)
    print("wrote", os.path.normpath(png))


def copies() -> None:
    """The oscillator step of benchmarks/peers.py (three in-out planes and a mask) on "ffi",
    with the aliases the bridge declares (only where the update can be in place:
    eagle/frameworks/_jax_aliases.py) against every in-out plane aliased (what the bridge did
    before), and against jax.numpy, rounds alternating in this process: one call under jit,
    the same call with the in-out planes donated, and one step of a 20-step lax.scan. Prints
    microseconds per step."""
    from contextlib import contextmanager

    from _peers.cases import OSC_C, OSC_DT, make_inputs
    from _peers.jax_side import _jnp_step
    from eagle.frameworks import _jax_aliases
    from kernels import osc

    names = ("t_final", "corr", "terminated", "x", "v", "t")
    kernel = eagle_jax.function(osc, lowering="ffi")
    steps = 20

    @contextmanager
    def every_alias():  # the old policy, for the lowering of the functions made under it
        kept = _jax_aliases.kept_aliases
        _jax_aliases.kept_aliases = lambda operands, aliases: dict(aliases)
        try:
            yield
        finally:
            _jax_aliases.kept_aliases = kept

    def settings(step):
        def body(c, _):
            tf, corr, term, x, v, t = c
            x, v, t, term = step(tf, corr, term, x, v, t)
            return (tf, corr, term, x, v, t), None
        return {"one call": jax.jit(step), "donated": jax.jit(step, donate_argnums=(2, 3, 4, 5)),
                f"scan of {steps}": jax.jit(lambda *a: jax.lax.scan(body, a, None, length=steps)[0])}

    def ffi_step():  # a new function each time: jit caches its compilations per function
        return lambda *a: kernel(OSC_DT, OSC_C, *a)

    sides = {"ffi": settings(ffi_step()), "ffi, every alias": settings(ffi_step()), "jax.numpy": settings(_jnp_step("osc"))}
    print(f"jax {jax.__version__}, oscillator step, float64; best of alternating rounds, us per step")
    print(f"{'N':>8}{'setting':>14}" + "".join(f"{k:>18}" for k in sides) + f"{'every alias/ffi':>17}")
    for p in (12, 14, 16, 18):
        n = 1 << p
        inputs = make_inputs("osc", n, "float64")
        base = [jnp.asarray(inputs[k]) for k in names]
        for setting in sides["ffi"]:
            per = steps if setting.startswith("scan") else 1
            number = max(2, (1 << 19) // (n * per))
            best = {}
            for _ in range(9):
                for side, fns in sides.items():
                    fn = fns[setting]
                    if side.endswith("every alias") and side not in best:
                        with every_alias():  # compiled (lowered) on this first call
                            jax.block_until_ready(fn(*[a.copy() for a in base]))
                    args = [a.copy() for a in base]
                    out = fn(*args)  # warm-up (compiles once); donated: args are gone
                    args = [a.copy() for a in base]
                    jax.block_until_ready(args)
                    t0 = time.perf_counter()
                    for _ in range(number):
                        out = fn(*args)
                        if setting == "donated":  # feed the results back: the next call donates them
                            args = [args[0], args[1], out[3], out[0], out[1], out[2]]
                    jax.block_until_ready(out)
                    best[side] = min(best.get(side, 1e9), (time.perf_counter() - t0) / number / per * 1e6)
            ratio = best["ffi, every alias"] / best["ffi"]
            print(f"{'2^' + str(p):>8}{setting:>14}" + "".join(f"{best[k]:>18.1f}" for k in sides) + f"{ratio:>17.2f}")


if __name__ == "__main__":
    if "--crossover" in sys.argv[1:]:
        crossover()
    elif "--copies" in sys.argv[1:]:
        copies()
    else:
        main()
