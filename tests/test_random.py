"""Random numbers in kernels (`rng: Random`, docs/language.md "Random numbers").

Every number is checked against jax.random itself: draw j of sample i in step s with key k
is jax.random.uniform(fold_in(fold_in(fold_in(k, s), i), j)) bit for bit, normal to the
stated tolerance; eagle's launch n uses fold_in(key, n).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import eagle
import eagle.plan
import hawk
from eagle.frameworks import jax as ejax
from hawk import Guard, Mutable, Param, Random, Scalar, Terminated
from raptor_core import _core
from conftest import nvrtc_missing, require_jax_normal_reference, run_on_host_devices  # noqa: E402

require_jax_normal_reference()

jax.config.update("jax_enable_x64", True)

DTYPES = (np.float32, np.float64)
# rng.normal() vs jax.random.normal of the same subkey (relative): see docs/language.md.
NORMAL_RTOL = {np.float32: 1e-6, np.float64: 1e-13}


def draws(key, step: int, n: int, j: int, dtype, kind: str = "uniform", base: int = 0) -> np.ndarray:
    """jax.random's draw j of samples base..base+n-1 in step `step` (the definition)."""
    ks = jax.random.fold_in(key, step)
    idx = jnp.arange(base, base + n, dtype=jnp.uint32)
    subs = jax.vmap(lambda i: jax.random.fold_in(jax.random.fold_in(ks, i), j))(idx)
    f = jax.random.uniform if kind == "uniform" else jax.random.normal
    return np.asarray(jax.vmap(lambda k: f(k, (), dtype))(subs))


def assert_normal_close(got, want, dtype) -> None:
    np.testing.assert_allclose(got, want, rtol=NORMAL_RTOL[dtype], atol=NORMAL_RTOL[dtype] * 1e-3)


@hawk.kernel
def three(x: Scalar, rng: Random, u: Mutable[Scalar], z: Mutable[Scalar], w: Mutable[Scalar]):
    u = rng.uniform()
    z = rng.normal()
    w = rng.uniform() + 0.0 * x


@hawk.kernel
def branches(x: Scalar, rng: Random, a: Mutable[Scalar], b: Mutable[Scalar]):
    # draw 0 or 1 (both are made; one is kept), then draws 2..4 in the loop, 5 after it
    if x > 0.0:
        a = rng.uniform()
    else:
        a = rng.normal()
    b = 0.0
    for k in range(3):
        b = b + (k + 1.0) * rng.uniform()
    b = b + 10.0 * rng.uniform()


@hawk.kernel(steps=3)
def walk(rng: Random, y: Mutable[Scalar]):
    y = y * 0.5 + rng.uniform()


@hawk.kernel(guard=Guard(active_set=True))
def masked(rng: Random, terminated: Terminated, x: Mutable[Scalar]):
    x = rng.uniform()
    terminated = x < 0.25


@hawk.kernel
def until(rng: Random, terminated: Terminated, x: Mutable[Scalar]):
    x = x + rng.uniform()
    terminated = x > 1.5


@hawk.kernel
def reparam(mu: Scalar, sigma: Param, rng: Random, y: Mutable[Scalar]):
    y = mu + sigma * rng.normal() + 0.1 * mu * mu * rng.uniform()


@hawk.kernel(steps=3)
def reparam_steps(mu: Scalar, sigma: Param, rng: Random, y: Mutable[Scalar]):
    y = y + mu * 0.5 + sigma * sigma * rng.normal()


@hawk.kernel
def noisy_osc(dt: Param, c: Param, sigma: Param, rng: Random, x: Mutable[Scalar], v: Mutable[Scalar]):
    x = x + dt * v
    v = v - dt * c * x + sigma * rng.normal()


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    ks = [three, branches, walk, masked, until, reparam, noisy_osc]
    return dict(zip([k.name for k in ks], eagle.plan.auto(ks, cache_dir=module_cache_dir)))


