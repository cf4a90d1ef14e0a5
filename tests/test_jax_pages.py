"""The user's JAX pages, cell by cell (docs/jax.md; /work/shared/seeds/001 sections 1-5 and 002).

Each page is a notebook: its cells run in order in one namespace, exactly as printed, and
each cell's printed lines (and, as in a notebook, the repr of a last expression that is not
None) are compared with the lines the page shows. A cell is registered
in ``linecache`` before it runs (as IPython does) so that ``@hawk.kernel`` finds its source.
The page's GPU-only cell (001 §4, the stream check) prints its CPU line here.
"""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from conftest import Page  # noqa: E402


# ------------------------------------------------------------------------------------------------
# page 001: eagle inside your JAX program, sections 1 to 5 (cells as printed)

P001 = [
    # 0: §1 your program as it is
    '''
    import os

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave GPU memory for your other libraries
    try:  # CUDA 13: CuPy loads NVRTC before JAX does (see Limits)
        import cupy
        cupy.cuda.nvrtc.getVersion()
    except Exception:  # no CuPy or no CUDA here
        pass
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # the kernel runs in float64 (see Limits for float32)

    N, STEPS, DT, G = 256, 20, 0.05, 9.81
    v0 = 5.0 * jax.random.normal(jax.random.key(0), (3, N))


    def jax_step(v, cd, dt, g):
        a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -g])[:, None]
        return v + dt * a


    def rollout(step, cd):
        v = v0
        for _ in range(STEPS):
            v = step(v, cd, DT, G)
        return v


    target = rollout(jax_step, 0.07)


    def fit(step):
        loss = lambda cd: ((rollout(step, cd) - target) ** 2).mean()

        @jax.jit
        def train_step(cd):
            value, grad = jax.value_and_grad(loss)(cd)
            return cd - 2e-4 * grad, value

        cd, losses = 0.01, []
        for _ in range(60):
            cd, value = train_step(cd)
            losses.append(float(value))
        return float(cd), losses


    cd_jax, losses_jax = fit(jax_step)
    print(f"jax step:   cd = {cd_jax:.6f}, loss {losses_jax[0]:.4f} -> {losses_jax[-1]:.2e}")
    ''',
    # 1: §2 the kernel
    '''
    import hawk
    from hawk import Mutable, Param, Vector
    from hawk.math import norm, vec


    @hawk.kernel
    def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
        a = vec(0.0, 0.0, -g) - cd * norm(v) * v
        v_next = v + dt * a
    ''',
    # 2: §2 the one changed line
    '''
    from eagle.frameworks import jax as eagle_jax

    step = eagle_jax.function(drag_step, wrt=("v", "cd"))  # the one changed line

    cd_eagle, losses_eagle = fit(step)
    print(f"eagle step: cd = {cd_eagle:.6f}, loss {losses_eagle[0]:.4f} -> {losses_eagle[-1]:.2e}")
    assert abs(cd_eagle - cd_jax) < 1e-9 and abs(losses_eagle[-1] - losses_jax[-1]) < 1e-9
    print("same numbers as the jax step")
    ''',
    # 3: §3 transformations
    '''
    def loss_of(s):
        return lambda cd: ((rollout(s, cd) - target) ** 2).mean()


    def scanned(s):
        return lambda cd: jax.lax.scan(lambda v, _: (s(v, cd, DT, G), None), v0, None, length=STEPS)[0]


    cds = jnp.linspace(0.02, 0.1, 5)
    for name, make in {
        "jit(grad)": lambda s: jax.jit(jax.grad(loss_of(s))),
        "vmap(grad)": lambda s: jax.vmap(jax.grad(loss_of(s))),
        "lax.scan": scanned,
    }.items():
        arg = cds if name == "vmap(grad)" else 0.05
        assert jnp.allclose(make(step)(arg), make(jax_step)(arg), rtol=1e-9, atol=1e-12)
        print(f"{name:<11} matches the jax step")
    ''',
    # 4: §3 jacobians and the hessian
    '''
    final = lambda s: (lambda cd: rollout(s, cd)[:, 0])  # the first ball's final velocity
    for name, transform in {"jacfwd": jax.jacfwd, "jacrev": jax.jacrev}.items():
        assert jnp.allclose(transform(final(step))(0.05), transform(final(jax_step))(0.05), rtol=1e-9)
        print(f"{name:<8} d velocity / d cd =", jnp.round(transform(final(step))(0.05), 4))
    h_eagle, h_jax = jax.hessian(loss_of(step))(0.05), jax.hessian(loss_of(jax_step))(0.05)
    assert jnp.allclose(h_eagle, h_jax, rtol=1e-9)
    print(f"hessian  d2 loss / d cd2 = {h_eagle:.4f} (jax step: {h_jax:.4f})")
    ''',
    # 5: §4 what crosses, and who owns it
    '''
    from hawk import Terminated


    @hawk.kernel(steps=1)
    def land(r: Vector[3], terminated: Terminated, r_next: Mutable[Vector[3]]):
        r_next = r - vec(0.0, 0.0, 1.0)
        terminated = r_next[2] < 0.0


    landing = eagle_jax.function(land, wrt=())
    r = jnp.stack([jnp.zeros(8), jnp.zeros(8), jnp.arange(8.0) / 2])
    done = jnp.zeros(8, dtype=bool)
    r_in, done_in = jnp.array(r), jnp.array(done)

    step_land = jax.jit(landing, donate_argnums=1)
    mask_ptr = done.unsafe_buffer_pointer()
    r_next, done_next = step_land(r, done)
    print("result is a jax.Array:", isinstance(r_next, jax.Array), r_next.dtype, "| input untouched:", bool((r == r_in).all()))
    print("mask updated in place:", done_next.unsafe_buffer_pointer() == mask_ptr, "| samples landed:", int(done_next.sum()))
    ''',
    # 6: §4 the stream cell (GPU-only; its CPU line here)
    '''
    import time

    if jax.default_backend() == "gpu":
        a = jnp.ones((4096, 4096), dtype=jnp.float32)

        def heavy_then_step(a, v):
            for _ in range(6):
                a = a @ a / 4096.0
            return step(v * a[0, 0], 0.05, DT, G)  # a[0, 0] is 1.0 after the products

        run = jax.jit(heavy_then_step)
        run(a, v0).block_until_ready()  # compile once
        t0 = time.perf_counter()
        out = run(a, v0)
        t_dispatch = time.perf_counter() - t0
        out.block_until_ready()
        t_total = time.perf_counter() - t0
        assert t_dispatch < 0.2 * t_total and jnp.allclose(out, jax_step(v0, 0.05, DT, G))
        print("the call returned before the GPU finished; the result is still right")
    else:
        print("this JAX has no CUDA device: the stream check runs on a CUDA build")
    ''',
    # 7: §5 what is refused
    '''
    def refused(label, call):
        try:
            call()
        except Exception as err:
            msg = str(err).splitlines()[0]
            print(f"{label}: {type(err).__name__}: {msg if len(msg) <= 150 else msg[:147] + '...'}")


    refused("mixed dtypes", lambda: step(v0, jnp.ones(1, dtype=jnp.float32), DT, G))
    refused("integer plane", lambda: step(v0.astype(int), 0.05, DT, G))
    refused("wrong shape", lambda: step(v0[:2], 0.05, DT, G))
    refused("missing input", lambda: step(v0, 0.05, DT))
    refused("not an input", lambda: step(v0, 0.05, DT, G, drag=1.0))
    ''',
]


