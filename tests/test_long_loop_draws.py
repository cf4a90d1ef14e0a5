"""Random draws inside long loops (docs/language.md "Long loops" and "Random numbers"): a loop of
more than 4096 iterations runs as a loop, and its draws are numbered as unrolling would number
them: draw k of iteration t of a loop that starts after `before` draws and makes d draws per
iteration is draw before + t * d + k of the step, and the draws after the loop go on from
before + K * d. Every number is checked against jax.random of that index (the same
`draws` helper as tests/test_random.py), through the interpreter, a host build and the JAX
bridge, in both dtypes; the reparameterized gradient through such a loop against the sum of
its normals.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import eagle.plan
import hawk
from eagle.frameworks import jax as ejax
from hawk import Mutable, Param, Random, Scalar

from conftest import assert_sum_close, nvrtc_missing, outputs_for
from test_random import NORMAL_RTOL, draws

jax.config.update("jax_enable_x64", True)

DTYPES = (np.float32, np.float64)
N = 48
K = 5000


@hawk.kernel
def noisy_walk(x: Scalar, sigma: Param, rng: Random, y: Mutable[Scalar], taken: Mutable[Scalar],
               after: Mutable[Scalar]):
    s = x + rng.uniform()  # draw 0
    c = 0.0
    for _ in range(K):  # draws 1 + 2t and 2 + 2t
        s = s + sigma * rng.normal()
        if rng.uniform() < 0.2:
            break
        c = c + 1.0
    y = s
    taken = c
    after = rng.uniform()  # draw 1 + 2K


@hawk.kernel
def nested(x: Scalar, rng: Random, y: Mutable[Scalar]):
    s = x
    for i in range(K):  # d = K + 1 draws per outer iteration
        for _ in range(K):  # inner draw t of outer o: o * (K + 1) + t
            s = s + rng.uniform()
            if s > 2.0 * (float(i) + 1.0):
                break
        s = s + rng.uniform()  # o * (K + 1) + K
        if s > 5.0:
            break
    y = s


class Draws:
    """jax.random's draws of every sample by index j, made when first asked for."""

    def __init__(self, key, n: int, dtype) -> None:
        self.key, self.n, self.dtype = key, n, dtype
        self.u: dict[int, np.ndarray] = {}
        self.z: dict[int, np.ndarray] = {}

    def uniform(self, j: int) -> np.ndarray:
        if j not in self.u:
            self.u[j] = draws(self.key, 0, self.n, j, self.dtype)
        return self.u[j]

    def normal(self, j: int) -> np.ndarray:
        if j not in self.z:
            self.z[j] = draws(self.key, 0, self.n, j, self.dtype, "normal")
        return self.z[j]


def ref_walk(x, sigma, d: Draws, dtype):
    f = dtype
    y, taken, after, zsum = (np.zeros(len(x), dtype) for _ in range(4))
    for i in range(len(x)):
        s = f(x[i] + d.uniform(0)[i])
        c, zs = f(0.0), 0.0
        for t in range(K):
            z = d.normal(1 + 2 * t)[i]
            s = f(s + f(f(sigma) * z))
            zs += float(z)
            if d.uniform(2 + 2 * t)[i] < f(0.2):
                break
            c = f(c + f(1.0))
        y[i], taken[i], after[i], zsum[i] = s, c, d.uniform(1 + 2 * K)[i], zs
    return y, taken, after, zsum


def ref_nested(x, d: Draws, dtype):
    f = dtype
    y = np.zeros(len(x), dtype)
    for i in range(len(x)):
        s = f(x[i])
        for o in range(K):
            for t in range(K):
                s = f(s + d.uniform(o * (K + 1) + t)[i])
                if s > f(2.0) * (f(o) + f(1.0)):
                    break
            s = f(s + d.uniform(o * (K + 1) + K)[i])
            if s > f(5.0):
                break
        y[i] = s
    return y


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    ks = [noisy_walk, nested, noisy_walk.adjoint(["sigma"])]
    return {p.kernel.name: p for p in eagle.plan.auto(ks, targets=("host",), cache_dir=module_cache_dir)}


def test_the_loop_is_a_loop_and_its_draws_take_the_iteration():
    ir = noisy_walk.ir
    assert ir.count("loop_begin x5000") == 1
    assert "rand_normal_at" in ir and "rand_uniform_at" in ir
    assert noisy_walk._core.num_values() < 60


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_draws_in_a_long_loop_are_numbered_as_unrolling_would(plans, dtype):
    key = jax.random.key(7)
    x = np.linspace(-1.0, 1.0, N).astype(dtype)
    want_y, want_taken, want_after, _ = ref_walk(x, dtype(0.3), Draws(key, N, dtype), dtype)
    assert want_taken.max() >= 8 and want_taken.min() == 0  # samples leave at their own iteration
    y, taken, after = ejax.function(noisy_walk)(x, 0.3, key)  # a JAX call draws with its key
    np.testing.assert_array_equal(np.asarray(taken), want_taken)  # the uniforms are the same bits
    np.testing.assert_array_equal(np.asarray(after), want_after)
    tol = 50 * NORMAL_RTOL[dtype]
    np.testing.assert_allclose(np.asarray(y), want_y, rtol=tol, atol=tol)
    # launch 0 of a bound kernel draws with fold_in(key, 0)
    k0 = jax.random.fold_in(key, 0)
    want_y, want_taken, want_after, _ = ref_walk(x, dtype(0.3), Draws(k0, N, dtype), dtype)
    out = outputs_for(noisy_walk, N, dtype)
    plans["noisy_walk"].bind(x=x, sigma=0.3, rng=key, **out).launch()
    np.testing.assert_array_equal(out["taken"], want_taken)
    np.testing.assert_array_equal(out["after"], want_after)
    np.testing.assert_allclose(out["y"], want_y, rtol=tol, atol=tol)


