"""eagle graphs and stepping loops (docs/runtime.md, docs/jax.md ``node()``; seeds/000).

Page 000 ("A JAX model between eagle launches") runs cell by cell, exactly as printed, and
each printed line is compared with the page. Then the pieces on their own: graphs of
kernels and foreign nodes, ``until_done`` and its ``Runner``/``Report``, the GPU refusal
rule (``check_loop``, callable on the CPU with ``target="cuda"``), and the graph rules of
eagle/graph.py's docstring. Every number is checked against NumPy or plain JAX.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")

import eagle  # noqa: E402
import eagle.loop  # noqa: E402
import eagle.plan  # noqa: E402
import hawk  # noqa: E402
from eagle.frameworks import jax as eagle_jax  # noqa: E402
from eagle.graph import opaque  # noqa: E402
from eagle.loop import Report, check_loop  # noqa: E402
from hawk import Mutable, Param, Scalar, Terminated  # noqa: E402

from conftest import Page, plan_kernels  # noqa: E402

jax.config.update("jax_enable_x64", True)

REFUSAL = "eagle.until_done: node 'opaque_stream' runs on the host each launch, but a stepping loop is one device graph"


# ------------------------------------------------------------------------------------------------
# page 000, as printed (the Colab cell, which installs packages and plot helpers, aside)

P000 = [
    # 0: imports
    '''
    import os
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false") # leave GPU memory for your other libraries
    try: # CUDA 13: CuPy loads NVRTC before JAX does (see Limits on the JAX page)
        import cupy
        cupy.cuda.nvrtc.getVersion()
    except Exception: # no CuPy or no CUDA here
        pass
    import jax
    import jax.numpy as jnp
    import numpy as np
    jax.config.update("jax_enable_x64", True)
    import hawk
    from hawk import Mutable, Param, Scalar, Terminated
    import eagle
    import eagle.plan
    from eagle.frameworks import jax as eagle_jax
    ''',
    # 1: the model and the step
    '''
    N, DT, C = 512, 0.01, 0.3
    k1, k2 = jax.random.split(jax.random.key(0))
    W1, W2 = 0.5 * jax.random.normal(k1, (2, 8)), 0.5 * jax.random.normal(k2, (8,))
    @jax.jit
    def model(x, v):
        return jnp.tanh(jnp.stack([x, v], 1) @ W1) @ W2 # (N,) correction per oscillator
    @hawk.kernel(steps=1)
    def osc(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
            x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
        vn = v + dt * (-x - c * v + corr * v)
        x = x + dt * v
        v = vn
        tn = t + dt
        t = tn
        terminated = tn >= t_final # each oscillator stops at its own final time
    ''',
    # 2: one graph, two owners
    '''
    gpu = jax.default_backend() == "gpu"
    if gpu:
        import cupy as xp
    else:
        xp = np
    (plan,) = eagle.plan.auto([osc], targets=("cuda" if gpu else "host",))
    start = dict(x=np.linspace(0.5, 1.5, N), v=np.linspace(-0.2, 0.3, N), t=np.zeros(N),
                 corr=np.zeros(N), t_final=np.linspace(0.5, 2.0, N))
    planes = {name: xp.asarray(a).copy() for name, a in start.items()}
    mask = xp.zeros(N, bool)
    node = eagle_jax.node(model, reads={"x": planes["x"], "v": planes["v"]}, writes={"corr": planes["corr"]})
    graph = (eagle.Graph()
             .add_node(node, name="model")
             .add(plan.bind(dt=DT, c=C, terminated=mask, finished_count=xp.zeros(1, np.uint32), **planes), name="osc")
             .build())
    ''',
    # 3: the schedule (the notebook displays the expression's value)
    '''
    print(repr(graph.schedule))
    ''',
    # 4: run it, and check it against plain JAX
    '''
    def host(a):
        return a.get() if hasattr(a, "get") else np.asarray(a)
    track = [host(planes["x"])[::128].copy()]
    for _ in range(200): # 200 steps of 0.01 reach the longest final time, 2.0
        graph.launch()
        track.append(host(planes["x"])[::128].copy())
    graph.synchronize()
    @jax.jit
    def reference_step(x, v, t, done):
        vn = v + DT * (-x - C * v + model(x, v) * v)
        xn, tn = x + DT * v, t + DT
        return (jnp.where(done, x, xn), jnp.where(done, v, vn), jnp.where(done, t, tn),
                done | (tn >= jnp.asarray(start["t_final"])))
    state = (jnp.asarray(start["x"]), jnp.asarray(start["v"]), jnp.zeros(N), jnp.zeros(N, bool))
    ref_track = [np.asarray(state[0])[::128]]
    for _ in range(200):
        state = reference_step(*state)
        ref_track.append(np.asarray(state[0])[::128])
    err = float(np.abs(host(planes["x"]) - np.asarray(state[0])).max())
    print(f"all stopped: {bool(host(mask).all())}; largest difference from plain JAX: {err:.1e}")
    assert err < 1e-12
    ''',
    # 5: the figure
    '''
    import matplotlib.pyplot as plt
    time = np.arange(201) * DT
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    ax.plot(time, np.array(track), lw=1.8)
    ax.plot(time, np.array(ref_track), "k--", lw=0.8, label="plain JAX")
    ax.set(xlabel="time", ylabel="position", title="Five oscillators, each frozen at its own final time")
    ax.legend(loc="upper right")
    plt.tight_layout()
    ''',
    # 6: inside until_done
    '''
    try:
        again = {name: xp.asarray(a).copy() for name, a in start.items()}
        inner = eagle_jax.node(model, reads={"x": again["x"], "v": again["v"]}, writes={"corr": again["corr"]})
        report = eagle.until_done([inner, plan], max_steps=400, dt=DT, c=C, terminated=xp.zeros(N, bool), **again).run()
        print("until_done:", report.steps, "steps,", "done" if report.done else "not done")
    except ValueError as refusal:
        print(str(refusal).split(": run host")[0])
    ''',
]


@pytest.fixture(scope="module")
def p000():
    # plan.auto() without cache_dir: conftest points RAPTOR_CACHE_DIR at a temp dir
    page = Page("p000", P000)
    yield page
    import matplotlib.pyplot as plt

    plt.close("all")


def test_000_imports_and_definitions(p000):
    assert p000.run(0) == []
    assert p000.run(1) == []
    assert p000.ns["osc"].name == "osc"


def test_000_graph_builds(p000):
    assert p000.run(2) == []
    # the page prints ('eager_stream', 'capture') on a GPU: the JAX node on its stream, the kernel captured
    want = ("eager_stream", "capture") if p000.ns["gpu"] else ("host",)
    assert p000.run(3) == [repr(want)]
    assert p000.ns["graph"].schedule == want


def test_000_run_against_plain_jax(p000):
    (line,) = p000.run(4)
    assert line.startswith("all stopped: True; largest difference from plain JAX: ")
    assert float(line.rsplit(" ", 1)[1]) < 1e-12
    ns = p000.ns
    host = ns["host"]  # the page's own: on a GPU the planes are CuPy arrays
    assert ns["err"] < 1e-12
    assert host(ns["mask"]).all()
    # every oscillator stopped at its own final time: t reached t_final, within one step
    t, t_final = host(ns["planes"]["t"]), ns["start"]["t_final"]
    assert np.all(t >= t_final - 1e-12) and np.all(t < t_final + ns["DT"] + 1e-12)
    # the whole trajectory of the five tracked oscillators agrees, not only the end
    assert np.abs(np.array(ns["track"]) - np.array(ns["ref_track"])).max() < 1e-12
    # the node's write plane holds the model's correction for the state before the last step
    assert np.abs(host(ns["planes"]["corr"])).max() > 0


def test_000_figure(p000):
    assert p000.run(5) == []
    fig = p000.ns["fig"]
    assert len(fig.axes[0].lines) == 8  # x[::128] of 512: four eagle lines, four dashed JAX lines


def test_000_until_done_with_the_jax_node(p000):
    if p000.ns["gpu"]:  # the page prints the refusal there: the loop is one device graph
        assert p000.run(6) == [REFUSAL]
        return
    assert p000.run(6) == ["until_done: 200 steps, done"]
    report = p000.ns["report"]
    assert report.steps == 200 and report.done
    assert report.finished == 512 and report.live == 0
    # the loop's result is the graph's result
    assert np.array_equal(p000.ns["again"]["x"], p000.ns["planes"]["x"])


def test_000_gpu_refusal_message(p000):
    p000.run(2)
    node = p000.ns["node"]
    with pytest.raises(ValueError) as err:
        check_loop([("opaque_stream", node)], "cuda")
    assert str(err.value).split(": run host")[0] == REFUSAL
    assert ": run host" in str(err.value)
    check_loop([("opaque_stream", node)], "host")  # the host runs foreign nodes between launches


def test_000_until_done_refuses_on_cuda(p000):
    """The page's own cell, with the loop meant for a GPU: the same message, before any launch."""
    ns = p000.ns
    p000.run(2)
    again = {name: a.copy() for name, a in ns["start"].items()}
    inner = eagle_jax.node(ns["model"], reads={"x": again["x"], "v": again["v"]}, writes={"corr": again["corr"]})
    with pytest.raises(ValueError) as err:
        eagle.until_done([inner, ns["plan"]], max_steps=400, target="cuda", dt=0.01, c=0.3,
                         terminated=np.zeros(512, bool), **again)
    assert str(err.value).split(": run host")[0] == REFUSAL
    assert np.array_equal(again["x"], ns["start"]["x"])  # nothing ran


