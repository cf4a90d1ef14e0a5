"""eagle's host runtime (docs/runtime.md): stepping kernels and the Terminated mask, tables, the
active set, thread splits, in-out planes, binding by reference, graphs, the plan cache and
the generated C++'s source comments. Every number is checked against plain NumPy."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import eagle
import eagle.plan
import hawk
from hawk import Guard, Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import norm, vec, where

from conftest import plan_kernels

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- kernels


def make_osc(k: int, active_set: bool = False):
    guard = Guard(active_set=True) if active_set else None

    @hawk.kernel(steps=k, guard=guard)
    def osc(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
            x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
        vn = v + dt * (-x - c * v + corr * v)
        x = x + dt * v  # reads the old v
        v = vn
        t = t + dt
        terminated = t >= t_final

    return osc


OSC = {k: make_osc(k) for k in (1, 3, 7)}
OSC_GUARDED = make_osc(3, active_set=True)


@hawk.kernel
def tables(w: Table[Scalar], wv: Table[Vector[3]], idx: Scalar, out: Mutable[Scalar], outv: Mutable[Vector[3]]):
    acc = w.at(2) + w.at(idx) + w.at(idx + 1.0)  # constant, plane and computed indices
    for i in range(3):
        acc = acc + w.at(i) * 0.5
    out = acc
    outv = wv.at(idx) * 2.0 + wv.at(0) - wv.at(idx * 0.5)


@hawk.kernel
def table_in_branch(w: Table[Scalar], idx: Scalar, out: Mutable[Scalar]):
    if idx < 4.0:
        r = w.at(idx)
    else:
        r = -1.0
    out = r


@hawk.kernel
def table_in_ifexp(w: Table[Scalar], idx: Scalar, out: Mutable[Scalar]):
    out = w.at(idx) * 2.0 if idx < 4.0 else -1.0


@hawk.kernel
def table_guarded_by_and(w: Table[Scalar], idx: Scalar, out: Mutable[Scalar]):
    r = -1.0
    if idx < 4.0 and w.at(idx) > 0.5:  # Python's `and` does not evaluate the right side
        r = 1.0
    if idx >= 4.0 or w.at(idx) > 1.5:  # nor does `or` once the left side holds
        r = r + 10.0
    out = r


@hawk.kernel
def table_one(w: Table[Scalar], idx: Scalar, out: Mutable[Scalar]):
    out = w.at(idx)


@hawk.kernel
def scale_add(x: Scalar, a: Vector[3], s: Param, out: Mutable[Scalar], outv: Mutable[Vector[3]]):
    out = x * s + norm(a)
    outv = a * x - vec(s, 0.0, 1.0)


@hawk.kernel
def accumulate(x: Scalar, s: Param, acc: Mutable[Scalar], pure: Mutable[Scalar]):
    acc = acc + x * s  # in-out: read before written
    pure = x * s  # a pure output: never read


@hawk.kernel
def graph_force(x: Scalar, dt: Param, v: Mutable[Scalar]):
    v = v - dt * x * x * x  # reads x (another kernel's output plane), writes v


@hawk.kernel
def graph_drift(v: Scalar, dt: Param, x: Mutable[Scalar]):
    x = x + dt * v


@hawk.kernel
def stream_mix(w: Table[Scalar], x: Scalar, i: Scalar[hawk.int32], acc: Mutable[Scalar],
               y: Mutable[Vector[2]], k: Mutable[Scalar[hawk.int32]], pos: Mutable[Scalar[hawk.bool_]]):
    acc = acc + x * w.at(i)
    y = vec(x * 2.0, acc)
    k = i * 3 + 1
    pos = x > 0.0


KERNELS = [*OSC.values(), OSC_GUARDED, stream_mix, tables, table_in_branch, table_in_ifexp, table_guarded_by_and, table_one, scale_add, accumulate, graph_force, graph_drift]


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    ps = eagle.plan.auto(KERNELS, targets=("host",), cache_dir=module_cache_dir)
    return {id(p.kernel): p for p in ps}


def P(plans, kernel):
    return plans[id(kernel)]


# ---------------------------------------------------------------- stepping and the mask


def osc_state(n, seed=1, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return dict(
        t_final=rng.uniform(0.05, 0.6, n).astype(dtype),
        corr=rng.uniform(-0.1, 0.1, n).astype(dtype),
        x=rng.uniform(-1, 1, n).astype(dtype),
        v=rng.uniform(-1, 1, n).astype(dtype),
        t=np.zeros(n, dtype),
        terminated=np.zeros(n, bool),
    )


def osc_reference_launch(st, dt, c, k):
    """One launch of `osc` with steps=k in NumPy; returns how many samples it finished."""
    x, v, t, mask = st["x"], st["v"], st["t"], st["terminated"]
    before = mask.sum()
    dtc = x.dtype.type(dt)
    cc = x.dtype.type(c)
    for _ in range(k):
        live = ~mask
        vn = v + dtc * (-x - cc * v + st["corr"] * v)
        xn = x + dtc * v
        tn = t + dtc
        x[live] = xn[live]
        v[live] = vn[live]
        t[live] = tn[live]
        mask |= live & (t >= st["t_final"])
    return int(mask.sum() - before)


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_steps_and_terminated(plans, k, dtype):
    n = 300
    dt, c = 0.01, 0.3
    got = osc_state(n, dtype=dtype)
    want = {key: val.copy() for key, val in got.items()}
    fc = np.zeros(1, np.uint32)
    bound = P(plans, OSC[k]).bind(dt=dt, c=c, finished_count=fc, **got)
    assert OSC[k].steps == k
    total = 0
    prev_mask = got["terminated"].copy()
    frozen: dict[int, tuple] = {}
    launches = 0
    while not got["terminated"].all():
        launches += 1
        assert launches < 200
        finished = bound.launch()
        want_finished = osc_reference_launch(want, dt, c, k)
        assert finished == want_finished
        total += finished
        assert fc[0] == total == got["terminated"].sum()
        for key in ("x", "v", "t", "terminated"):
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"{key} after launch {launches}")
        # the mask grows, never shrinks
        assert np.all(got["terminated"][prev_mask])
        prev_mask = got["terminated"].copy()
        # a finished sample's planes are untouched by later launches
        for i, vals in frozen.items():
            assert (got["x"][i], got["v"][i], got["t"][i]) == vals
        for i in np.flatnonzero(got["terminated"]):
            frozen.setdefault(int(i), (got["x"][i], got["v"][i], got["t"][i]))
    # each sample stopped at its own time: the first step with t >= t_final
    steps_taken = np.rint(got["t"].astype(np.float64) / dt)
    assert len(np.unique(steps_taken)) > 5
    assert np.all(got["t"] >= got["t_final"])
    # launches needed ~ max steps / k
    assert launches == int(np.ceil(steps_taken.max() / k))
    # more launches once everything finished change nothing
    snap = {key: val.copy() for key, val in got.items()}
    assert bound.launch() == 0
    for key, val in snap.items():
        np.testing.assert_array_equal(got[key], val)
    assert fc[0] == n


def test_presets_in_mask_are_skipped(plans):
    n = 64
    st = osc_state(n)
    st["terminated"][::2] = True
    snap = {key: val.copy() for key, val in st.items()}
    ref = {key: val.copy() for key, val in st.items()}
    fc = np.zeros(1, np.uint32)
    b = P(plans, OSC[1]).bind(dt=0.01, c=0.3, finished_count=fc, **st)
    assert b.launch() == osc_reference_launch(ref, 0.01, 0.3, 1) == 0
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(st[key][::2], snap[key][::2])  # preset: skipped
        np.testing.assert_array_equal(st[key], ref[key])
    assert np.all(st["t"][1::2] == 0.01)
    assert fc[0] == 0  # samples terminated before the launch are not counted


# ---------------------------------------------------------------- tables


def table_data(dtype, m=8):
    rng = np.random.default_rng(7)
    return rng.uniform(-1, 1, m).astype(dtype), rng.uniform(-1, 1, (m, 3)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_table_reads(plans, dtype):
    n = 257
    w, wv = table_data(dtype)
    idx = np.random.default_rng(3).uniform(0.0, 6.999, n).astype(dtype)
    idx[:7] = np.arange(7)  # exact integers
    out = np.zeros(n, dtype)
    outv = np.zeros((3, n), dtype)
    P(plans, tables).bind(w=w, wv=wv, idx=idx, out=out, outv=outv).launch()
    i0 = np.floor(idx).astype(int)
    i1 = np.floor(idx + dtype(1.0)).astype(int)
    ih = np.floor(idx * dtype(0.5)).astype(int)
    acc = w[2] + w[i0] + w[i1]
    for i in range(3):
        acc = acc + w[i] * dtype(0.5)
    np.testing.assert_array_equal(out, acc)
    want_v = wv[i0].T * dtype(2.0) + wv[0][:, None] - wv[ih].T
    np.testing.assert_array_equal(outv, want_v)


@pytest.mark.parametrize("bad", [8.0, 7.0, -1.0, -0.5, np.nan, np.inf, 1e30])
def test_table_out_of_range_raises(plans, bad):
    n = 10
    w, wv = table_data(np.float64)
    idx = np.zeros(n)
    idx[4] = bad  # idx + 1 = 8 is out of range for bad == 7.0
    out = np.zeros(n)
    outv = np.zeros((3, n))
    b = P(plans, tables).bind(w=w, wv=wv, idx=idx, out=out, outv=outv)
    with pytest.raises(RuntimeError) as info:
        b.launch()
    msg = str(info.value)
    assert "tables" in msg  # the kernel
    assert "'w'" in msg or "'wv'" in msg  # the table
    assert "out of range" in msg
    # the process survives: the same binding works once the index is fixed
    idx[4] = 1.0
    b.launch()
    assert out[4] == w[2] + w[1] + w[2] + (w[0] * 0.5 + w[1] * 0.5 + w[2] * 0.5) or np.isclose(
        out[4], w[2] + w[1] + w[2] + 0.5 * (w[0] + w[1] + w[2]), rtol=1e-15)


def test_table_error_names_the_table_read(plans):
    w, _ = table_data(np.float64)
    idx = np.array([0.0, 9.0, 1.0, 2.0])
    out = np.zeros(4)
    b = P(plans, table_in_branch).bind(w=w, idx=idx, out=out)
    b.launch()  # 9 >= 4: the branch reading the table is not taken
    np.testing.assert_array_equal(out, [w[0], -1.0, w[1], w[2]])
    idx[1] = -2.0  # now taken, and out of range
    with pytest.raises(RuntimeError, match=r"table_in_branch.*'w'.*out of range"):
        b.launch()


def test_table_read_in_untaken_branch_does_not_raise(plans):
    w, _ = table_data(np.float64)
    n = 500
    idx = np.random.default_rng(5).uniform(0, 1000, n)
    idx[:4] = [0, 1, 2, 3.5]
    out = np.zeros(n)
    P(plans, table_in_branch).bind(w=w, idx=idx, out=out).launch()
    want = np.where(idx < 4.0, w[np.minimum(np.floor(idx), 7).astype(int)], -1.0)
    np.testing.assert_array_equal(out, want)


def test_table_read_in_untaken_conditional_expression(plans):
    w = np.arange(4.0)
    idx = np.array([0.0, 3.0, 9.0, np.nan, 2.0])  # 9 and NaN: the read is not selected
    out = np.zeros(5)
    P(plans, table_in_ifexp).bind(w=w, idx=idx, out=out).launch()
    np.testing.assert_array_equal(out, [0.0, 6.0, -1.0, -1.0, 4.0])
    idx[2] = -5.0  # -5 < 4 selects the read, which is out of range
    with pytest.raises(RuntimeError, match="table_in_ifexp"):
        P(plans, table_in_ifexp).bind(w=w, idx=idx, out=out).launch()


def test_table_read_guarded_by_and_or_does_not_raise(plans):
    w = np.arange(4.0)
    idx = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 100.0])
    out = np.zeros(6)
    P(plans, table_guarded_by_and).bind(w=w, idx=idx, out=out).launch()
    np.testing.assert_array_equal(out, [-1.0, 1.0, 11.0, 11.0, 9.0, 9.0])


def test_table_error_reports_the_first_bad_sample_across_threads(plans):
    n = 2000
    w = np.arange(4.0)
    idx = np.zeros(n)
    idx[1500] = 50.0
    idx[700] = -3.0
    out = np.zeros(n)
    b = P(plans, table_one).bind(w=w, idx=idx, out=out)
    b._core.serial_threshold = 64
    with pytest.raises(RuntimeError, match=r"'table_one'.*'w'.*index -3 .*sample 700"):
        b.launch()


# ---------------------------------------------------------------- active set


def test_active_set_matches_plain_kernel(plans):
    n = 400
    dt, c = 0.01, 0.3
    a = osc_state(n, seed=11)
    b = {key: val.copy() for key, val in a.items()}
    fa, fb = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    guarded = P(plans, OSC_GUARDED).bind(dt=dt, c=c, finished_count=fa, **a)
    plain = P(plans, OSC[3]).bind(dt=dt, c=c, finished_count=fb, **b)
    assert OSC_GUARDED.guard.active_set
    assert plain.live == n
    lives = []
    for _ in range(40):
        ra = guarded.launch()
        rb = plain.launch()
        assert ra == rb
        lives.append(guarded.live)
        assert guarded.live == n - int(a["terminated"].sum())
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
        if a["terminated"].all():
            break
    assert a["terminated"].all()
    assert lives == sorted(lives, reverse=True) and lives[-1] == 0
    assert len(set(lives)) > 3
    assert fa[0] == fb[0] == n


def test_active_set_live_counts_preset_mask(plans):
    """bound.live is the number of live samples, also before the first launch."""
    n = 100
    st = osc_state(n, seed=13)
    st["terminated"][:40] = True
    b = P(plans, OSC_GUARDED).bind(dt=0.01, c=0.3, **st)
    assert b.live == 60
    b.launch()
    assert b.live == n - int(st["terminated"].sum()) <= 60


def test_active_set_reset_after_user_changes_mask(plans):
    n = 100
    st = osc_state(n, seed=12)
    b = P(plans, OSC_GUARDED).bind(dt=0.01, c=0.3, **st)
    b.launch()
    live_before = b.live
    st["terminated"][:50] = True
    b.reset_active()
    b.launch()
    assert b.live == n - int(st["terminated"].sum()) < live_before
    # and un-terminating samples brings them back after reset_active
    st["terminated"][:] = False
    st["t"][:] = 0.0
    b.reset_active()
    b.launch()
    assert b.live == n - int(st["terminated"].sum())
    assert np.all(st["t"] > 0)


# ---------------------------------------------------------------- thread split


def _scale_add_ref(x, a, s):
    dt = x.dtype.type
    nrm = np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    return x * dt(s) + nrm, a * x - np.array([dt(s), 0.0, 1.0], x.dtype)[:, None]


THRESH = 256


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, THRESH - 1, THRESH, THRESH + 1, 3 * THRESH + 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_thread_split_identical(plans, n, dtype, stream):
    """Split over threads or not, with plain stores or streamed (non-temporal stores, which a
    launch larger than the cache uses; forced here by stream_bytes = 0): the same bits."""
    rng = np.random.default_rng(n)
    x = rng.uniform(-2, 2, n).astype(dtype)
    a = rng.uniform(-2, 2, (3, n)).astype(dtype)
    out = np.full(n, np.nan, dtype)
    outv = np.full((3, n), np.nan, dtype)
    b = P(plans, scale_add).bind(x=x, a=a, s=0.5, out=out, outv=outv)
    b._core.serial_threshold = THRESH
    assert b._core.serial_threshold == THRESH
    b._core.stream_bytes = 0 if stream else 1 << 60
    b.launch()
    want, want_v = _scale_add_ref(x, a, 0.5)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(outv, want_v)


@pytest.mark.parametrize("n", [0, 1, 65, THRESH - 1, THRESH, THRESH + 1, 2000])
def test_thread_split_stepping(plans, n):
    st = osc_state(n, seed=n + 1)
    ref = {key: val.copy() for key, val in st.items()}
    fc = np.zeros(1, np.uint32)
    b = P(plans, OSC[7]).bind(dt=0.01, c=0.3, finished_count=fc, **st)
    b._core.serial_threshold = THRESH
    total = 0
    for _ in range(12):
        got = b.launch()
        assert got == osc_reference_launch(ref, 0.01, 0.3, 7)
        total += got
    for key in st:
        np.testing.assert_array_equal(st[key], ref[key])
    assert fc[0] == total == st["terminated"].sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_streamed_launch_mixes_in_out_int_and_bool_planes(plans, dtype):
    """A streamed launch writes pure outputs (float, int32, bool) through block buffers and
    keeps plain stores for an in-out plane; rows start off a cache line (n odd) and the chunks
    of the thread split start mid-block. Against NumPy, and the same bits as plain stores."""
    assert "a->stream != 0" in stream_mix.cpp()  # the kernel can stream
    n = 1001
    rng = np.random.default_rng(5)
    w = rng.uniform(-1, 1, 7).astype(dtype)
    x = rng.uniform(-2, 2, n).astype(dtype)
    i = rng.integers(0, 7, n).astype(np.int32)
    acc0 = rng.uniform(-1, 1, n).astype(dtype)
    results = []
    for stream in (True, False):
        acc = acc0.copy()
        y = np.full((2, n), np.nan, dtype)
        k = np.zeros(n, np.int32)
        pos = np.zeros(n, np.bool_)
        b = P(plans, stream_mix).bind(w=w, x=x, i=i, acc=acc, y=y, k=k, pos=pos)
        b._core.serial_threshold = 64
        b._core.stream_bytes = 0 if stream else 1 << 60
        b.launch()
        results.append((acc, y, k, pos))
    acc, y, k, pos = results[0]
    want_acc = acc0 + x * w[i]
    np.testing.assert_allclose(acc, want_acc, rtol=1e-6 if dtype == np.float32 else 1e-15)
    np.testing.assert_array_equal(y[0], x * dtype(2.0))
    np.testing.assert_array_equal(y[1], acc)
    np.testing.assert_array_equal(k, i * 3 + 1)
    np.testing.assert_array_equal(pos, x > 0)
    for got, plain in zip(results[0], results[1]):
        np.testing.assert_array_equal(got, plain)


def test_large_n_default_threshold(plans):
    n = 100_003
    rng = np.random.default_rng(99)
    x = rng.uniform(-2, 2, n)
    a = rng.uniform(-2, 2, (3, n))
    out = np.zeros(n)
    outv = np.zeros((3, n))
    b = P(plans, scale_add).bind(x=x, a=a, s=1.25, out=out, outv=outv)
    assert b._core.serial_threshold < n  # the default threshold splits this launch
    b.launch()
    want, want_v = _scale_add_ref(x, a, 1.25)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(outv, want_v)


# ---------------------------------------------------------------- in-out, by reference


def test_inout_vs_pure_output(plans):
    k = accumulate
    assert k.slot("acc").inout and not k.slot("pure").inout
    assert "acc" in k.inputs and "pure" not in k.inputs
    assert "acc" in k.outputs and "pure" in k.outputs
    n = 50
    x = np.linspace(-1, 1, n)
    acc = np.full(n, 10.0)
    pure = np.full(n, 123.0)
    b = P(plans, k).bind(x=x, s=2.0, acc=acc, pure=pure)
    for i in range(3):
        b.launch()
    np.testing.assert_array_equal(acc, ((10.0 + x * 2.0) + x * 2.0) + x * 2.0)
    np.testing.assert_array_equal(pure, x * 2.0)


def test_bind_by_reference(plans):
    n = 20
    x = np.linspace(0, 1, n)
    a = np.ones((3, n))
    out = np.zeros(n)
    outv = np.zeros((3, n))
    s = np.array(2.0)  # a 0-d float64 Param: re-read at each launch
    b = P(plans, scale_add).bind(x=x, a=a, s=s, out=out, outv=outv)
    b.launch()
    np.testing.assert_array_equal(out, _scale_add_ref(x, a, 2.0)[0])
    x[:] = np.arange(n) * 3.0  # a change to a bound array is seen by the next launch
    a[1] = 5.0
    s[()] = -4.0
    b.launch()
    want, want_v = _scale_add_ref(x, a, -4.0)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(outv, want_v)
    # a 1-element float32 Param array too
    s32 = np.array([1.5], np.float32)
    b2 = P(plans, scale_add).bind(x=x, a=a, s=s32, out=out, outv=outv)
    b2.launch()
    np.testing.assert_array_equal(out, _scale_add_ref(x, a, 1.5)[0])
    s32[0] = 0.25
    b2.launch()
    np.testing.assert_array_equal(out, _scale_add_ref(x, a, 0.25)[0])


def test_param_as_python_float_is_a_snapshot(plans):
    n = 8
    x = np.ones(n)
    a = np.zeros((3, n))
    out = np.zeros(n)
    outv = np.zeros((3, n))
    val = 3.0
    b = P(plans, scale_add).bind(x=x, a=a, s=val, out=out, outv=outv)
    val = 7.0  # rebinding a Python name cannot reach the plan
    b.launch()
    np.testing.assert_array_equal(out, np.full(n, 3.0))


# ---------------------------------------------------------------- graphs


def test_graph_two_kernels_fifty_times(plans):
    n = 300
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, n)
    v = rng.uniform(-1, 1, n)
    x_ref, v_ref = x.copy(), v.copy()
    dt = 0.02
    force = P(plans, graph_force).bind(x=x, dt=dt, v=v)
    drift = P(plans, graph_drift).bind(v=v, dt=dt, x=x)
    graph = eagle.Graph().add(force, name="force").add(drift, name="drift").build()
    assert graph.schedule == ("host",)
    graph.launch(50)
    graph.synchronize()
    for _ in range(50):
        v_ref = v_ref - dt * x_ref * x_ref * x_ref
        x_ref = x_ref + dt * v_ref
    np.testing.assert_array_equal(v, v_ref)
    np.testing.assert_array_equal(x, x_ref)
    # one more launch() is one more pass
    graph.launch()
    v_ref = v_ref - dt * x_ref * x_ref * x_ref
    x_ref = x_ref + dt * v_ref
    np.testing.assert_array_equal(x, x_ref)


def test_graph_order_matters(plans):
    n = 16
    x = np.linspace(-1, 1, n)
    v = np.linspace(1, 2, n)
    x2, v2 = x.copy(), v.copy()
    dt = 0.1
    g1 = eagle.Graph().add(P(plans, graph_force).bind(x=x, dt=dt, v=v)).add(P(plans, graph_drift).bind(v=v, dt=dt, x=x)).build()
    g2 = eagle.Graph().add(P(plans, graph_drift).bind(v=v2, dt=dt, x=x2)).add(P(plans, graph_force).bind(x=x2, dt=dt, v=v2)).build()
    g1.launch(3)
    g2.launch(3)
    xr, vr = np.linspace(-1, 1, n), np.linspace(1, 2, n)
    for _ in range(3):
        xr = xr + dt * vr
        vr = vr - dt * xr * xr * xr
    np.testing.assert_array_equal(x2, xr)
    np.testing.assert_array_equal(v2, vr)
    assert not np.array_equal(x, x2)


def test_graph_with_opaque_node_runs_in_order(plans):
    n = 10
    x = np.zeros(n)
    v = np.ones(n)
    seen = []
    node = eagle.graph.opaque(lambda: seen.append(x.copy()))
    g = (eagle.Graph().add(P(plans, graph_drift).bind(v=v, dt=1.0, x=x), name="drift")
         .add_node(node, name="probe").build())
    assert g.schedule == ("host",)
    g.launch(3)
    assert [s[0] for s in seen] == [1.0, 2.0, 3.0]


# ---------------------------------------------------------------- plan cache and generated code


def test_plan_cache_hit_same_process(cache_dir):
    sys.path.insert(0, TESTS_DIR)
    from cache_kernels import cached_axpy

    (p1,) = eagle.plan.auto([cached_axpy], cache_dir=cache_dir)
    assert p1.info["cache_hit"] is False
    assert os.path.exists(p1.info["so_path"])
    assert os.path.commonpath([os.path.realpath(p1.info["so_path"]), os.path.realpath(cache_dir)]) == os.path.realpath(cache_dir)
    (p2,) = eagle.plan.auto([cached_axpy], cache_dir=cache_dir)
    assert p2.info["cache_hit"] is True
    assert p2.info["key"] == p1.info["key"]
    x = np.arange(4.0)
    y = np.ones(4)
    out = np.zeros(4)
    p2.bind(x=x, y=y, a=3.0, out=out).launch()
    np.testing.assert_array_equal(out, 3.0 * x + y)


def test_plan_cache_hit_in_fresh_subprocess(cache_dir):
    sys.path.insert(0, TESTS_DIR)
    from cache_kernels import PLAN_AND_RUN, cached_axpy

    (p1,) = eagle.plan.auto([cached_axpy], cache_dir=cache_dir)
    code = PLAN_AND_RUN.format(tests_dir=TESTS_DIR, cache_dir=cache_dir)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["cache_hit"] is True
    assert res["so_path"] == p1.info["so_path"]
    assert res["out"] == [1.0, 3.0, 5.0, 7.0, 9.0]


def _line_of(text: str) -> int:
    for i, line in enumerate(open(__file__).read().splitlines(), start=1):
        if line.strip() == text:
            return i
    raise AssertionError(text)


def test_generated_cpp_names_user_file_and_line(plans):
    plan = P(plans, scale_add)
    line = _line_of("out = x * s + norm(a)")
    text = open(plan.source_path).read()
    assert f"test_runtime.py:{line}" in text
    assert "out = x * s + norm(a)" in text
    cpp = scale_add.cpp("float64")
    assert f"test_runtime.py:{line}" in cpp
    assert f"test_runtime.py:{_line_of('outv = a * x - vec(s, 0.0, 1.0)')}" in cpp
    assert scale_add.file.endswith("test_runtime.py")
    assert "test_runtime.py" in scale_add.cpp("float32")