# ------------------------------------------------------------------------- the numbers


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_jax_call_draws_are_jax_random(dtype, module_cache_dir):
    n = 1000
    key = jax.random.key(7)
    f = ejax.function(three)
    u, z, w = f(jnp.zeros(n, dtype), key)
    assert u.dtype == dtype
    np.testing.assert_array_equal(np.asarray(u), draws(key, 0, n, 0, dtype))
    assert_normal_close(np.asarray(z), draws(key, 0, n, 1, dtype, "normal"), dtype)
    np.testing.assert_array_equal(np.asarray(w), draws(key, 0, n, 2, dtype))
    # a raw uint32[2] key (PRNGKey) and an int seed mean the same key
    u2, _, _ = f(jnp.zeros(n, dtype), jax.random.PRNGKey(7))
    u3, _, _ = f(jnp.zeros(n, dtype), 7)
    np.testing.assert_array_equal(np.asarray(u2), np.asarray(u))
    np.testing.assert_array_equal(np.asarray(u3), np.asarray(u))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_numbering_in_branches_and_loops(dtype, lowering):
    n = 300
    key = jax.random.key(3)
    x = np.linspace(-1, 1, n).astype(dtype)
    a, b = ejax.function(branches, lowering=lowering)(x, key)
    d = [draws(key, 0, n, j, dtype) for j in range(6)]
    zn = draws(key, 0, n, 1, dtype, "normal")
    pos = x > 0
    np.testing.assert_array_equal(np.asarray(a)[pos], d[0][pos])
    assert_normal_close(np.asarray(a)[~pos], zn[~pos], dtype)
    t = dtype(1.0) * d[2]
    t = t + dtype(2.0) * d[3]
    t = t + dtype(3.0) * d[4]
    t = t + dtype(10.0) * d[5]
    if lowering == "ffi":
        np.testing.assert_array_equal(np.asarray(b), t)
    else:
        # the draws are the same bits; XLA:CPU contracts the multiply-adds into FMAs
        np.testing.assert_allclose(np.asarray(b), t, rtol=4 * np.finfo(dtype).eps, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_steps_draw_with_their_step_index(dtype):
    n = 200
    key = jax.random.key(11)
    y0 = np.linspace(0, 1, n).astype(dtype)
    y = np.asarray(ejax.function(walk)(key, y0))
    want = y0.copy()
    for s in range(3):
        want = want * dtype(0.5) + draws(key, s, n, 0, dtype)
    np.testing.assert_array_equal(y, want)


def test_interface_and_slots_name_the_random_key():
    assert three.slot("rng").kind == "random" and three.slot("rng").annotation() == "Random"
    assert "rng" in three.inputs and "rng" not in three.outputs
    ifc = three.interface("float32")
    s = ifc.slots[three.slots.index(three.slot("rng"))]
    assert s.role == "random" and s.dtype == "uint32"
    assert "rng: Random" in repr(three)
    # derived kernels keep it, with the primal's name
    assert reparam.adjoint(["mu", "sigma"]).slot("rng").kind == "random"
    assert reparam.tangent(["sigma"], with_primal=False).slot("rng").kind == "random"


def test_interpreter_draws_as_jax():
    n = 50
    key = jax.random.key(5)
    kd = [float(w) for w in np.asarray(jax.random.key_data(key))]
    outs = three._core.interpret(n, {"x": [0.0] * n, "rng": kd})[0]
    np.testing.assert_array_equal(outs["u"], draws(key, 0, n, 0, np.float64))
    assert_normal_close(np.asarray(outs["z"]), draws(key, 0, n, 1, np.float64, "normal"), np.float64)


# ------------------------------------------------------------------------- eagle


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("threshold", [None, 64, 256])
def test_eagle_launch_n_uses_fold_in_key_n(plans, dtype, threshold):
    n = 2000
    key = jax.random.key(123)
    x = np.zeros(n, dtype)
    u, z, w = (np.zeros(n, dtype) for _ in range(3))
    b = plans["three"].bind(x=x, rng=123, u=u, z=z, w=w)
    if threshold:
        b._core.serial_threshold = threshold  # chunks over the thread pool
    for launch in range(3):
        assert b.launches == launch
        b.launch()
        kn = jax.random.fold_in(key, launch)
        np.testing.assert_array_equal(u, draws(kn, 0, n, 0, dtype))
        assert_normal_close(z, draws(kn, 0, n, 1, dtype, "normal"), dtype)
        np.testing.assert_array_equal(w, draws(kn, 0, n, 2, dtype))


def test_eagle_bind_takes_keys_and_seeds(plans):
    n = 64
    outs = {}
    for name, rng in [("int", 2**33 + 5), ("typed", jax.random.key(2**33 + 5)),
                      ("raw", np.asarray(jax.random.key_data(jax.random.key(2**33 + 5))))]:
        u = np.zeros(n)
        plans["three"].bind(x=np.zeros(n), rng=rng, u=u, z=np.zeros(n), w=np.zeros(n)).launch()
        outs[name] = u
    want = draws(jax.random.fold_in(jax.random.key(2**33 + 5), 0), 0, n, 0, np.float64)
    for got in outs.values():
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(jax.random.key(5))), [0, 5])