# ------------------------------------------------------------------------------------------------
# kernels and helpers for the rest


@hawk.kernel(steps=1)
def osc(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
        x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v + corr * v)
    x = x + dt * v
    v = vn
    tn = t + dt
    t = tn
    terminated = tn >= t_final


@hawk.kernel
def scale(a: Param, u: Scalar, w: Mutable[Scalar]):
    w = a * u


@hawk.kernel
def shift(b: Param, w: Scalar, z: Mutable[Scalar]):
    z = w + b


@hawk.kernel
def accumulate(z: Scalar, s: Mutable[Scalar]):
    s = s + z


DT, C = 0.01, 0.3


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels([osc, scale, shift, accumulate], module_cache_dir)


def osc_start(n: int, seed: int = 0, t_max: float = 2.0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return dict(x=rng.uniform(0.5, 1.5, n), v=rng.uniform(-0.2, 0.3, n), t=np.zeros(n),
                corr=rng.uniform(-0.1, 0.1, n), t_final=rng.uniform(0.1, t_max, n))


def numpy_osc(start: dict[str, np.ndarray], steps: int, dt: float = DT, c: float = C):
    """The osc kernel in NumPy, a finished sample frozen; returns (x, v, t, mask, launches
    until all were done or ``steps``)."""
    x, v, t = start["x"].copy(), start["v"].copy(), start["t"].copy()
    corr, t_final = start["corr"], start["t_final"]
    done = np.zeros(x.size, bool)
    k = 0
    while k < steps and not done.all():
        vn = v + dt * (-x - c * v + corr * v)
        xn = x + dt * v
        tn = t + dt
        live = ~done
        x, v, t = np.where(live, xn, x), np.where(live, vn, v), np.where(live, tn, t)
        done = done | (live & (tn >= t_final))
        k += 1
    return x, v, t, done, k


# ------------------------------------------------------------------------------------------------
# graphs


def test_kernel_graph_runs_in_order_like_numpy(plans):
    n = 256
    u = np.linspace(-1, 1, n)
    w, z, s = np.zeros(n), np.zeros(n), np.zeros(n)
    g = (eagle.Graph()
         .add(plans["scale"].bind(a=2.0, u=u, w=w), name="scale")
         .add(plans["shift"].bind(b=0.5, w=w, z=z), name="shift")
         .add(plans["accumulate"].bind(z=z, s=s), name="acc")
         .build())
    assert g.schedule == ("host",)
    g.launch(10)
    g.synchronize()
    np.testing.assert_allclose(w, 2.0 * u, rtol=0, atol=0)
    np.testing.assert_allclose(z, 2.0 * u + 0.5, rtol=0, atol=0)
    np.testing.assert_allclose(s, 10 * (2.0 * u + 0.5), rtol=1e-14, atol=1e-14)
    g.launch(0)  # nothing
    np.testing.assert_allclose(s, 10 * (2.0 * u + 0.5), rtol=1e-14, atol=1e-14)
    with pytest.raises(ValueError, match="launch count"):
        g.launch(-1)


def test_graph_sees_arrays_changed_between_launches(plans):
    n = 16
    u, w = np.ones(n), np.zeros(n)
    g = eagle.Graph().add(plans["scale"].bind(a=3.0, u=u, w=w), name="scale").build()
    g.launch()
    assert np.all(w == 3.0)
    u[:] = 2.0  # bound by reference
    g.launch()
    assert np.all(w == 6.0)


def test_kernel_graph_equals_single_launches(plans):
    start = osc_start(300)
    a = {k: v.copy() for k, v in start.items()}
    b = {k: v.copy() for k, v in start.items()}
    ma, mb = np.zeros(300, bool), np.zeros(300, bool)
    g = eagle.Graph().add(plans["osc"].bind(dt=DT, c=C, terminated=ma, **a), name="osc").build()
    g.launch(150)  # one C++ call
    bound = plans["osc"].bind(dt=DT, c=C, terminated=mb, **b)
    for _ in range(150):
        bound.launch()
    for k in ("x", "v", "t"):
        assert np.array_equal(a[k], b[k])
    assert np.array_equal(ma, mb)
    x, v, t, done, _ = numpy_osc(start, 150)
    np.testing.assert_allclose(a["x"], x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a["v"], v, rtol=0, atol=1e-12)
    assert np.array_equal(ma, done)


def test_foreign_nodes_run_in_order_and_see_previous_launch(plans):
    """Nodes run strictly in order: a node reading a plane that a later node writes sees the
    previous launch's value."""
    n = 8
    u, w = np.zeros(n), np.zeros(n)
    seen = []

    def before(w_):
        seen.append(("before", float(w_[0])))

    def make_u():
        seen.append(("make_u", None))
        return np.full(n, float(len(seen)))

    g = (eagle.Graph()
         .add_node(opaque(before, reads={"w": w}), name="before")
         .add_node(opaque(make_u, writes={"u": u}), name="make_u")
         .add(plans["scale"].bind(a=1.0, u=u, w=w), name="scale")
         .build())
    g.launch(3)
    assert [s[0] for s in seen] == ["before", "make_u"] * 3
    # "before" read w as the previous launch's scale left it
    assert [s[1] for s in seen if s[0] == "before"] == [0.0, 2.0, 4.0]
    assert np.all(w == 6.0)


def test_opaque_node_kinds_and_results():
    n = 4
    out = np.zeros(n)
    lazy = opaque(lambda: np.arange(4.0), writes={"out": out})
    eager = opaque(lambda: None, eager=True)
    assert lazy.kind == "opaque_stream" and eager.kind == "opaque_host"
    g = eagle.Graph().add_node(lazy, name="fill").add_node(eager).build()
    g.launch()
    assert np.array_equal(out, np.arange(4.0))
    assert [name for name, _ in g.nodes] == ["fill", "opaque_host"]
    with pytest.raises(TypeError, match="callable"):
        opaque(3)


def test_graph_builder_refusals(plans):
    with pytest.raises(ValueError, match="no nodes"):
        eagle.Graph().build()
    with pytest.raises(TypeError, match="add_node"):
        eagle.Graph().add(opaque(lambda: None))
    with pytest.raises(TypeError, match="foreign node"):
        eagle.Graph().add_node(plans["scale"].bind(a=1.0, u=np.zeros(2), w=np.zeros(2)))
    g = eagle.Graph().add_node(opaque(lambda: None), name="a")
    with pytest.raises(ValueError, match="'a' is already"):
        g.add_node(opaque(lambda: None), name="a")


# ------------------------------------------------------------------------------------------------
# the graph rules of eagle/graph.py's docstring (each refusal names the nodes and the plane)


def test_plane_bound_twice_with_different_shapes(plans):
    x8, x4 = np.zeros(8), np.zeros(4)
    g = (eagle.Graph()
         .add_node(opaque(lambda x: None, reads={"u": x4}), name="looker")
         .add(plans["scale"].bind(a=1.0, u=x8, w=np.zeros(8)), name="scaler"))
    with pytest.raises(ValueError) as err:
        g.build()
    msg = str(err.value)
    assert "'u'" in msg and "'looker'" in msg and "'scaler'" in msg
    assert "(4,)" in msg and "(8,)" in msg


def test_plane_name_in_two_nodes_with_one_shape_is_fine(plans):
    a, b = np.zeros(8), np.zeros(8)
    g = (eagle.Graph()
         .add(plans["scale"].bind(a=1.0, u=np.ones(8), w=a), name="s1")
         .add_node(opaque(lambda w: None, reads={"w": b}), name="o")
         .build())
    g.launch()


def test_plane_written_by_two_nodes(plans):
    w = np.zeros(8)
    g = (eagle.Graph()
         .add(plans["scale"].bind(a=1.0, u=np.ones(8), w=w), name="first")
         .add_node(opaque(lambda: np.ones(8), writes={"w": w}), name="second"))
    with pytest.raises(ValueError) as err:
        g.build()
    msg = str(err.value)
    assert "'w'" in msg and "'first'" in msg and "'second'" in msg and "one writer" in msg
    # two views of one buffer are one plane, whatever their names
    g2 = (eagle.Graph()
          .add_node(opaque(lambda: np.ones(8), writes={"p": w}), name="a")
          .add_node(opaque(lambda: np.ones(8), writes={"q": w[:]}), name="b"))
    with pytest.raises(ValueError, match="written by node 'a' and by node 'b'"):
        g2.build()


def test_foreign_node_writing_a_plane_it_reads():
    buf = np.zeros(8)
    g = eagle.Graph().add_node(opaque(lambda a: a + 1, reads={"a": buf}, writes={"b": buf}), name="inplace")
    with pytest.raises(ValueError) as err:
        g.build()
    msg = str(err.value)
    assert "node 'inplace'" in msg and "'b'" in msg and "'a'" in msg and "also reads" in msg
    # the JAX node obeys the same rule
    jn = eagle_jax.node(jax.jit(lambda a: a * 2), reads={"a": buf}, writes={"a": buf})
    with pytest.raises(ValueError, match="node 'twice' writes plane 'a', which it also reads"):
        eagle.Graph().add_node(jn, name="twice").build()


def test_kernel_in_out_plane_is_allowed(plans):
    """The rule is for foreign nodes: a kernel's in-out Mutable reads and writes one plane."""
    s = np.zeros(4)
    g = eagle.Graph().add(plans["accumulate"].bind(z=np.ones(4), s=s), name="acc").build()
    g.launch(3)
    assert np.all(s == 3.0)


def test_jax_node_wrong_shape_names_the_plane():
    x, out = np.linspace(0, 1, 8), np.zeros(8)
    jn = eagle_jax.node(jax.jit(lambda a: a[:4]), reads={"x": x}, writes={"halfway": out})
    g = eagle.Graph().add_node(jn, name="model").build()
    with pytest.raises(ValueError) as err:
        g.launch()
    msg = str(err.value)
    assert "'halfway'" in msg and "(4,)" in msg and "(8,)" in msg
    assert np.all(out == 0)


def test_jax_node_wrong_count_and_host_planes():
    x, out = np.linspace(0, 1, 8), np.zeros(8)
    jn = eagle_jax.node(jax.jit(lambda a: (a, a)), reads={"x": x}, writes={"out": out})
    with pytest.raises(ValueError, match="2 value"):
        eagle.Graph().add_node(jn).build().launch()
    with pytest.raises(eagle.ModeError, match="'x'"):  # a JAX array: on the CPU not a NumPy array, on a GPU a GPU array
        eagle_jax.node(jax.jit(lambda a: a), reads={"x": jnp.zeros(8)}, writes={"out": out})


class _OnGpu:
    """Stands for a GPU array (a JAX one where JAX's default device is a GPU, or CuPy's)."""

    def __init__(self, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f8", "data": (0, False), "strides": None, "version": 3}


def test_jax_node_refuses_host_and_gpu_planes_together():
    out = np.zeros(8)
    with pytest.raises(eagle.ModeError) as err:
        eagle_jax.node(jax.jit(lambda a: a), reads={"x": _OnGpu(8)}, writes={"out": out})
    assert str(err.value) == (
        "eagle.frameworks.jax.node: plane 'x' is a GPU array (_OnGpu) and plane 'out' a NumPy array; "
        "a node's planes are all NumPy arrays (it runs on the host) or all GPU arrays (it runs on the graph's stream)"
    )
    with pytest.raises(eagle.ModeError, match="plane 'y' is a GPU array .* plane 'x' a NumPy array"):
        eagle_jax.node(jax.jit(lambda a: a), reads={"x": np.zeros(8)}, writes={"y": _OnGpu(8)})
    node = eagle_jax.node(jax.jit(lambda a: a), reads={"x": _OnGpu(8)}, writes={"y": _OnGpu(8)})  # all on the GPU
    assert list(node.reads) == ["x"] and list(node.writes) == ["y"]


def test_jax_node_reads_without_copy_and_writes_in_place():
    x = np.linspace(0, 1, 64)
    out = np.zeros(64)
    ptr = out.ctypes.data
    jn = eagle_jax.node(jax.jit(lambda a: jnp.sin(a)), reads={"x": x}, writes={"s": out})
    g = eagle.Graph().add_node(jn, name="sin").build()
    g.launch()
    assert out.ctypes.data == ptr
    np.testing.assert_allclose(out, np.sin(x), rtol=1e-15)
    x[:] = 0.5  # a change to a read plane is seen by the next launch
    g.launch()
    np.testing.assert_allclose(out, np.sin(0.5), rtol=1e-15)


# ------------------------------------------------------------------------------------------------
# until_done


def test_until_done_kernels_only_against_numpy(plans):
    n = 1000
    start = osc_start(n, seed=1)
    planes = {k: v.copy() for k, v in start.items()}
    mask, count = np.zeros(n, bool), np.zeros(1, np.uint32)
    runner = eagle.until_done([plans["osc"]], max_steps=1000, dt=DT, c=C, terminated=mask,
                              finished_count=count, **planes)
    assert runner._kernels_only  # the loop runs in C++
    report = runner.run()
    x, v, t, done, k = numpy_osc(start, 1000)
    assert report.done and report.steps == k
    assert report.finished == n and report.live == 0 and mask.all()
    assert int(count[0]) == n
    np.testing.assert_allclose(planes["x"], x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(planes["v"], v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(planes["t"], t, rtol=0, atol=1e-12)


def test_until_done_stops_at_max_steps(plans):
    n = 100
    start = osc_start(n, seed=2)
    planes = {k: v.copy() for k, v in start.items()}
    mask = np.zeros(n, bool)
    report = eagle.until_done([plans["osc"]], max_steps=30, dt=DT, c=C, terminated=mask, **planes).run()
    x, _, _, done, k = numpy_osc(start, 30)
    assert k == 30 and not done.all()
    assert report.steps == 30 and not report.done
    assert report.live == int((~done).sum()) and report.finished == int(done.sum())
    assert np.array_equal(mask, done)
    np.testing.assert_allclose(planes["x"], x, rtol=0, atol=1e-12)


def test_runner_run_in_chunks(plans):
    """runner.run(max_steps=k) advances at most k more launches and can be called again."""
    n = 500
    start = osc_start(n, seed=3, t_max=1.95)  # done in at most 195 launches
    planes = {k: v.copy() for k, v in start.items()}
    mask = np.zeros(n, bool)
    runner = eagle.until_done([plans["osc"]], dt=DT, c=C, terminated=mask, **planes)
    *_, total = numpy_osc(start, 10_000)
    reports = []
    for j in range(1, 100):
        r = runner.run(max_steps=25)
        reports.append(r)
        x, v, t, done, _ = numpy_osc(start, 25 * j)
        np.testing.assert_allclose(planes["x"], x, rtol=0, atol=1e-12)
        assert np.array_equal(mask, done)
        assert runner.steps == min(25 * j, total)
        if r.done:
            break
    assert [r.steps for r in reports[:-1]] == [25] * (len(reports) - 1)
    assert reports[-1].steps == total - 25 * (len(reports) - 1) and reports[-1].done
    assert all(not r.done for r in reports[:-1])
    again = runner.run(max_steps=25)  # nothing live: no launch
    assert again.steps == 0 and again.done
    with pytest.raises(ValueError, match="max_steps"):
        runner.run()  # no budget given anywhere


def test_runner_chunks_with_a_jax_node_match_one_run(plans):
    """The page's loop, driven k launches at a time (as a user holding a JAX step does)."""
    n = 256
    start = osc_start(n, seed=4)
    W = jnp.linspace(-0.5, 0.5, 8)
    model = jax.jit(lambda x, v: jnp.tanh(jnp.outer(x, W) + jnp.outer(v, W[::-1])).sum(1) / 8)

    def make():
        planes = {k: v.copy() for k, v in start.items()}
        mask = np.zeros(n, bool)
        nd = eagle_jax.node(model, reads={"x": planes["x"], "v": planes["v"]}, writes={"corr": planes["corr"]})
        return planes, mask, eagle.until_done([nd, plans["osc"]], max_steps=1000, dt=DT, c=C, terminated=mask, **planes)

    p1, m1, r1 = make()
    whole = r1.run()
    p2, m2, r2 = make()
    steps = 0
    while True:
        rep = r2.run(max_steps=7)
        steps += rep.steps
        assert rep.steps <= 7
        if rep.done:
            break
    assert whole.done and steps == whole.steps == r2.steps
    for k in ("x", "v", "t", "corr"):
        assert np.array_equal(p1[k], p2[k])
    # and against plain JAX with a where that freezes finished samples
    x, v, t, done = (jnp.asarray(start["x"]), jnp.asarray(start["v"]), jnp.zeros(n), jnp.zeros(n, bool))
    for _ in range(whole.steps):
        corr = model(x, v)
        vn = v + DT * (-x - C * v + corr * v)
        xn, tn = x + DT * v, t + DT
        x, v, t, done = (jnp.where(done, x, xn), jnp.where(done, v, vn), jnp.where(done, t, tn),
                         done | (tn >= start["t_final"]))
    assert bool(done.all())
    np.testing.assert_allclose(p1["x"], np.asarray(x), rtol=0, atol=1e-12)


class FakeClock:
    """Stands in for eagle.loop's ``time`` module: each reading is one second later."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now


@pytest.mark.parametrize("with_node", [False, True])
def test_progress_callable(plans, monkeypatch, with_node):
    n = 300
    start = osc_start(n, seed=5, t_max=1.95)
    planes = {k: v.copy() for k, v in start.items()}
    mask = np.zeros(n, bool)
    monkeypatch.setattr(eagle.loop, "time", FakeClock())
    calls = []
    items = [plans["osc"]]
    if with_node:
        items.insert(0, opaque(lambda x: x * 0.0, reads={"x": planes["x"]}, writes={"corr": planes["corr"]}))
    report = eagle.until_done(items, max_steps=1000, progress=lambda steps, live: calls.append((steps, live)),
                              dt=DT, c=C, terminated=mask, **planes).run()
    assert report.done
    assert calls, "progress callable was never called"
    steps = [s for s, _ in calls]
    lives = [lv for _, lv in calls]
    assert steps == sorted(steps) and steps[-1] <= report.steps and steps[0] >= 1
    assert lives == sorted(lives, reverse=True) and all(0 <= lv <= n for lv in lives)
    if not with_node:
        # the C++ loop reports between chunks of at most 64 launches
        assert all(b - a <= 64 for a, b in zip([0] + steps, steps))


def test_progress_true_prints(plans, monkeypatch, capsys):
    n = 50
    planes = {k: v.copy() for k, v in osc_start(n, seed=6).items()}
    monkeypatch.setattr(eagle.loop, "time", FakeClock())
    eagle.until_done([plans["osc"]], max_steps=1000, progress=True, dt=DT, c=C,
                     terminated=np.zeros(n, bool), **planes).run()
    out = capsys.readouterr().out
    assert "eagle.until_done:" in out and f"of {n} samples live" in out


def test_progress_real_clock(plans):
    """Without a fake clock: a loop that takes over a second calls the callable."""
    import time

    n = 16
    planes = {k: v.copy() for k, v in osc_start(n, seed=7, t_max=0.3).items()}
    calls = []
    slow = opaque(lambda x: (time.sleep(0.04), x * 0.0)[1], reads={"x": planes["x"]}, writes={"corr": planes["corr"]})
    report = eagle.until_done([slow, plans["osc"]], max_steps=1000, progress=lambda s, lv: calls.append((s, lv)),
                              dt=DT, c=C, terminated=np.zeros(n, bool), **planes).run()
    assert report.done and report.steps == 30 and report.elapsed >= 1.0
    assert calls


def test_report_fields(plans):
    n = 64
    planes = {k: v.copy() for k, v in osc_start(n, seed=8).items()}
    mask = np.zeros(n, bool)
    runner = eagle.until_done([plans["osc"]], max_steps=5, dt=DT, c=C, terminated=mask, **planes)
    r = runner.run()
    assert isinstance(r, Report)
    assert set(r.__dataclass_fields__) == {"steps", "done", "finished", "live", "elapsed"}
    assert r.steps == 5 and isinstance(r.done, bool) and not r.done
    assert r.finished + r.live == n and r.finished == int(mask.sum()) and r.live == runner.live
    assert isinstance(r.elapsed, float) and r.elapsed >= 0
    assert str(r).startswith(f"5 steps, {r.live} live ({r.finished} finished) in ")
    with pytest.raises(Exception):
        r.steps = 3  # a report is a value
    r2 = runner.run(max_steps=1000)
    assert r2.done and r2.live == 0 and r2.finished == n and "done" in str(r2)


# ------------------------------------------------------------------------------------------------
# until_done refusals


def test_until_done_unknown_binding(plans):
    n = 8
    planes = {k: v.copy() for k, v in osc_start(n).items()}
    with pytest.raises(TypeError) as err:
        eagle.until_done([plans["osc"]], max_steps=10, dt=DT, c=C, terminated=np.zeros(n, bool),
                         velocity=np.zeros(n), **planes)
    assert "'velocity'" in str(err.value)


def test_until_done_without_terminated(plans):
    with pytest.raises(ValueError, match="Terminated"):
        eagle.until_done([plans["scale"]], max_steps=10, a=1.0, u=np.zeros(4), w=np.zeros(4))


def test_until_done_wrong_item(plans):
    with pytest.raises(TypeError, match="items"):
        eagle.until_done([lambda: None], max_steps=3)


def test_until_done_applies_graph_rules(plans):
    n = 8
    planes = {k: v.copy() for k, v in osc_start(n).items()}
    bad = opaque(lambda: np.zeros(n), writes={"x": planes["x"]})  # osc writes x too
    with pytest.raises(ValueError, match="one writer"):
        eagle.until_done([bad, plans["osc"]], max_steps=3, dt=DT, c=C, terminated=np.zeros(n, bool), **planes)


def test_check_loop_rule(plans):
    bound = plans["scale"].bind(a=1.0, u=np.zeros(4), w=np.zeros(4))
    check_loop([("scale", bound)], "cuda")  # kernels are captured
    eager = opaque(lambda: None, eager=True)
    with pytest.raises(ValueError, match="node 'hostly' runs on the host each launch"):
        check_loop([("scale", bound), ("hostly", eager)], "cuda")
    check_loop([("hostly", eager)], "host")
