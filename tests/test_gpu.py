"""eagle on a real NVIDIA GPU: launches on streams, errors at synchronize, finished counts,
device Params, captured graphs, JAX nodes on streams, deterministic sums and the JAX CUDA
handler. Every number is checked against the host build of the same kernel (or NumPy). On a
machine without a usable CUDA device every test skips with the reason "no CUDA device";
scripts/gpu_check.sh runs this file on a GPU machine."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import eagle.cuda
import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import norm, sqrt, vec

pytestmark = pytest.mark.skipif(not eagle.cuda.probe()["usable"], reason="no CUDA device")


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@hawk.kernel
def drag(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


@hawk.kernel
def lookup(i: Scalar, w: Table[Scalar], y: Mutable[Scalar]):
    y = w.at(i) * 2.0


@hawk.kernel(steps=1)
def osc(dt: Param, c: Param, t_final: Scalar, terminated: Terminated, x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final


@hawk.kernel
def scale(a: Param, x: Mutable[Scalar]):
    x = a * x


def plans(kernels, tmp_path, target):
    return eagle.plan.auto(kernels, targets=(target,), cache_dir=tmp_path / "cache")


def test_probe_describes_the_device():
    p = eagle.cuda.probe()
    assert p["devices"] and p["driver_version"] > 0
    d = p["devices"][0]
    assert d["name"] and d["arch"] == f"sm_{d['compute_capability'][0]}{d['compute_capability'][1]}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_drag_matches_the_host_build(cp, tmp_path, dtype):
    (gpu,) = plans([drag], tmp_path, "cuda")
    (host,) = plans([drag], tmp_path, "host")
    assert gpu.target == "cuda"
    rng = np.random.default_rng(1)
    v = rng.normal(size=(3, 10_000)).astype(dtype)
    out_h = np.zeros_like(v)
    host.bind(v=v, cd=0.1, dt=0.01, g=9.81, v_next=out_h).launch()
    v_d, out_d = cp.asarray(v), cp.zeros_like(cp.asarray(v))
    b = gpu.bind(v=v_d, cd=0.1, dt=0.01, g=9.81, v_next=out_d)
    assert b.launch() is None
    b.synchronize()
    np.testing.assert_allclose(cp.asnumpy(out_d), out_h, rtol=2e-6 if dtype == np.float32 else 1e-14, atol=0)


def test_launch_on_a_given_stream(cp, tmp_path):
    (gpu,) = plans([scale], tmp_path, "cuda")
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.ones(4096)
    b = gpu.bind(a=2.0, x=x)
    for _ in range(10):
        b.launch(stream=s)
    b.synchronize(stream=s)
    np.testing.assert_array_equal(cp.asnumpy(x), np.full(4096, 1024.0))


def test_a_table_error_is_raised_at_synchronize(cp, tmp_path):
    (gpu,) = plans([lookup], tmp_path, "cuda")
    i = cp.asarray([0.0, 1.0, 7.0, 2.0])
    b = gpu.bind(i=i, w=cp.arange(4.0), y=cp.zeros(4))
    b.launch()  # no error here: nothing waits for the GPU
    with pytest.raises(RuntimeError, match=r"kernel 'lookup': table 'w' index 7 is out of range \[0, 4\) at sample 2"):
        b.synchronize()
    i[2] = 3.0
    b.launch()
    b.synchronize()  # cleared: the next synchronize after a good launch is quiet


def test_finished_count_adds_on_the_device(cp, tmp_path):
    (gpu,) = plans([osc], tmp_path, "cuda")
    n = 1000
    t_final = cp.linspace(0.05, 0.5, n)
    mask, fc = cp.zeros(n, bool), cp.zeros(1, np.uint32)
    b = gpu.bind(dt=0.01, c=0.3, t_final=t_final, terminated=mask, x=cp.ones(n), v=cp.zeros(n), t=cp.zeros(n), finished_count=fc)
    for _ in range(60):
        b.launch()
    b.synchronize()
    assert int(fc[0]) == int(mask.sum()) == n


def test_a_device_stepping_loop_counts_launches_as_the_host(cp, tmp_path):
    from raptor_core import _core

    (gpu,) = plans([osc], tmp_path, "cuda")
    (host,) = plans([osc], tmp_path, "host")
    n = 5000
    t_final = np.linspace(0.05, 1.3, n)
    hp = dict(t_final=t_final.copy(), terminated=np.zeros(n, bool), x=np.ones(n), v=np.zeros(n), t=np.zeros(n))
    dp = {k: cp.asarray(v) for k, v in hp.items()}
    report = eagle.until_done([host], max_steps=400, dt=0.01, c=0.3, **hp).run()
    b = gpu.bind(dt=0.01, c=0.3, **dp)
    loop = _core.CudaLoop([b._core], int(dp["terminated"].data.ptr), n, True)
    launches, done, live = loop.run(400, eagle.cuda.current_stream())
    assert (launches, done, live) == (report.steps, report.done, 0)
    np.testing.assert_array_equal(cp.asnumpy(dp["x"]), hp["x"])


def test_a_device_param_is_read_at_each_launch(cp, tmp_path):
    (gpu,) = plans([scale], tmp_path, "cuda")
    a, x = cp.asarray([2.0]), cp.ones(256)
    b = gpu.bind(a=a, x=x)
    b.launch()
    a[0] = 3.0
    b.launch()
    b.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(x), np.full(256, 6.0))


def test_kernel_graph_is_captured_and_matches_the_host(cp, tmp_path):
    (gpu_s, gpu_d) = plans([scale, drag], tmp_path, "cuda")
    (host_s, host_d) = plans([scale, drag], tmp_path, "host")
    rng = np.random.default_rng(2)
    v0 = rng.normal(size=(3, 2048))
    vh, outh = v0[0].copy(), np.zeros((3, 2048))
    vd, outd = cp.asarray(vh), cp.zeros((3, 2048))
    vvh, vvd = v0.copy(), cp.asarray(v0)
    gh = eagle.Graph().add(host_s.bind(a=0.5, x=vh)).add(host_d.bind(v=vvh, cd=0.1, dt=0.01, g=9.8, v_next=outh)).build()
    gd = eagle.Graph().add(gpu_s.bind(a=0.5, x=vd)).add(gpu_d.bind(v=vvd, cd=0.1, dt=0.01, g=9.8, v_next=outd)).build()
    assert gh.schedule == ("host",) and gd.schedule == ("capture",)
    gh.launch(7)
    gd.launch(7)
    gd.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(vd), vh)
    np.testing.assert_allclose(cp.asnumpy(outd), outh, rtol=1e-14)


def test_sums_over_samples_are_deterministic(cp, tmp_path):
    grad = drag.adjoint(wrt=("v", "cd"))
    (gpu,) = plans([grad], tmp_path, "cuda")
    (host,) = plans([grad], tmp_path, "host")
    names = [s.name for s in grad.slots]
    rng = np.random.default_rng(3)
    values_h, values_d = {}, {}
    for s in grad.slots:
        if s.kind == "param":
            values_h[s.name] = values_d[s.name] = 0.1
        elif s.kind == "param_sum":
            values_h[s.name] = np.zeros(s.width)
            values_d[s.name] = cp.zeros(s.width)
        else:
            shape = (s.width, 100_000) if s.is_vector else (100_000,)
            a = rng.normal(size=shape) if s.kind != "mutable" or s.inout else np.zeros(shape)
            values_h[s.name], values_d[s.name] = a.copy(), cp.asarray(a)
    host.bind(**values_h).launch()
    b = gpu.bind(**values_d)
    sums = [n for n, s in zip(names, grad.slots) if s.kind == "param_sum"]
    b.launch()
    b.synchronize()
    first = {n: cp.asnumpy(values_d[n]).copy() for n in sums}
    b.launch()
    b.synchronize()
    for n in sums:
        np.testing.assert_array_equal(cp.asnumpy(values_d[n]), first[n])  # same bits run to run
        np.testing.assert_allclose(first[n], values_h[n], rtol=1e-10)


def test_jax_node_between_kernels_runs_on_streams(cp, tmp_path):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from eagle.frameworks import jax as eagle_jax

    jax.config.update("jax_enable_x64", True)
    (gpu,) = plans([scale], tmp_path, "cuda")
    x, y = cp.arange(512.0), cp.zeros(512)
    node = eagle_jax.node(jax.jit(lambda x: jnp.sin(x)), reads={"x": x}, writes={"y": y})
    g = eagle.Graph().add_node(node, name="model").add(gpu.bind(a=2.0, x=x), name="scale").build()
    assert g.schedule == ("eager_stream", "capture")
    g.launch(3)
    g.synchronize()
    ref_x = np.arange(512.0)
    ref_y = None
    for _ in range(3):
        ref_y = np.sin(ref_x)
        ref_x = 2.0 * ref_x
    np.testing.assert_allclose(cp.asnumpy(y), ref_y, rtol=1e-14)
    np.testing.assert_array_equal(cp.asnumpy(x), ref_x)


def test_jax_cuda_handler_reports_a_table_error_at_the_next_call(tmp_path):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from eagle.frameworks import jax as eagle_jax

    jax.config.update("jax_enable_x64", True)
    if jax.default_backend() != "gpu":
        pytest.skip("JAX has no GPU backend here")
    w = jnp.arange(4.0)
    fn = eagle_jax.function(lookup)
    call = jax.jit(lambda i: fn(i=i, w=w))
    np.testing.assert_array_equal(np.asarray(call(jnp.asarray([0.0, 3.0]))), [0.0, 6.0])
    call(jnp.asarray([0.0, 9.0])).block_until_ready()  # the bad call itself does not wait
    with pytest.raises(Exception, match=r"table 'w' index 9 is out of range"):
        call(jnp.asarray([0.0, 1.0])).block_until_ready()


@hawk.kernel(steps=1)
def osc000(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
           x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    # page 000's oscillator (tests/test_graphs.py's osc)
    vn = v + dt * (-x - c * v + corr * v)
    x = x + dt * v
    v = vn
    tn = t + dt
    t = tn
    terminated = tn >= t_final


@pytest.mark.parametrize("variant", ["auto", "batched"])
def test_until_done_on_cuda_plans_matches_the_host(cp, tmp_path, variant, monkeypatch):
    from raptor_core import _core

    (gpu,) = plans([osc000], tmp_path, "cuda")
    (host,) = plans([osc000], tmp_path, "host")
    n = 512
    rng = np.random.default_rng(0)
    start = dict(t_final=rng.uniform(0.5, 2.0, n), corr=np.zeros(n), x=rng.normal(size=n), v=np.zeros(n), t=np.zeros(n))
    hp = {k: a.copy() for k, a in start.items()}
    dp = {k: cp.asarray(a) for k, a in start.items()}
    host_runner = eagle.until_done([host], max_steps=400, dt=0.01, c=0.3, terminated=np.zeros(n, bool), **hp)
    if variant == "batched":  # the fallback of drivers without conditional nodes
        real = _core.CudaLoop
        monkeypatch.setattr(_core, "CudaLoop", lambda steps, mask, n: real(steps, mask, n, None, "batched"))
    runner = eagle.until_done([gpu], max_steps=400, dt=0.01, c=0.3, terminated=cp.zeros(n, bool), **dp)
    assert runner.target == "cuda"
    if variant == "auto":
        want = "while" if eagle.cuda.probe()["driver_version"] >= 12040 else "batched"
        assert runner.device.variant == want
    # in pieces, then to the end: the same counts and numbers as the host's
    for budget in (1, 37, 400):
        h, d = host_runner.run(max_steps=budget), runner.run(max_steps=budget)
        assert (d.steps, d.done, d.finished, d.live) == (h.steps, h.done, h.finished, h.live), budget
    assert runner.steps == host_runner.steps and runner.live == 0
    for k in ("x", "v", "t"):
        np.testing.assert_allclose(cp.asnumpy(dp[k]), hp[k], rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(cp.asnumpy(runner.mask), host_runner.mask)


# ------------------------------------------------------------------------------------------------
# records and reverse sweeps on the device (eagle/record.py, eagle/diff.py): the same sweep as
# the host's, with the record's copies made on the device and the adjoint kernels' CUDA plans


@hawk.kernel
def affine(w: Table[Scalar], z: Scalar, y: Mutable[Scalar]):
    y = w.at(0) * z + w.at(1)


@hawk.kernel(steps=1)
def spring(dt: Param, c: Param, y: Scalar, p: Mutable[Scalar], q: Mutable[Scalar]):
    qn = q + dt * (-p - c * q + 0.1 * y)
    p = p + dt * q
    q = qn


def _recorded_sweep(target, tmp_path, xp, c_value, stream=None):
    """affine -> spring, 40 launches in 4 batches with the Table and the Param array changed
    between batches, reversed from seeds on p and q."""
    pa, pb = plans([affine, spring], tmp_path, target)
    rng = np.random.default_rng(11)
    z, y = xp.asarray(rng.uniform(-1, 1, 4096)), xp.zeros(4096)
    p, q = xp.asarray(rng.uniform(-1, 1, 4096)), xp.asarray(rng.uniform(-1, 1, 4096))
    w, c = xp.asarray([1.5, 0.25]), xp.asarray([c_value])
    g = (eagle.Graph().add(pa.bind(w=w, z=z, y=y), name="affine")
         .add(pb.bind(dt=0.02, c=c, y=y, p=p, q=q), name="spring").build(record=True))
    for k in range(4):
        w[0] = 1.5 + 0.5 * k
        c[0] = c_value + 0.1 * k
        g.launch(10)
    seeds = {"spring.p": xp.ones(4096), "spring.q": xp.asarray(np.linspace(-1, 1, 4096))}
    grads = eagle.diff.reverse(g.record, seeds, stream=stream)
    return g, grads, dict(z=z, p=p, q=q, w=w)


def test_a_recorded_device_graph_reverses_like_the_host(cp, tmp_path):
    gh, want, _ = _recorded_sweep("host", tmp_path, np, 0.3)
    gd, got, planes = _recorded_sweep("cuda", tmp_path, cp, 0.3)
    assert gh.schedule == ("host",) and gd.schedule == ("record_stream",)
    assert len(gd.record) == 40 and gd.record.nbytes == gh.record.nbytes
    saved = [a for launch in gd.record.launches for nl in launch for a in nl.saved.values()]
    assert all(isinstance(a, cp.ndarray) for a in saved)  # the copies stayed on the device
    assert [float(nl.params["c"][0]) for launch in gd.record.launches[::10] for nl in launch if nl.node == "spring"] == pytest.approx([0.3, 0.4, 0.5, 0.6])
    assert set(got) == set(want)
    for k, v in want.items():
        if isinstance(v, float):
            assert isinstance(got[k], float)
            np.testing.assert_allclose(got[k], v, rtol=1e-11)
        else:
            assert isinstance(got[k], cp.ndarray)
            np.testing.assert_allclose(cp.asnumpy(got[k]), v, rtol=1e-11, atol=1e-13)
    # the sweep worked on copies: the planes are as the graph left them
    gd.synchronize()
    again = eagle.diff.reverse(gd.record, {"spring.p": cp.ones(4096), "spring.q": cp.asarray(np.linspace(-1, 1, 4096))})
    for k in want:
        np.testing.assert_array_equal(cp.asnumpy(cp.asarray(again[k])), cp.asnumpy(cp.asarray(got[k])))


def test_a_device_sweep_on_another_stream(cp, tmp_path):
    _, want, _ = _recorded_sweep("cuda", tmp_path, cp, 0.2)
    s = cp.cuda.Stream(non_blocking=True)
    _, got, _ = _recorded_sweep("cuda", tmp_path, cp, 0.2, stream=s.ptr)
    for k in want:
        np.testing.assert_array_equal(cp.asnumpy(cp.asarray(got[k])), cp.asnumpy(cp.asarray(want[k])))


def test_a_jax_vjp_returning_jax_arrays_on_the_device(cp, tmp_path):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from eagle.frameworks import jax as eagle_jax

    jax.config.update("jax_enable_x64", True)
    if jax.default_backend() != "gpu":
        pytest.skip("JAX has no GPU backend here")
    f = lambda a: jnp.tanh(0.7 * a)  # noqa: E731

    def run(target, xp, vjp):
        (pa,) = plans([affine], tmp_path, target)
        x, z, y = xp.asarray(np.linspace(-1, 1, 1000)), xp.zeros(1000), xp.zeros(1000)
        w = xp.asarray([2.0, 0.5])
        node = eagle_jax.node(jax.jit(f), reads={"x": x}, writes={"z": z})
        g = eagle.Graph().add_node(node, name="model").add(pa.bind(w=w, z=z, y=y), name="lin").build(record=True)
        g.launch(3)
        return g, eagle.diff.reverse(g.record, {"lin.y": xp.ones(1000)}, vjps={"model": vjp})

    def jax_vjp(primals, cotangents):  # takes CuPy arrays, returns a JAX array (DLPack on the GPU)
        _, pull = jax.vjp(f, jnp.asarray(jax.dlpack.from_dlpack(primals["x"])))
        return {"x": pull(jax.dlpack.from_dlpack(cotangents["z"]))[0]}

    def host_vjp(primals, cotangents):
        _, pull = jax.vjp(f, jnp.asarray(primals["x"]))
        return {"x": np.asarray(pull(jnp.asarray(cotangents["z"]))[0])}

    gd, got = run("cuda", cp, jax_vjp)
    _, want = run("host", np, host_vjp)
    assert gd.schedule == ("eager_stream", "record_stream")
    x = np.linspace(-1, 1, 1000)
    np.testing.assert_allclose(cp.asnumpy(got["x"]), 2.0 * 0.7 * (1 - np.tanh(0.7 * x) ** 2), rtol=1e-13)
    for k in want:
        np.testing.assert_allclose(cp.asnumpy(got[k]), want[k], rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- the newer language on the GPU


@hawk.kernel(steps=4)
def gpu_walk(rng: hawk.Random, s: Param, x: Mutable[Scalar], u: Mutable[Scalar]):
    x = x + s * rng.normal()
    u = rng.uniform()


def test_jax_cuda_handler_draws_the_host_numbers():
    """Random draws in the CUDA handler: uniform bit for bit with the host build, normal within
    1e-13 (both follow jax.random; docs/language.md "Random numbers")."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from eagle.frameworks import jax as eagle_jax

    jax.config.update("jax_enable_x64", True)
    if jax.default_backend() != "gpu":
        pytest.skip("JAX has no GPU backend here")
    fn = eagle_jax.function(gpu_walk, lowering="ffi")
    x0 = np.random.default_rng(3).normal(size=5000)
    key = jax.random.key(11)
    gx, gu = jax.jit(fn)(key, 0.3, jnp.asarray(x0))
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        hx, hu = jax.jit(fn)(jax.device_put(key, cpu), 0.3, jax.device_put(jnp.asarray(x0), cpu))
    assert np.array_equal(np.asarray(gu), np.asarray(hu))
    np.testing.assert_allclose(np.asarray(gx), np.asarray(hx), rtol=1e-13, atol=1e-13)


