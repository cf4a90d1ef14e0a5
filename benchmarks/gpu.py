"""GPU benchmark (device only), each figure next to its baseline, in one run:

1. the drag step at N = 2^24, float32 and float64, as a fraction of the device's copy
   bandwidth (a CuPy device-to-device copy of the same bytes: the drag step reads and writes
   3 N values, as the copy does);
2. 10^6 oscillators stepped until each stops: eagle on the GPU against JAX's lax.while_loop on
   the same GPU (eagle: ``until_done`` when it runs on the device, else a captured graph
   launched in chunks of 50 steps with a check of the mask between chunks);
3. the launch cost per node of a captured graph of 8 small kernels (N = 256);
4. page 002's 360-step lax.scan at N = 256 through the JAX CUDA handler against the same scan
   in plain jax.numpy.

    python benchmarks/gpu.py        # exits with a message when there is no CUDA device

Times are medians of repeated runs measured with CUDA events (CuPy) or block_until_ready
(JAX); compile and capture happen before anything is timed, and results are checked first.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np

import eagle
import eagle.cuda
import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar

from kernels import drag_step, flight, osc

REASON = eagle.cuda.unusable_reason()
if REASON is not None:
    print(f"benchmarks/gpu.py: no CUDA device ({REASON})")
    sys.exit(0 if os.environ.get("GPU_BENCH_OPTIONAL") else 1)

import cupy as cp  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)
CACHE = tempfile.mkdtemp(prefix="raptor-gpu-bench-")


def device_ms(fn, repeat: int = 20) -> float:
    """Median device time of fn() in milliseconds (CUDA events on CuPy's current stream)."""
    fn()
    cp.cuda.get_current_stream().synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def wall_ms(fn, repeat: int = 10) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times))


def row(what: str, value: str, baseline: str) -> None:
    print(f"{what:<46} {value:>18}   {baseline}")


def drag_bandwidth() -> None:
    n = 1 << 24
    (plan,) = eagle.plan.auto([drag_step], targets=("cuda",), cache_dir=CACHE)
    for dtype in (np.float32, np.float64):
        v = cp.random.standard_normal((3, n)).astype(dtype)
        out = cp.empty_like(v)
        b = plan.bind(v=v, cd=0.1, dt=0.01, g=9.81, v_next=out)
        b.launch()
        b.synchronize()
        host = np.zeros((3, 4096), dtype)
        (hplan,) = eagle.plan.auto([drag_step], cache_dir=CACHE)
        hplan.bind(v=cp.asnumpy(v[:, :4096]).copy(), cd=0.1, dt=0.01, g=9.81, v_next=host).launch()
        np.testing.assert_allclose(cp.asnumpy(out[:, :4096]), host, rtol=1e-5 if dtype == np.float32 else 1e-13)
        t_drag = device_ms(b.launch)
        dst = cp.empty_like(v)
        t_copy = device_ms(lambda: dst.__setitem__(Ellipsis, v))
        moved = 2 * v.nbytes
        row(f"drag step N=2^24 {np.dtype(dtype).name}", f"{moved / t_drag / 1e6:.0f} GB/s", f"copy {moved / t_copy / 1e6:.0f} GB/s: {t_copy / t_drag:.0%} of copy bandwidth")


def oscillators() -> None:
    n, dt, c = 1_000_000, 0.01, 0.3
    (plan,) = eagle.plan.auto([osc], targets=("cuda",), cache_dir=CACHE)
    t_final = np.linspace(0.5, 2.0, n)

    def fresh():
        return dict(x=cp.ones(n), v=cp.zeros(n), t=cp.zeros(n), corr=cp.zeros(n), t_final=cp.asarray(t_final), terminated=cp.zeros(n, bool))

    def run_eagle():
        p = fresh()
        try:
            report = eagle.until_done([plan], max_steps=400, dt=dt, c=c, **p).run()
            assert report.done
        except (ValueError, TypeError, NotImplementedError, eagle.ModeError):
            g = eagle.Graph().add(plan.bind(dt=dt, c=c, **p)).build()
            for _ in range(8):
                g.launch(50)
                g.synchronize()
                if bool(p["terminated"].all()):
                    break
        cp.cuda.get_current_stream().synchronize()
        return p

    @jax.jit
    def jax_loop(x, v, t, tf):
        def cond(s):
            return ~jnp.all(s[3])

        def body(s):
            x, v, t, done = s
            vn = v + dt * (-x - c * v)
            xn, tn = x + dt * v, t + dt
            return (jnp.where(done, x, xn), jnp.where(done, v, vn), jnp.where(done, t, tn), done | (tn >= tf))

        return jax.lax.while_loop(cond, body, (x, v, t, jnp.zeros(n, bool)))

    args = (jnp.ones(n), jnp.zeros(n), jnp.zeros(n), jnp.asarray(t_final))
    ref = jax_loop(*args)
    got = run_eagle()
    np.testing.assert_allclose(cp.asnumpy(got["x"]), np.asarray(ref[0]), rtol=1e-12, atol=1e-12)
    t_e = wall_ms(run_eagle, 5)
    t_j = wall_ms(lambda: jax.block_until_ready(jax_loop(*args)), 5)
    row("until done, 10^6 oscillators", f"{t_e:.2f} ms", f"lax.while_loop {t_j:.2f} ms: eagle {t_j / t_e:.1f}x")


