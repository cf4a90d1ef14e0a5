"""hawk.scatter(t)[i] += v: scatter-adds into a shared Mutable[Table] (docs/language.md
"Scatter-adds").

Checked here:
  1. values against np.add.at (the bound values plus every sample's adds) in float64 (1e-12
     relative to the sum of magnitudes) and float32, with many samples on one entry, a Scalar
     table and a Table[Vector[3]], a float index rounded down and an integer plane index, an
     add under `if`;
  2. the same bits run to run, serial or split over the pool, and in processes of 1, 2 and 3
     threads;
  3. an index out of range: the named table error, the caller's array unchanged;
  4. derivatives through the JAX bridge on both lowerings against jax.numpy's `.at[i].add`
     (vjp, jvp) and check_grads at order 2;
  5. the reference interpreter against the compiled kernel, NVRTC compilation of the CUDA
     emission, and the refusals pinned.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import eagle.frameworks.jax as eagle_jax
import hawk
import hawk.math as hm
from conftest import nvrtc_missing, plan_kernels, run_on_host_devices, same_output_over_thread_counts
from hawk import Matrix, Mutable, Scalar, Table, Vector, int32

jax.config.update("jax_enable_x64", True)


@hawk.kernel
def hist(x: Scalar, w: Scalar, h: Mutable[Table[Scalar]]):
    hawk.scatter(h)[x] += w * w + hm.sin(w)


@hawk.kernel
def deposit(i: Scalar[int32], q: Scalar, v: Vector[3], f: Mutable[Table[Vector[3]]], y: Mutable[Scalar]):
    y = q * 2.0
    if q > 0.0:
        hawk.scatter(f)[i] += q * v


@hawk.kernel
def deposit_x(x: Scalar, q: Scalar, v: Vector[3], f: Mutable[Table[Vector[3]]]):
    if q > 0.0:
        hawk.scatter(f)[x] += q * v


def _ref_hist(x, w, h0):
    out = np.array(h0, dtype=np.float64)
    np.add.at(out, np.floor(x).astype(np.int64), w * w + np.sin(w))
    return out


def _scale_hist(x, w, h0):
    s = np.abs(np.asarray(h0, np.float64)).copy()
    np.add.at(s, np.floor(x).astype(np.int64), np.abs(w * w + np.sin(w)))
    return s


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels([hist, deposit], module_cache_dir)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 100, 5000, 70000])
def test_hist_matches_add_at(plans, dtype, n):
    """Collisions everywhere: n samples into 7 entries (one entry takes about n/7)."""
    rng = np.random.default_rng(n)
    m = 7
    x = rng.uniform(0, m, n).astype(dtype)
    w = rng.normal(size=n).astype(dtype)
    h0 = rng.normal(size=m).astype(dtype)
    h = h0.copy()
    plans["hist"].bind(x=x, w=w, h=h).launch()
    want = _ref_hist(x.astype(np.float64), w.astype(np.float64), h0)
    scale = _scale_hist(x.astype(np.float64), w.astype(np.float64), h0)
    tol = 1e-12 if dtype == np.float64 else 2e-6
    assert h.dtype == dtype
    assert np.all(np.abs(h - want) <= tol * scale + 1e-300), (h, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vector_table_int_index_under_if(plans, dtype):
    """Mutable[Table[Vector[3]]] indexed by an int32 plane, added only where q > 0."""
    rng = np.random.default_rng(3)
    n, m = 9000, 5
    i = rng.integers(0, m, n).astype(np.int32)
    q = rng.normal(size=n).astype(dtype)
    v = rng.normal(size=(3, n)).astype(dtype)
    f0 = rng.normal(size=(m, 3)).astype(dtype)
    f, y = f0.copy(), np.zeros(n, dtype)
    plans["deposit"].bind(i=i, q=q, v=v, f=f, y=y).launch()
    q64, v64 = q.astype(np.float64), v.astype(np.float64)
    add = np.where(q64 > 0, q64, 0.0)[:, None] * v64.T
    want = f0.astype(np.float64).copy()
    np.add.at(want, i, add)
    scale = np.abs(f0.astype(np.float64)).copy()
    np.add.at(scale, i, np.abs(add))
    tol = 1e-12 if dtype == np.float64 else 2e-6
    assert np.all(np.abs(f - want) <= tol * scale)
    np.testing.assert_array_equal(y, q * dtype(2.0))


def _bits(plans, threshold: int) -> list[str]:
    out = []
    for n in (5000, 70000, 300000):
        rng = np.random.default_rng(n)
        x, w = rng.uniform(0, 13, n), rng.normal(size=n)
        h = np.linspace(-1, 1, 13)
        b = plans["hist"].bind(x=x, w=w, h=h)
        b._core.serial_threshold = threshold
        b.launch()
        out += [float(t).hex() for t in h]
    return out


def test_same_bits_serial_split_and_run_to_run(plans):
    serial = _bits(plans, 1 << 40)
    assert _bits(plans, 64) == serial
    assert _bits(plans, 64) == serial


THREADS_SRC = '''
import sys, numpy as np, hawk, hawk.math as hm, eagle.plan
from hawk import Mutable, Scalar, Table

@hawk.kernel
def hist(x: Scalar, w: Scalar, h: Mutable[Table[Scalar]]):
    hawk.scatter(h)[x] += w * w + hm.sin(w)

(plan,) = eagle.plan.auto([hist], targets=("host",), cache_dir=sys.argv[1])
out = []
for n in (5000, 70000, 300000):
    rng = np.random.default_rng(n)
    x, w = rng.uniform(0, 13, n), rng.normal(size=n)
    h = np.linspace(-1, 1, 13)
    b = plan.bind(x=x, w=w, h=h)
    b._core.serial_threshold = 64
    b.launch()
    out += [float(t).hex() for t in h]
print(" ".join(out))
'''


def test_same_bits_whatever_the_thread_count(tmp_path):
    """Processes of 1, 2 and 3 threads give the same bits, within 1e-12 of np.add.at."""
    out = same_output_over_thread_counts(tmp_path, THREADS_SRC)
    got = np.array([float.fromhex(h) for h in out.split()]).reshape(3, 13)
    for j, n in enumerate((5000, 70000, 300000)):
        rng = np.random.default_rng(n)
        x, w = rng.uniform(0, 13, n), rng.normal(size=n)
        h0 = np.linspace(-1, 1, 13)
        idx = np.floor(x).astype(np.int64)
        for e in range(13):  # each entry against math.fsum of its terms
            terms = [h0[e], *(w[idx == e] ** 2 + np.sin(w[idx == e]))]
            assert abs(got[j, e] - math.fsum(terms)) <= 1e-12 * math.fsum(abs(t) for t in terms)


def test_out_of_range_is_the_table_error_and_writes_nothing(plans):
    x = np.array([0.5, 3.2, 7.0, 1.0])  # 7.0: entry 7 of a 7-entry table
    w = np.ones(4)
    h0 = np.arange(7.0)
    h = h0.copy()
    with pytest.raises(RuntimeError, match=r"kernel 'hist': table 'h' index 7 is out of range \[0, 7\) at sample 2"):
        plans["hist"].bind(x=x, w=w, h=h).launch()
    np.testing.assert_array_equal(h, h0)
    # NaN rounds to no index: the same error, nothing written
    with pytest.raises(RuntimeError, match=r"table 'h' index -1 is out of range"):
        plans["hist"].bind(x=np.array([np.nan]), w=np.ones(1), h=h).launch()
    np.testing.assert_array_equal(h, h0)
    # the one-call form writes into a copy, copied back on success only
    with pytest.raises(RuntimeError, match=r"table 'h' index 7 is out of range"):
        hist(x, w, h)
    np.testing.assert_array_equal(h, h0)


@pytest.mark.parametrize("lowering", ["xla", "ffi"])
def test_jax_values_and_derivatives(lowering):
    rng = np.random.default_rng(11)
    n, m = 300, 7
    x = jnp.asarray(rng.uniform(0, m, n))
    w = jnp.asarray(rng.normal(size=n))
    h0 = jnp.asarray(rng.normal(size=m))
    idx = jnp.floor(x).astype(jnp.int32)
    f = eagle_jax.function(hist, lowering=lowering)

    def g(w, h):
        return f(x, w, h)

    def ref(w, h):
        return h.at[idx].add(w * w + jnp.sin(w))

    np.testing.assert_allclose(g(w, h0), ref(w, h0), rtol=1e-13, atol=1e-13)
    ct = jnp.asarray(rng.normal(size=m))
    got = jax.vjp(g, w, h0)[1](ct)
    want = jax.vjp(ref, w, h0)[1](ct)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
    tw, th = jnp.asarray(rng.normal(size=n)), jnp.asarray(rng.normal(size=m))
    np.testing.assert_allclose(jax.jvp(g, (w, h0), (tw, th))[1], jax.jvp(ref, (w, h0), (tw, th))[1], rtol=1e-13, atol=1e-13)
    # the table's tangent alone (the values added held fixed) passes through
    np.testing.assert_allclose(jax.jvp(lambda h: g(w, h), (h0,), (th,))[1], th, rtol=0, atol=0)
    check_grads(g, (w, h0), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("lowering", ["xla", "ffi"])
def test_jax_vector_table(lowering):
    rng = np.random.default_rng(12)
    n, m = 200, 4
    x = jnp.asarray(rng.uniform(0, m, n))  # (the "xla" lowering reads no integer planes yet)
    i = jnp.floor(x).astype(jnp.int32)
    q = jnp.asarray(rng.normal(size=n))
    v = jnp.asarray(rng.normal(size=(3, n)))
    f0 = jnp.asarray(rng.normal(size=(m, 3)))
    fn = eagle_jax.function(deposit_x, lowering=lowering)

    def g(q, v, f):
        return fn(x, q, v, f)

    def ref(q, v, f):
        return f.at[i].add(jnp.where(q > 0, q, 0.0)[:, None] * v.T)

    np.testing.assert_allclose(g(q, v, f0), ref(q, v, f0), rtol=1e-13, atol=1e-13)
    ct = jnp.asarray(rng.normal(size=(m, 3)))
    for a, b in zip(jax.vjp(g, q, v, f0)[1](ct), jax.vjp(ref, q, v, f0)[1](ct)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
    check_grads(g, (q, v, f0), order=2, modes=("fwd", "rev"))


def test_jax_float32():
    rng = np.random.default_rng(13)
    n, m = 500, 6
    x = rng.uniform(0, m, n).astype(np.float32)
    w = rng.normal(size=n).astype(np.float32)
    h0 = rng.normal(size=m).astype(np.float32)
    want = _ref_hist(x.astype(np.float64), w.astype(np.float64), h0)
    scale = _scale_hist(x.astype(np.float64), w.astype(np.float64), h0)
    for lowering in ("xla", "ffi"):
        got = np.asarray(eagle_jax.function(hist, lowering=lowering)(x, w, h0))
        assert got.dtype == np.float32
        assert np.all(np.abs(got - want) <= 2e-6 * scale)


def test_interpreter_matches_compiled(plans):
    rng = np.random.default_rng(5)
    n, m = 2000, 9
    x, w, h0 = rng.uniform(0, m, n), rng.normal(size=n), rng.normal(size=m)
    outs = hist._core.interpret(n, {"x": list(x), "w": list(w), "h": list(h0)})[0]
    h = h0.copy()
    plans["hist"].bind(x=x, w=w, h=h).launch()
    scale = _scale_hist(x, w, h0)
    assert np.all(np.abs(np.asarray(outs["h"]) - h) <= 1e-12 * scale)
    assert np.all(np.abs(np.asarray(outs["h"]) - _ref_hist(x, w, h0)) <= 1e-12 * scale)


def test_ir_keeps_the_scatter():
    """The passes keep each add (no folding of stores into a TableSum): one store per component."""
    assert "table_sum h width=1 inout of $2" in hist.ir
    assert hist.ir.count("store h[0] at") == 1
    assert "table_sum f width=3 inout of $3" in deposit.ir
    assert sum(deposit.ir.count(f"store f[{c}] at") for c in range(3)) == 3


@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
def test_cuda_compiles():
    """The CUDA emission (per-block partial tables, added in block order onto the bound values
    by _finish) compiles, for the kernels and their derivatives."""
    from raptor_core import _core

    for k in (hist, deposit, hist.tangent(["w"]), hist.adjoint(["w"]), deposit.adjoint(["q", "v"])):
        assert _core.nvrtc_check([k._core], "sm_80") == 2


def _refused(src_fn, match: str, **kw) -> None:
    with pytest.raises(hawk.KernelError, match=match):
        hawk.kernel(**kw)(src_fn)._core


def test_refusals():
    def not_mutable(x: Scalar, t: Table[Scalar], y: Mutable[Scalar]):
        y = x
        hawk.scatter(t)[x] += 1.0

    _refused(not_mutable, r"kernel 'not_mutable' \(.*test_scatter\.py:\d+:\d+\): hawk\.scatter\('t'\): the table is declared Table\[\.\.\.\], which a kernel only reads; declare it Mutable\[Table\[Scalar\]\]")

    def assign(x: Scalar, t: Mutable[Table[Scalar]]):
        hawk.scatter(t)[x] = 1.0

    _refused(assign, r"kernel 'assign' \(.*test_scatter\.py:\d+:\d+\): `hawk\.scatter\(t\)\[i\] = v` is not supported: a scatter adds, write `hawk\.scatter\(t\)\[i\] \+= v`")

    def minus(x: Scalar, t: Mutable[Table[Scalar]]):
        hawk.scatter(t)[x] -= 1.0

    _refused(minus, r"`hawk\.scatter\(t\)\[i\] -= v` is not supported: a scatter adds, write `hawk\.scatter\(t\)\[i\] \+= v` \(here: `\+= -v`\)")

    def vec_index(v: Vector[2], t: Mutable[Table[Scalar]]):
        hawk.scatter(t)[v] += 1.0

    _refused(vec_index, r"hawk\.scatter\(t\)\[i\]: the index must be an integer or a Scalar \(rounded down\), got a Vector\[2\]")

    def vec_value(x: Scalar, v: Vector[2], t: Mutable[Table[Vector[3]]]):
        hawk.scatter(t)[x] += v

    _refused(vec_value, r"'t' holds Vector\[3\] entries, so v must be a Vector\[3\], got a Vector\[2\]")

    def reads(x: Scalar, t: Mutable[Table[Scalar]], y: Mutable[Scalar]):
        hawk.scatter(t)[x] += 1.0
        y = t.at(x)

    _refused(reads, r"'t' is a Mutable\[Table\] scatter target: the body only adds to it")

    def rebind(x: Scalar, t: Mutable[Table[Scalar]]):
        t = x

    _refused(rebind, r"cannot assign to 't', a Mutable\[Table\] scatter target: add into its entries with `hawk\.scatter\(t\)\[i\] \+= v`")

    def component(x: Scalar, t: Mutable[Table[Scalar]]):
        t[0] = x

    _refused(component, r"'t' is a Mutable\[Table\] scatter target; only a Vector's or a Matrix's components can be assigned")

    def two(x: Scalar, t: Mutable[Table[Scalar]]):
        hawk.scatter(t, t)[x] += 1.0

    _refused(two, r"hawk\.scatter\(t\) takes one argument, a Mutable\[Table\] parameter")

    def of_a_plane(x: Scalar, t: Mutable[Table[Scalar]]):
        hawk.scatter(x)[x] += 1.0

    _refused(of_a_plane, r"hawk\.scatter\(t\) takes a kernel parameter declared Mutable\[Table\[Scalar\]\] or Mutable\[Table\[Vector\[k\]\]\]")

    def value(x: Scalar, t: Mutable[Table[Scalar]], y: Mutable[Scalar]):
        y = hawk.scatter(t)

    _refused(value, r"hawk\.scatter\(t\) is only the target of an add")

    def stepped(x: Scalar, t: Mutable[Table[Scalar]]):
        hawk.scatter(t)[x] += 1.0

    _refused(stepped, r"a Mutable\[Table\] scatter target in a kernel of steps=2 is not supported", steps=2)

    def long_loop(x: Scalar, t: Mutable[Table[Scalar]]):
        for k in range(5000):
            hawk.scatter(t)[x] += 1.0

    _refused(long_loop, r"hawk\.scatter inside a `for` loop of more than the unrolled iterations \(the loop at line \d+\) is not supported")

    with pytest.raises(hawk.KernelError, match=r"Mutable\[Table\[\.\.\.\]\] \(a scatter target, hawk\.scatter\(t\)\[i\] \+= v\) takes Table\[Scalar\] or Table\[Vector\[k\]\]"):
        def matrix(x: Scalar, t: Mutable[Table[Matrix[2, 2]]]):
            pass

        hawk.kernel(matrix)._core
    with pytest.raises(TypeError, match=r"hawk\.scatter can only be used inside a @hawk\.kernel body"):
        hawk.scatter(np.ones(3))


def test_adjoint_refuses_the_target_in_wrt():
    with pytest.raises(ValueError, match=r"'h' is a scatter target \(Mutable\[Table\]\)"):
        hist.adjoint(["h"])


SHARD_SRC = '''
import numpy as np, jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import hawk, hawk.math as hm
from hawk import Mutable, Scalar, Table
from eagle.frameworks import jax as eagle_jax

@hawk.kernel
def hist(x: Scalar, w: Scalar, h: Mutable[Table[Scalar]]):
    hawk.scatter(h)[x] += w * w + hm.sin(w)

assert len(jax.devices()) == 4
rng = np.random.default_rng(0)
x = jnp.asarray(rng.uniform(0, 7, 4096))
w = jnp.asarray(rng.normal(size=4096))
h0 = jnp.asarray(rng.normal(size=7))
want = h0.at[jnp.floor(x).astype(jnp.int32)].add(w * w + jnp.sin(w))
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P("s"))
for lowering in ("ffi", "xla"):
    f = eagle_jax.function(hist, lowering=lowering)
    g = jax.jit(lambda x, w, h: f(x, w, h), in_shardings=(sh, sh, None))
    part = g(jax.device_put(x, sh), jax.device_put(w, sh), h0)
    np.testing.assert_allclose(np.asarray(part), np.asarray(want), rtol=1e-12, atol=1e-12)
print("ok")
'''


def test_sharded_scatter_is_the_whole_scatter(tmp_path):
    """Under jit with the planes sharded over 4 host devices, both lowerings give the whole
    call's table: the bound values enter once (the first shard's), the shards' adds psum'ed."""
    run_on_host_devices(tmp_path, SHARD_SRC)


def test_eagle_diff_refuses_a_scatter_kernel(plans):
    """eagle.diff.reverse names the node and the target (JAX differentiates it instead)."""
    import eagle
    import eagle.diff

    x, w, h = np.array([0.5, 2.5]), np.ones(2), np.zeros(7)
    g = eagle.Graph().add(plans["hist"].bind(x=x, w=w, h=h), name="hg").build(record=True)
    g.launch(2)
    a = 2 * (1.0 + np.sin(1.0))  # two launches, each adding w * w + sin(w) at entries 0 and 2
    np.testing.assert_allclose(h, [a, 0, a, 0, 0, 0, 0], rtol=1e-15)
    with pytest.raises(ValueError, match=r"eagle\.diff\.reverse: node 'hg' \(kernel 'hist'\) scatters into 'h' \(hawk\.scatter\), "
                                         r"which this reverse sweep does not differentiate yet"):
        eagle.diff.reverse(g.record, {"hg.h": np.ones(7)})


@pytest.mark.parametrize("lowering", ["xla", "ffi"])
def test_vmap(lowering):
    """jax.vmap over the values added (one table per batch entry) and over the table."""
    rng = np.random.default_rng(14)
    n, m, b = 50, 5, 3
    x = jnp.asarray(rng.uniform(0, m, n))
    w = jnp.asarray(rng.normal(size=(b, n)))
    h0 = jnp.asarray(rng.normal(size=(b, m)))
    idx = jnp.floor(x).astype(jnp.int32)
    f = eagle_jax.function(hist, lowering=lowering)
    got = jax.vmap(lambda w, h: f(x, w, h))(w, h0)
    want = jax.vmap(lambda w, h: h.at[idx].add(w * w + jnp.sin(w)))(w, h0)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    got1 = jax.vmap(lambda w: f(x, w, h0[0]))(w)
    np.testing.assert_allclose(got1, want - h0 + h0[0], rtol=1e-12, atol=1e-12)


def test_ffi_aliased_and_donated_targets():
    """The "ffi" custom call adds into its result buffer: an undonated argument is copied into it
    first, an intermediate or a donated argument is aliased to it; all give .at[i].add."""
    rng = np.random.default_rng(15)
    n, m = 400, 9
    x = jnp.asarray(rng.uniform(0, m, n))
    w = jnp.asarray(rng.normal(size=n))
    h0 = jnp.asarray(rng.normal(size=m))
    idx = jnp.floor(x).astype(jnp.int32)
    f = eagle_jax.function(hist, lowering="ffi")
    add = w * w + jnp.sin(w)
    want = (2.0 * h0).at[idx].add(add)
    before = np.asarray(h0).copy()
    np.testing.assert_allclose(jax.jit(lambda w, h: f(x, w, 2.0 * h))(w, h0), want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(jax.jit(lambda w, h: f(x, w, h))(w, 2.0 * h0), want, rtol=1e-13, atol=1e-13)
    donated = jax.jit(lambda w, h: f(x, w, h), donate_argnums=1)(w, jnp.array(2.0 * h0))
    np.testing.assert_allclose(donated, want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(jax.jit(lambda w, h: f(x, w, h))(w, h0), h0.at[idx].add(add), rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(np.asarray(h0), before)  # an undonated argument's buffer is not written