@pytest.fixture(scope="module")
def p001():
    return Page("page001", P001)


def test_001_s1_plain_jax_program(p001):
    assert p001.run(0) == ["jax step:   cd = 0.070000, loss 5.1412 -> 1.60e-15"]


def test_001_s2_kernel_defines(p001):
    assert p001.run(1) == []
    assert type(p001.ns["drag_step"]).__name__ == "Kernel"


def test_001_s2_one_changed_line(p001):
    assert p001.run(2) == [
        "eagle step: cd = 0.070000, loss 5.1412 -> 1.60e-15",
        "same numbers as the jax step",
    ]
    assert repr(p001.ns["step"]) == (
        "KernelFunction('drag_step', inputs=['v', 'cd', 'dt', 'g'], outputs=['v_next'], wrt=['v', 'cd'])"
    )


def test_001_s3_transformations(p001):
    assert p001.run(3) == [
        "jit(grad)   matches the jax step",
        "vmap(grad)  matches the jax step",
        "lax.scan    matches the jax step",
    ]


def test_001_s3_jacobians_and_hessian(p001):
    assert p001.run(4) == [
        "jacfwd   d velocity / d cd = [ 5.5486 55.3816 64.3769]",
        "jacrev   d velocity / d cd = [ 5.5486 55.3816 64.3769]",
        "hessian  d2 loss / d cd2 = 2351.1435 (jax step: 2351.1435)",
    ]