@hawk.kernel(steps=3)
def gpu_counter(x: Scalar, d: Scalar[hawk.int64], n: Mutable[Scalar[hawk.int32]], y: Mutable[Scalar]):
    n = n + int(x * 4.0) % 5
    y = x * float(n // d)


@hawk.kernel
def gpu_turn(R: hawk.Matrix[3, 3], v: Vector[3], w: Mutable[Vector[3]]):
    w = R @ v


def test_integer_and_matrix_planes_match_the_host_build(cp, tmp_path):
    gpu_c, gpu_t = plans([gpu_counter, gpu_turn], tmp_path, "cuda")
    host_c, host_t = plans([gpu_counter, gpu_turn], tmp_path, "host")
    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 5.0, 4000)
    d = rng.integers(1, 4, 4000).astype(np.int64)
    n0 = rng.integers(-9, 9, 4000).astype(np.int32)
    n_h, y_h = n0.copy(), np.zeros(4000)
    host_c.bind(x=x, d=d, n=n_h, y=y_h).launch()
    n_d, y_d = cp.asarray(n0), cp.zeros(4000)
    b = gpu_c.bind(x=cp.asarray(x), d=cp.asarray(d), n=n_d, y=y_d)
    b.launch()
    b.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(n_d), n_h)
    np.testing.assert_allclose(cp.asnumpy(y_d), y_h, rtol=1e-14, atol=0)
    R, v = rng.normal(size=(3, 3, 4000)), rng.normal(size=(3, 4000))
    w_h = np.zeros((3, 4000))
    host_t.bind(R=R, v=v, w=w_h).launch()
    w_d = cp.zeros((3, 4000))
    bt = gpu_t.bind(R=cp.asarray(R), v=cp.asarray(v), w=w_d)
    bt.launch()
    bt.synchronize()
    np.testing.assert_allclose(cp.asnumpy(w_d), w_h, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(w_h, np.einsum("ijn,jn->in", R, v), rtol=1e-12)


# ------------------------------------------------------------------------------------------------
# Random kernels on CUDA plans (issue 11): each launch's key step on the device gives launch n
# the key fold_in(key, n), as host launches, graphs, stepping loops and reverse sweeps use it.


@hawk.kernel(steps=1)
def gpu_langevin(dt: Param, rng: hawk.Random, t_final: Scalar, terminated: Terminated,
                 x: Mutable[Scalar], u: Mutable[Scalar], t: Mutable[Scalar]):
    x = x - dt * x + sqrt(2.0 * dt) * rng.normal()
    u = rng.uniform()
    t = t + dt
    terminated = t >= t_final


def _langevin_planes(xp, n=3000):
    rng = np.random.default_rng(21)
    return dict(t_final=xp.asarray(rng.uniform(0.05, 0.5, n)), x=xp.asarray(rng.normal(size=n)),
                u=xp.zeros(n), t=xp.zeros(n))


def _same_draws(cp, dev: dict, host: dict) -> None:
    np.testing.assert_array_equal(cp.asnumpy(dev["u"]), host["u"])  # uniform: bit for bit
    np.testing.assert_allclose(cp.asnumpy(dev["x"]), host["x"], rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(cp.asnumpy(dev["t"]), host["t"])


def test_random_launches_and_graphs_draw_the_hosts_numbers(cp, tmp_path):
    (gpu,) = plans([gpu_langevin], tmp_path, "cuda")
    (host,) = plans([gpu_langevin], tmp_path, "host")
    hp, dp = _langevin_planes(np), _langevin_planes(cp)
    mh, md = np.zeros(3000, bool), cp.zeros(3000, bool)
    bh = host.bind(dt=0.01, rng=7, terminated=mh, **hp)
    bd = gpu.bind(dt=0.01, rng=7, terminated=md, **dp)
    for _ in range(3):
        bh.launch()
        bd.launch()
    bd.synchronize()
    assert bd.launches == bh.launches == 3
    _same_draws(cp, dp, hp)
    # A captured graph advances the key on the device at every replay.
    gh, gd = eagle.Graph().add(bh).build(), eagle.Graph().add(bd).build()
    assert gd.schedule == ("capture",)
    gh.launch(5)
    gd.launch(5)
    gd.synchronize()
    assert bd.launches == bh.launches == 8
    _same_draws(cp, dp, hp)
    # A new key, and a chosen next launch number, wait for what is enqueued.
    bd.launch()
    bh.launch()
    bd.set_rng(1, 2, 100)
    bh.set_rng(1, 2, 100)
    bd.launch()
    bh.launch()
    bd.synchronize()
    assert bd.launches == bh.launches == 101
    _same_draws(cp, dp, hp)


def test_until_done_of_a_random_kernel_on_the_gpu_matches_the_host(cp, tmp_path):
    (gpu,) = plans([gpu_langevin], tmp_path, "cuda")
    (host,) = plans([gpu_langevin], tmp_path, "host")
    hp, dp = _langevin_planes(np), _langevin_planes(cp)
    rh = eagle.until_done([host], max_steps=100, dt=0.01, rng=3, terminated=np.zeros(3000, bool), **hp)
    rd = eagle.until_done([gpu], max_steps=100, dt=0.01, rng=3, terminated=cp.zeros(3000, bool), **dp)
    assert rd.target == "cuda"
    for budget in (1, 9, 100):
        h, d = rh.run(max_steps=budget), rd.run(max_steps=budget)
        assert (d.steps, d.done, d.finished, d.live) == (h.steps, h.done, h.finished, h.live), budget
    assert rd.live == 0
    _same_draws(cp, dp, hp)


@hawk.kernel(steps=1)
def gpu_noisy(dt: Param, s: Param, rng: hawk.Random, p: Mutable[Scalar]):
    p = p + dt * (-p) + s * rng.normal()


def test_a_recorded_random_graph_reverses_like_the_host(cp, tmp_path):
    """The reverse sweep's adjoint launches draw each recorded launch's numbers (its n)."""
    out = {}
    for target, xp in (("host", np), ("cuda", cp)):
        (plan,) = plans([gpu_noisy], tmp_path, target)
        p = xp.asarray(np.linspace(-1, 1, 2048))
        s = xp.asarray([0.2])
        g = eagle.Graph().add(plan.bind(dt=0.05, s=s, rng=9, p=p), name="noisy").build(record=True)
        g.launch(12)
        grads = eagle.diff.reverse(g.record, {"noisy.p": xp.ones(2048)})
        out[target] = (p, grads)
    (ph, gh), (pd, gd) = out["host"], out["cuda"]
    np.testing.assert_allclose(cp.asnumpy(pd), ph, rtol=1e-13, atol=1e-13)
    assert set(gd) == set(gh)
    for k, v in gh.items():
        got = gd[k] if isinstance(gd[k], float) else cp.asnumpy(cp.asarray(gd[k]))
        np.testing.assert_allclose(got, v, rtol=1e-11, atol=1e-13)