def test_eagle_active_set_draws_by_global_sample(plans):
    n = 500
    key = jax.random.key(9)
    mask = np.zeros(n, bool)
    mask[::3] = True  # preset: skipped samples
    x = np.full(n, -1.0)
    b = plans["masked"].bind(rng=9, terminated=mask, x=x)
    b.launch()
    live = np.arange(n) % 3 != 0
    want0 = draws(jax.random.fold_in(key, 0), 0, n, 0, np.float64)
    np.testing.assert_array_equal(x[live], want0[live])
    assert np.all(x[~live] == -1.0)
    before = x.copy()
    alive = live & ~(want0 < 0.25)
    np.testing.assert_array_equal(mask, ~alive)
    b.launch()  # only the samples still live, numbered by their own index
    want1 = draws(jax.random.fold_in(key, 1), 0, n, 0, np.float64)
    np.testing.assert_array_equal(x[alive], want1[alive])
    np.testing.assert_array_equal(x[~alive], before[~alive])


def test_until_done_draws_fresh_numbers_each_launch(plans):
    n = 256
    key = jax.random.key(21)
    mask = np.zeros(n, bool)
    x = np.zeros(n)
    runner = eagle.until_done([plans["until"]], max_steps=100, rng=21, terminated=mask, x=x)
    report = runner.run()
    b = runner.items[0][1]
    ref, done, launches = np.zeros(n), np.zeros(n, bool), 0
    while not done.all():
        u = draws(jax.random.fold_in(key, launches), 0, n, 0, np.float64)
        ref = np.where(done, ref, ref + u)
        done = done | (ref > 1.5)
        launches += 1
    np.testing.assert_array_equal(x, ref)
    assert mask.all() and report.done and b.launches == launches == report.steps


def _jax_noisy_osc(x, v, dt, c, sigma, key, launches):
    for n in range(launches):
        z = jnp.asarray(draws(jax.random.fold_in(key, n), 0, x.shape[0], 0, np.float64, "normal"))
        x = x + dt * v
        v = v - dt * c * x + sigma * z
    return x, v