def test_the_xla_lowering_draws_the_same_numbers_in_both_dtypes():
    from eagle.frameworks import _jax_lowering, _jax_xla

    key = jax.random.key(7)
    x = np.linspace(-1.0, 1.0, N)
    ffi = ejax.function(noisy_walk, lowering="ffi")(x, 0.3, key)
    xla = ejax.function(noisy_walk, lowering="xla")(x, 0.3, key)
    np.testing.assert_array_equal(np.asarray(xla[1]), np.asarray(ffi[1]))  # the same uniforms
    np.testing.assert_array_equal(np.asarray(xla[2]), np.asarray(ffi[2]))
    np.testing.assert_allclose(np.asarray(xla[0]), np.asarray(ffi[0]), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(ejax.function(nested, lowering="xla")(x[:16], key)),
                                  np.asarray(ejax.function(nested, lowering="ffi")(x[:16], key)))
    # float32: the draws' indices are integers on this path too (they were floats of the
    # dtype, exact to 2^24 only, and refused), so the uniforms are the FFI path's bit for bit
    ops = _jax_xla.op_list(noisy_walk._core)
    assert _jax_xla.supported(ops, np.float32)
    assert _jax_lowering.choose(ops, N, "cpu", np.float32) == "xla"
    x32 = x.astype(np.float32)
    ffi = ejax.function(noisy_walk, lowering="ffi")(x32, np.float32(0.3), key)
    xla = ejax.function(noisy_walk, lowering="xla")(x32, np.float32(0.3), key)
    assert [a.dtype for a in xla] == [a.dtype for a in ffi]
    np.testing.assert_array_equal(np.asarray(xla[1]), np.asarray(ffi[1]))
    np.testing.assert_array_equal(np.asarray(xla[2]), np.asarray(ffi[2]))
    np.testing.assert_allclose(np.asarray(xla[0]), np.asarray(ffi[0]), rtol=1e-5, atol=1e-5)


def test_the_interpreter_and_the_build_agree_bit_for_bit(plans):
    key = jax.random.key(3)
    x = np.linspace(-1.0, 1.0, N)
    out = outputs_for(noisy_walk, N, np.float64)
    plans["noisy_walk"].bind(x=x, sigma=0.3, rng=key, **out).launch()
    kd = [float(w) for w in np.asarray(jax.random.key_data(jax.random.fold_in(key, 0)))]
    got = noisy_walk._core.interpret(N, {"x": list(x), "sigma": [0.3], "rng": kd})[0]
    for name in ("y", "taken", "after"):
        np.testing.assert_array_equal(out[name], got[name])


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_draws_in_nested_long_loops(plans, dtype):
    key = jax.random.key(11)
    n = 16
    x = np.linspace(0.0, 1.0, n).astype(dtype)
    want = ref_nested(x, Draws(key, n, dtype), dtype)
    got = np.asarray(ejax.function(nested)(x, key))  # one output: one array
    np.testing.assert_array_equal(got, want)


def test_a_long_loop_and_its_unrolled_twin_draw_the_same_numbers(tmp_path):
    # K = 60 unrolls, K = 4100 is a loop; every sample leaves within 60 iterations, so the
    # values inside the loop are the same draws (only the numbering after it differs).
    src = (
        "import hawk\nfrom hawk import Scalar, Random, Mutable\n"
        "@hawk.kernel\n"
        "def twin{K}(x: Scalar, rng: Random, y: Mutable[Scalar]):\n"
        "    s = x\n"
        "    for _ in range({K}):\n"
        "        s = s + rng.uniform()\n"
        "        if s > 3.0:\n"
        "            break\n"
        "    y = s\n"
    )
    ys = []
    for k in (60, 4100):
        ns: dict = {}
        path = tmp_path / f"twin{k}.py"
        path.write_text(src.format(K=k))
        exec(compile(path.read_text(), str(path), "exec"), ns)
        ker = ns[f"twin{k}"]
        assert (ker.ir.count("loop_begin") == 1) == (k > 4096)
        ys.append(np.asarray(ejax.function(ker)(np.linspace(0.0, 1.0, 20), jax.random.key(2))))
    np.testing.assert_array_equal(ys[0], ys[1])


def test_reparameterized_gradient_through_a_long_loop():
    key = jax.random.key(5)
    x = np.linspace(-1.0, 1.0, N)
    _, _, _, zsum = ref_walk(x, 0.3, Draws(key, N, np.float64), np.float64)
    f = ejax.function(noisy_walk, wrt=("x", "sigma"))
    g = jax.grad(lambda s: f(x, s, key)[0].sum())(0.3)
    assert_sum_close(g, zsum, rtol=1e-12)
    gx = jax.grad(lambda x: f(x, 0.3, key)[0].sum())(x)
    np.testing.assert_array_equal(np.asarray(gx), np.ones(N))


def test_a_loop_drawing_more_than_2_to_the_32_numbers_is_refused():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def greedy(x: Scalar, rng: Random, y: Mutable[Scalar]):
            s = x
            for _ in range(2 ** 31):
                s = s + rng.uniform() + rng.uniform() + rng.uniform()
            y = s
    msg = str(e.value)
    assert "'greedy'" in msg and "3 numbers in each of its 2147483648 iterations" in msg and "steps=k" in msg


@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
def test_cuda_emission_compiles_with_nvrtc():
    from raptor_core import _core

    ks = [noisy_walk, nested, noisy_walk.adjoint(["sigma"])]
    assert "rp_subkey(key_rng" in noisy_walk._core.cuda("float64")
    assert _core.nvrtc_check([k._core for k in ks], "sm_80") == 2 * len(ks)