def test_001_s4_what_crosses(p001):
    assert p001.run(5) == [
        "result is a jax.Array: True float64 | input untouched: True",
        "mask updated in place: True | samples landed: 2",
    ]


def test_001_s4_stream_cell(p001):
    lines = p001.run(6)
    if jax.default_backend() == "gpu":
        assert lines == ["the call returned before the GPU finished; the result is still right"]
    else:
        assert lines == ["this JAX has no CUDA device: the stream check runs on a CUDA build"]


def test_001_s5_refusals(p001):
    assert p001.run(7) == [
        "mixed dtypes: ModeError: eagle.frameworks.jax drag_step: mixed floating dtypes in one call "
        "(plane 'cd' is float32, the first plane is float64); pass every plane in one floa...",
        "integer plane: ModeError: eagle.frameworks.jax drag_step: plane 'v' is int64, which is not "
        "supported; a kernel runs float32 or float64 planes",
        "wrong shape: ValueError: eagle.frameworks.jax: drag_step: input 'v' must have shape (3, 256) "
        "for n=256, got (2, 256)",
        "missing input: TypeError: drag_step: missing input(s) ['g']",
        "not an input: TypeError: drag_step: 'drag' is not an input (inputs: ['v', 'cd', 'dt', 'g'])",
    ]


# ------------------------------------------------------------------------------------------------
# page 002: a stepping loop in lax.scan (the whole page)