def test_graph_launches_draw_fresh_numbers_and_reverse_sweeps_reuse_them(plans):
    n, launches = 48, 5
    key = jax.random.key(31)
    r = np.random.default_rng(1)
    x0, v0 = r.uniform(-1, 1, n), r.uniform(-1, 1, n)
    x, v = x0.copy(), v0.copy()
    dt, c, sigma = 0.05, 0.7, 0.3
    g = eagle.Graph().add(plans["noisy_osc"].bind(dt=dt, c=c, sigma=sigma, rng=31, x=x, v=v), name="osc").build(record=True)
    g.launch(launches)
    xf, vf = _jax_noisy_osc(jnp.asarray(x0), jnp.asarray(v0), dt, c, sigma, key, launches)
    np.testing.assert_allclose(x, np.asarray(xf), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(v, np.asarray(vf), rtol=1e-12, atol=1e-13)
    seed = r.uniform(0.5, 1.5, n)
    grads = eagle.diff.reverse(g.record, {"osc.x": seed, "osc.v": seed})

    def loss(x0, v0, c, sigma):
        xf, vf = _jax_noisy_osc(x0, v0, dt, c, sigma, key, launches)
        return jnp.sum(seed * xf) + jnp.sum(seed * vf)

    gx, gv, gc, gs = jax.grad(loss, argnums=(0, 1, 2, 3))(jnp.asarray(x0), jnp.asarray(v0), c, sigma)
    np.testing.assert_allclose(grads["x"], np.asarray(gx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["v"], np.asarray(gv), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["osc.c"], float(gc), rtol=1e-10)
    np.testing.assert_allclose(grads["osc.sigma"], float(gs), rtol=1e-10)


# ------------------------------------------------------------------------- JAX transforms


def test_jit_and_vmap_equal_the_loop():
    n = 100
    f = ejax.function(three)
    keys = jax.random.split(jax.random.key(0), 4)
    x = jnp.zeros((4, n))
    got = jax.jit(jax.vmap(f))(x, keys)
    for b in range(4):
        one = f(x[b], keys[b])
        for g, o in zip(got, one):
            np.testing.assert_array_equal(np.asarray(g[b]), np.asarray(o))
    # batched planes, one key: each entry numbers its samples from 0, as the loop does
    got = jax.vmap(f, in_axes=(0, None))(x, keys[0])
    one = f(x[0], keys[0])
    for b in range(4):
        np.testing.assert_array_equal(np.asarray(got[0][b]), np.asarray(one[0]))


@pytest.mark.parametrize("kernel", [reparam, reparam_steps], ids=["steps1", "steps3"])
def test_reparameterized_gradients(kernel):
    n = 40
    key = jax.random.key(4)
    f = ejax.function(kernel, wrt=["mu", "sigma"])
    mu = jnp.linspace(-1.0, 1.0, n)
    args = (mu, 0.7) if kernel is reparam else (mu, 0.7, jnp.zeros(n))

    def loss(mu, sigma):
        y = f(mu, sigma, key, *args[2:])
        return jnp.sum(y * y)

    check_grads(loss, (mu, 0.7), order=2, modes=("fwd", "rev"))
    if kernel is reparam:  # the draws are constants for AD: d y / d sigma = z
        z = draws(key, 0, n, 0, np.float64, "normal")
        dy = jax.jacfwd(lambda s: f(mu, s, key))(0.7)
        assert_normal_close(np.asarray(dy), z, np.float64)


def test_derived_kernels_draw_the_primal_numbers():
    n = 30
    key = jax.random.key(8)
    kd = [float(w) for w in np.asarray(jax.random.key_data(key))]
    t = reparam_steps.tangent(["mu"], with_primal=True)
    ins = {"mu": list(np.linspace(0, 1, n)), "sigma": [0.3], "rng": kd, "y": [0.0] * n, "mu_dot": [0.0] * n}
    outs_t = t._core.interpret(n, ins)[0]
    outs_p = reparam_steps._core.interpret(n, {k: ins[k] for k in ("mu", "sigma", "rng", "y")})[0]
    np.testing.assert_array_equal(outs_t["y"], outs_p["y"])


# ------------------------------------------------------------------------- refusals


def _source_error(src: str) -> str:
    ns = {"hawk": hawk, "Random": Random, "Scalar": Scalar, "Mutable": Mutable, "Param": Param}
    with pytest.raises(hawk.KernelError) as err:
        exec(compile(src, "<rng-test>", "exec"), ns)
    return str(err.value)


def test_rng_used_as_a_number_is_refused_at_its_line():
    msg = _source_error("@hawk.kernel\ndef bad(rng: Random, y: Mutable[Scalar]):\n    y = rng + 1.0\n")
    assert "'bad'" in msg and ":3:" in msg and "Random" in msg and "uniform()" in msg


@pytest.mark.parametrize("body, words", [
    ("y = rng.gauss()", "the methods uniform, normal, exponential"),
    ("y = rng.normal(2.0)", "takes no arguments"),
    ("y = rng.normal(scale=2.0)", "keyword arguments are not supported"),
    ("rng = 1.0\n    y = 0.0", "cannot assign to Random"),
    ("y = rng.uniform", "call uniform()"),
])
def test_misuse_is_refused_with_the_fix(body, words):
    msg = _source_error(f"@hawk.kernel\ndef bad(rng: Random, y: Mutable[Scalar]):\n    {body}\n")
    assert "bad" in msg and words in msg


def test_two_random_parameters_are_refused():
    msg = _source_error("@hawk.kernel\ndef two(a: Random, b: Random, y: Mutable[Scalar]):\n    y = a.uniform()\n")
    assert "two Random parameters" in msg and "'a'" in msg and "'b'" in msg


def test_no_derivative_with_respect_to_rng():
    with pytest.raises(ValueError, match="Random"):
        three.tangent(["rng"])
    with pytest.raises(ValueError, match="no derivative"):
        ejax.function(three, wrt=["rng"])


def test_bind_without_a_key_or_with_a_bad_one(plans):
    n = 8
    z = lambda: np.zeros(n)  # noqa: E731
    with pytest.raises(TypeError, match="missing"):
        plans["three"].bind(x=z(), u=z(), z=z(), w=z())
    with pytest.raises(ValueError, match="threefry2x32"):
        plans["three"].bind(x=z(), rng=np.zeros(3, np.uint32), u=z(), z=z(), w=z())
    with pytest.raises(TypeError, match="bool"):
        plans["three"].bind(x=z(), rng=True, u=z(), z=z(), w=z())


# ------------------------------------------------------------------------- CUDA




@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
@pytest.mark.parametrize("make", [lambda: three, lambda: walk, lambda: masked, lambda: reparam_steps.adjoint(["mu", "sigma"]),
                                  lambda: reparam_steps.tangent(["mu"])], ids=["map", "steps", "masked", "adjoint", "tangent"])
def test_cuda_emission_compiles_with_nvrtc(make):
    k = make()
    assert "rp_subkey(" in k.cuda("float32")
    assert _core.nvrtc_check([k._core], "sm_80") == 2


# ------------------------------------------------------------------------- sharding


SHARD_SRC = '''
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import hawk
from hawk import Mutable, Random, Scalar
from eagle.frameworks import jax as eagle_jax

@hawk.kernel
def noise(x: Scalar, rng: Random, y: Mutable[Scalar]):
    y = x + rng.uniform()

assert len(jax.devices()) == 4
f = eagle_jax.function(noise)
key = jax.random.key(17)
x = jnp.zeros(1024)
whole = np.asarray(f(x, key))
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P("s"))
g = jax.jit(lambda x, k: f(x, k), in_shardings=(sh, None), out_shardings=sh)
hlo = g.lower(jax.device_put(x, sh), key).compile().as_text()
assert "all-gather" not in hlo, "a gather in the compiled HLO"
np.testing.assert_array_equal(np.asarray(g(jax.device_put(x, sh), key)), whole)
ks = jax.random.fold_in(key, 0)
want = jax.vmap(lambda i: jax.random.uniform(jax.random.fold_in(jax.random.fold_in(ks, i), 0), ()))(jnp.arange(1024, dtype=jnp.uint32))
np.testing.assert_array_equal(whole, np.asarray(want))
print("ok")
'''


def test_sharded_jit_numbers_samples_globally(tmp_path):
    """Under jit with the planes sharded over 4 host devices, each shard draws with its global
    sample indices: the result equals the unsharded call, bit for bit, with no gather."""
    run_on_host_devices(tmp_path, SHARD_SRC)


@hawk.kernel
def noise(x: Scalar, rng: Random, y: Mutable[Scalar]):
    y = x + rng.normal() + rng.uniform()


def _noise_here(n: int) -> np.ndarray:
    (plan,) = eagle.plan.auto([noise])
    y = np.zeros(n)
    b = plan.bind(x=np.zeros(n), rng=5, y=y)
    b._core.serial_threshold = 4096
    b.launch()
    b.launch()
    return y


THREADS_SRC = '''
import sys
import numpy as np
import eagle.plan
import hawk
from hawk import Mutable, Random, Scalar

@hawk.kernel
def noise(x: Scalar, rng: Random, y: Mutable[Scalar]):
    y = x + rng.normal() + rng.uniform()

(plan,) = eagle.plan.auto([noise])
n = 70001  # above the launcher's serial threshold: chunks over the pool
y = np.zeros(n)
b = plan.bind(x=np.zeros(n), rng=5, y=y)
b.launch()
b.launch()
np.save(sys.argv[1], y)
'''


@pytest.mark.parametrize("threads", ["1", "3"])
def test_thread_counts_draw_the_same_numbers(tmp_path, threads):
    import os
    import subprocess
    import sys

    path = tmp_path / "threads.py"
    path.write_text(THREADS_SRC)
    out = tmp_path / "y.npy"
    env = {**os.environ, "RAPTOR_NUM_THREADS": threads, "JAX_PLATFORMS": "cpu"}
    p = subprocess.run([sys.executable, str(path), str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    n = 70001
    k1 = jax.random.fold_in(jax.random.key(5), 1)  # the second launch
    zn, un = draws(k1, 0, n, 0, np.float64, "normal"), draws(k1, 0, n, 1, np.float64)
    got = np.load(out)
    # a sum of two draws: within NORMAL_RTOL of its terms' magnitudes, element by element
    err = np.abs(got - (zn + un)) / (np.abs(zn) + np.abs(un))
    assert err.max() <= NORMAL_RTOL[np.float64], (err.max(), int(err.argmax()))
    # and the same bits as this process's launches (its own thread count and chunks)
    here = _noise_here(n)
    np.testing.assert_array_equal(got, here)


def test_benchmark_quick_run_checks_its_numbers(tmp_path):
    """benchmarks/random_draws.py --quick: both sides' numbers are checked against each other before
    timing (every distribution, the bit-exact ones bit for bit), so exit 0 means they agreed; the timings are not checked."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "random_draws.py"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "RAPTOR_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    names = ("uniform", "normal", "exponential", "bernoulli", "lognormal", "gamma", "poisson", "randint", "truncated_normal")
    rows = [ln.split() for ln in p.stdout.splitlines() if ln.split() and ln.split()[0] in names]
    assert "hawk / jax" in p.stdout and len(rows) == 2 * len(names) and all(r[-1].endswith("x") for r in rows)


@hawk.kernel(steps=60)
def uneven_walk(rate: Scalar, rng: Random, terminated: Terminated, x: Mutable[Scalar], hits: Mutable[Scalar]):
    # each sample stops at its own step (about 1 / rate of them), in blocks of 64 on the host
    x = x + rate * rng.uniform()
    hits = hits + 1.0
    terminated = x > 1.0


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("threshold", [None, 64])
def test_stepping_blocks_whose_samples_stop_unevenly_equal_the_interpreter(module_cache_dir, dtype, threshold):
    """A 60-step kernel whose samples stop at steps 2 to 60 (and some never), reading a plane
    and drawing in every step: every sample's planes, draws (by global sample and step), mask
    and the finished count equal the reference interpreter's bit for bit, with samples masked
    on entry skipped, over several chunks."""
    (plan,) = eagle.plan.auto([uneven_walk], cache_dir=module_cache_dir)
    n = 1000  # not a multiple of 64
    rng = np.random.default_rng(4)
    rate = rng.uniform(0.02, 0.9, n).astype(dtype)
    mask = rng.random(n) < 0.1
    x = np.zeros(n, dtype)
    hits = np.zeros(n, dtype)
    term = mask.copy()
    b = plan.bind(rate=rate, rng=77, terminated=term, x=x, hits=hits)
    if threshold:
        b._core.serial_threshold = threshold
    m_in = mask.copy()
    got_finished = b.launch()
    kd = [float(w) for w in np.asarray(jax.random.key_data(jax.random.fold_in(jax.random.key(77), 0)))]
    outs, _, m_out, finished, err = uneven_walk._core.interpret(
        n, {"rate": [float(r) for r in rate], "rng": kd, "x": [0.0] * n, "hits": [0.0] * n},
        mask=list(m_in.astype(np.uint8)), float32=dtype == np.float32)
    assert err[0] == 0
    np.testing.assert_array_equal(x, np.asarray(outs["x"], dtype))
    np.testing.assert_array_equal(hits, np.asarray(outs["hits"], dtype))
    np.testing.assert_array_equal(term, np.asarray(m_out, bool))
    assert got_finished == finished
    steps = np.asarray(outs["hits"])[~m_in]
    assert steps.min() <= 4 and steps.max() == 60 and len(np.unique(steps)) > 20