@hawk.kernel
def tiny(a: Param, x: Mutable[Scalar]):
    x = a * x + 1.0


def launch_cost() -> None:
    (plan,) = eagle.plan.auto([tiny], targets=("cuda",), cache_dir=CACHE)
    xs = [cp.zeros(256) for _ in range(8)]
    g = eagle.Graph()
    for i, x in enumerate(xs):
        g.add(plan.bind(a=0.5, x=x), name=f"n{i}")
    built = g.build()
    assert built.schedule == ("capture",)
    built.launch(10)
    built.synchronize()
    launches = 2000
    t = device_ms(lambda: built.launch(launches), 5)
    single = plan.bind(a=0.5, x=cp.zeros(256))
    t_single = device_ms(lambda: [single.launch() for _ in range(launches)], 5)
    row("graph.launch per node (8 nodes, N=256)", f"{t / launches / 8 * 1e3:.2f} us", f"bound.launch one by one {t_single / launches * 1e3:.2f} us")


def page_002_scan() -> None:
    from eagle.frameworks import jax as eagle_jax

    n, steps, dt, g, cd = 256, 360, 0.02, 9.81, 0.004
    step = eagle_jax.function(flight, wrt=("r", "v", "cd"))
    k = jax.random.split(jax.random.key(0), 3)
    speed = 20 + 20 * jax.random.uniform(k[0], (n,))
    elev = jnp.radians(20) + jnp.radians(50) * jax.random.uniform(k[1], (n,))
    head = 2 * jnp.pi * jax.random.uniform(k[2], (n,))
    v0 = jnp.stack([speed * jnp.cos(elev) * jnp.cos(head), speed * jnp.cos(elev) * jnp.sin(head), speed * jnp.sin(elev)])
    r0 = jnp.zeros((3, n)).at[2].set(1.0)

    def body_eagle(carry, _):
        r, v, landed = carry
        rn, vn, ln = step(r, v, cd, dt, g, landed)
        return (jnp.where(landed, r, rn), jnp.where(landed, v, vn), ln), None

    def body_jax(carry, _):
        r, v, landed = carry
        a = jnp.stack([jnp.zeros(n), jnp.zeros(n), -g * jnp.ones(n)]) - cd * jnp.linalg.norm(v, axis=0) * v
        vn = v + dt * a
        rn = r + dt * vn
        return (jnp.where(landed, r, rn), jnp.where(landed, v, vn), landed | (rn[2] < 0.0)), None

    fly_e = jax.jit(lambda r, v: jax.lax.scan(body_eagle, (r, v, jnp.zeros(n, bool)), None, length=steps)[0])
    fly_j = jax.jit(lambda r, v: jax.lax.scan(body_jax, (r, v, jnp.zeros(n, bool)), None, length=steps)[0])
    re, rj = fly_e(r0, v0), fly_j(r0, v0)
    np.testing.assert_allclose(np.asarray(re[0]), np.asarray(rj[0]), rtol=1e-9, atol=1e-9)
    t_e = wall_ms(lambda: jax.block_until_ready(fly_e(r0, v0)))
    t_j = wall_ms(lambda: jax.block_until_ready(fly_j(r0, v0)))
    row("page 002 scan, 360 steps, N=256", f"{t_e:.2f} ms", f"plain JAX {t_j:.2f} ms: eagle {t_j / t_e:.2f}x")


def main() -> None:
    d = eagle.cuda.probe()["devices"][0]
    print(f"benchmarks/gpu.py on {d['name']} ({d['arch']}), JAX {jax.__version__} {jax.default_backend()}, CuPy {cp.__version__}")
    print(f"{'what':<46} {'eagle':>18}   baseline")
    for bench in (drag_bandwidth, oscillators, launch_cost, page_002_scan):
        try:
            bench()
        except Exception as err:  # one failing figure does not hide the others
            row(bench.__name__, "FAILED", f"{type(err).__name__}: {err}")
            global FAILED
            FAILED = True


FAILED = False

if __name__ == "__main__":
    main()
    sys.exit(1 if FAILED else 0)