P002 = [
    # 0: a kernel that finishes its own samples
    '''
    import os
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave GPU memory for your other libraries
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)  # the kernel runs in float64
    import hawk
    from hawk import Mutable, Param, Terminated, Vector
    from hawk.math import norm, vec
    from eagle.frameworks import jax as eagle_jax
    @hawk.kernel(steps=1)
    def flight(r: Vector[3], v: Vector[3], cd: Param, dt: Param, g: Param, terminated: Terminated,
               r_next: Mutable[Vector[3]], v_next: Mutable[Vector[3]]):
        a = vec(0.0, 0.0, -g) - cd * norm(v) * v
        v_new = v + dt * a
        v_next = v_new
        r_next = r + dt * v_new
        terminated = r_next[2] < 0.0
    step = eagle_jax.function(flight, wrt=("r", "v", "cd"))
    step
    ''',
    # 1: scan the flight
    '''
    N, STEPS, DT, G, CD = 256, 360, 0.02, 9.81, 0.004
    k = jax.random.split(jax.random.key(0), 3)
    speed = 20 + 20 * jax.random.uniform(k[0], (N,))
    elevation = jnp.radians(20) + jnp.radians(50) * jax.random.uniform(k[1], (N,))
    heading = 2 * jnp.pi * jax.random.uniform(k[2], (N,))
    v0 = jnp.stack([speed * jnp.cos(elevation) * jnp.cos(heading),
                    speed * jnp.cos(elevation) * jnp.sin(heading),
                    speed * jnp.sin(elevation)])
    r0 = jnp.zeros((3, N)).at[2].set(1.0)
    def body(carry, _, cd=CD):
        r, v, landed = carry
        r_next, v_next, landed_next = step(r, v, cd, DT, G, landed)
        r_next, v_next = jnp.where(landed, r, r_next), jnp.where(landed, v, v_next)
        return (r_next, v_next, landed_next), (r_next, landed_next.sum())
    @jax.jit
    def fly(r, v, landed):
        return jax.lax.scan(body, (r, v, landed), None, length=STEPS)
    (r, v, landed), (path, count) = fly(r0, v0, jnp.zeros(N, dtype=bool))
    print("landed after", STEPS, "steps:", int(landed.sum()), "of", N)
    print("landed after every 60th step:", count[59::60].tolist())
    ''',
    # 2: the figure
    '''
    import matplotlib.pyplot as plt
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9, 3.4))
    for i, colour in zip(range(12), plt.cm.viridis([j / 11 for j in range(12)])):
        ax.plot(path[:, 0, i], path[:, 2, i], color=colour, lw=1.2)
    ax.set(xlabel="x (m)", ylabel="height (m)", title="12 of the 256 balls")
    bx.plot(jnp.arange(1, STEPS + 1) * DT, count)
    bx.set(xlabel="time (s)", ylabel="balls landed", title="the mask grows, never shrinks")
    plt.tight_layout()
    ''',
    # 3: the same loop on every platform
    '''
    results = {}
    for platform in ("cpu", "gpu"):
        try:
            device = jax.devices(platform)[0]
        except RuntimeError:
            continue  # this JAX has no such device
        inputs = [jax.device_put(x, device) for x in (r0, v0, jnp.zeros(N, dtype=bool))]
        (r_p, _, landed_p), _ = fly(*inputs)
        results[platform] = (int(landed_p.sum()), float(jnp.hypot(r_p[0], r_p[1]).mean()))
        print(f"{platform}: {results[platform][0]} landed, mean range {results[platform][1]:.6f} m")
    if len(results) == 2:
        assert results["cpu"][0] == results["gpu"][0] and abs(results["cpu"][1] - results["gpu"][1]) < 1e-9
        print("identical on both")
    ''',
    # 4: donate the mask
    '''
    one_step = jax.jit(lambda r, v, landed: step(r, v, CD, DT, G, landed), donate_argnums=2)
    mask = jnp.zeros(N, dtype=bool)
    pointer = mask.unsafe_buffer_pointer()
    _, _, mask_next = one_step(r0, v0, mask)
    print("same buffer:", mask_next.unsafe_buffer_pointer() == pointer, "| the old handle is spent:", mask.is_deleted())
    ''',
    # 5: a gradient through the whole loop
    '''
    def mean_range(cd):
        (r, _, _), _ = jax.lax.scan(lambda c, _: body(c, _, cd), (r0, v0, jnp.zeros(N, dtype=bool)), None, length=STEPS)
        return jnp.hypot(r[0], r[1]).mean()
    range_m, slope = jax.jit(jax.value_and_grad(mean_range))(CD)
    print(f"mean range {float(range_m):.3f} m; d range / d cd = {float(slope):.1f} m")
    ''',
]


@pytest.fixture(scope="module")
def p002():
    page = Page("page002", P002)
    yield page
    import matplotlib.pyplot as plt

    plt.close("all")


def test_002_kernel_and_repr(p002):
    assert p002.run(0) == [
        "KernelFunction('flight', inputs=['r', 'v', 'cd', 'dt', 'g', 'terminated'], "
        "outputs=['r_next', 'v_next', 'terminated'], wrt=['r', 'v', 'cd'])"
    ]


def test_002_scan_the_flight(p002):
    assert p002.run(1) == [
        "landed after 360 steps: 256 of 256",
        "landed after every 60th step: [0, 27, 96, 190, 247, 256]",
    ]


def test_002_figure(p002):
    assert p002.run(2) == []
    fig = p002.ns["fig"]
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 12


def test_002_every_platform(p002):
    lines = p002.run(3)
    want = ["cpu: 256 landed, mean range 67.477918 m"]
    if len(p002.ns["results"]) == 2:
        want += ["gpu: 256 landed, mean range 67.477918 m", "identical on both"]
    assert lines == want


def test_002_donate_the_mask(p002):
    assert p002.run(4) == ["same buffer: True | the old handle is spent: True"]


def test_002_gradient_through_the_loop(p002):
    assert p002.run(5) == ["mean range 67.478 m; d range / d cd = -2759.4 m"]
