"""Derived kernels derived again (docs/derivatives.md: derived kernels "can be derived
again"): Hessian-vector products as the tangent of the adjoint, second directional
derivatives as the tangent of the tangent, a third derivative, each against finite
differences of the lower derivative kernel (float64); and every case of
test_derivatives.py built for float32, within float32 tolerances.
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import exp, norm, sin, tanh, vec

from conftest import assert_sum_close
from test_derivatives import (
    CASES, N, SEEDS, adjoint_outputs, fd, inner, mutables, random_like, roles, run, tangent_outputs,
)

H = 1e-6
FD2_RTOL = 1e-6

# ---------------------------------------------------------------- kernels


@hawk.kernel
def h_drag(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


@hawk.kernel
def h_mix(w: Table[Scalar], idx: Scalar, x: Scalar, z: Scalar, p: Param, y: Mutable[Scalar], o: Mutable[Vector[2]]):
    if x > 0.0:
        r = sin(x * z) * w.at(idx) + p * x * x
    else:
        r = exp(x) * z * p + w.at(idx) * w.at(idx)
    y = r * tanh(z * p)
    o = vec(r * w.at(0), x ** 3 * p)


@hawk.kernel(steps=4)
def h_osc(dt: Param, c: Param, t_final: Scalar, terminated: Terminated, x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-sin(x) - c * v * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final


@hawk.kernel
def h_quartic(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = p * x ** 4


def drag_vals(rng):
    return {"v": rng.uniform(-3.0, 3.0, (3, N)), "cd": rng.uniform(0.1, 0.5), "dt": 0.01, "g": 9.81}


def mix_vals(rng):
    return {"w": rng.uniform(-1.0, 1.0, 5), "idx": rng.integers(0, 5, N).astype(np.float64),
            "x": rng.uniform(0.2, 1.5, N) * rng.choice([-1.0, 1.0], N), "z": rng.uniform(-1.0, 1.0, N),
            "p": rng.uniform(0.8, 1.2)}


def osc_vals(rng):
    term = np.zeros(N, bool)
    term[4] = True
    return {"dt": 0.1, "c": rng.uniform(0.2, 0.6), "t_final": np.array([0.05, 0.15, 0.25, 0.35, 0.15, 0.9, 0.25, 0.15, 0.35]),
            "terminated": term, "x": rng.uniform(-1.0, 1.0, N), "v": rng.uniform(-1.0, 1.0, N), "t": np.zeros(N)}


SECOND = {  # name -> (kernel, wrt, make)
    "drag": (h_drag, ["v", "cd"], drag_vals),
    "mix": (h_mix, ["w", "x", "z", "p"], mix_vals),
    "osc": (h_osc, ["c", "x", "v"], osc_vals),
}


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    ks = []
    for k, wrt, _ in SECOND.values():
        a = k.adjoint(wrt)
        t = k.tangent(wrt, with_primal=False)
        ks += [a, a.tangent(wrt), a.adjoint(wrt), t, t.tangent(wrt, with_primal=False)]
    q = h_quartic.adjoint(["x", "p"]).tangent(["x"])
    ks += [q, q.tangent(["x"])]
    for k, wrt, _ in CASES.values():  # float32 runs of every first-derivative case
        ks += [k, k.tangent(list(wrt)), k.adjoint(list(wrt))]
    return {p.kernel.name: p for p in eagle.plan.auto(ks, cache_dir=module_cache_dir)}


def out_shape(k, m):
    s = k.slot(m)
    return (s.width, N) if s.is_vector else (N,)


def assert_close_scaled(got, want, rtol, what):
    for key in want:
        scale = max(1.0, float(np.max(np.abs(want[key]))))
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=rtol * scale, err_msg=f"{what}: {key}")


# ---------------------------------------------------------------- second derivatives


@pytest.mark.parametrize("name", list(SECOND))
def test_tangent_of_adjoint_is_hessian_vector_product(plans, name):
    k, wrt, make = SECOND[name]
    a = k.adjoint(wrt)
    ap, hp = plans[a.name], plans[a.name + "_tangent"]
    cn = roles(a, "c")
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        x = make(rng)
        ct = {cn[m]: rng.standard_normal(out_shape(k, m)) for m in mutables(k)}
        vals = dict(x, **ct)
        t = random_like(rng, x, wrt)
        bars = {cn[w] for w in wrt}
        got = _hvp(hp, a, vals, t, bars)  # d(bar)/dx . t by the tangent of the adjoint ...
        # ... against central differences of the adjoint kernel
        hi = run(ap, _perturb(vals, t, H))
        lo = run(ap, _perturb(vals, t, -H))
        want = {b: (hi[b] - lo[b]) / (2 * H) for b in bars}
        assert_close_scaled(got, want, FD2_RTOL, f"{name} seed {seed}: H.t")
        # symmetric: <t2, H t1> == <t1, H t2>
        t2 = random_like(rng, x, wrt)
        hv2 = _hvp(hp, a, vals, t2, bars)
        hv1 = _hvp(hp, a, vals, t, bars)
        l1, s1 = inner({w: hv1[cn[w]] for w in wrt}, t2)
        l2, s2 = inner({w: hv2[cn[w]] for w in wrt}, t)
        assert abs(l1 - l2) <= 1e-12 * max(s1, s2), (name, seed, l1, l2)


@pytest.mark.parametrize("name", list(SECOND))
def test_adjoint_of_adjoint_is_transpose_of_tangent_of_adjoint(plans, name):
    """Reverse over reverse: <adjoint(adjoint)(ct2), t> == <ct2, tangent(adjoint)(t)>."""
    k, wrt, make = SECOND[name]
    a = k.adjoint(wrt)
    hp, aap = plans[a.name + "_tangent"], plans[a.name + "_adjoint"]
    cn, cn2 = roles(a, "c"), roles(aap.kernel, "c")
    bars = [cn[w] for w in wrt]
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        x = make(rng)
        vals = dict(x, **{cn[m]: rng.standard_normal(out_shape(k, m)) for m in mutables(k)})
        t = random_like(rng, x, wrt)
        hv = _hvp(hp, a, vals, t, set(bars))
        ct2 = {b: rng.standard_normal(np.shape(hv[b])) for b in bars}
        out = run(aap, dict(vals, **{cn2[b]: ct2[b] for b in bars}))
        lhs, s1 = inner({w: out[cn2[w]] for w in wrt}, t)
        rhs, s2 = inner(ct2, hv)
        assert abs(lhs - rhs) <= 1e-12 * max(s1, s2), (name, seed, lhs, rhs)


def _perturb(vals, t, h):
    out = dict(vals)
    for w, tw in t.items():
        out[w] = np.asarray(vals[w], np.float64) + h * np.asarray(tw)
    return out


def _hvp(hp, a, vals, t, bars):
    tn = roles(hp.kernel, "t")
    v = dict(vals)
    for w, tw in t.items():
        v[tn[w]] = tw
    out = run(hp, v)
    return {b: out[tn[b]] for b in bars}


@pytest.mark.parametrize("name", list(SECOND))
def test_tangent_of_tangent_is_second_directional_derivative(plans, name):
    k, wrt, make = SECOND[name]
    t1k = k.tangent(wrt, with_primal=False)
    tp, ttp = plans[t1k.name], plans[t1k.name + "_tangent"]
    tn1 = roles(t1k, "t")
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        x = make(rng)
        t1 = random_like(rng, x, wrt)
        t2 = random_like(rng, x, wrt)
        vals = dict(x, **{tn1[w]: t1[w] for w in wrt})
        dd = tangent_outputs(ttp, t1k, vals, t2)  # d/dx [f'(x) t1] . t2
        outs = [tn1[m] for m in mutables(k)]
        hi = run(tp, _perturb(vals, t2, H))
        lo = run(tp, _perturb(vals, t2, -H))
        want = {o: (hi[o] - lo[o]) / (2 * H) for o in outs}
        assert_close_scaled({o: dd[o] for o in outs}, want, FD2_RTOL, f"{name} seed {seed}: f''[t1, t2]")
        # symmetric in t1, t2
        vals2 = dict(x, **{tn1[w]: t2[w] for w in wrt})
        dd2 = tangent_outputs(ttp, t1k, vals2, t1)
        for o in outs:
            scale = max(1.0, float(np.max(np.abs(dd[o]))))
            np.testing.assert_allclose(dd2[o], dd[o], rtol=1e-12, atol=1e-12 * scale)


def test_third_derivative_by_deriving_three_times(plans):
    a = h_quartic.adjoint(["x", "p"])
    h = a.tangent(["x"])
    third = h.tangent(["x"])
    assert third.name == "h_quartic_adjoint_tangent_tangent"
    tp = plans[third.name]
    rng = np.random.default_rng(1)
    x = rng.uniform(-2.0, 2.0, N)
    p, ct, t1, t2 = 1.3, rng.standard_normal(N), rng.standard_normal(N), rng.standard_normal(N)
    r1 = roles(a, "c")  # y -> y_bar, x -> x_bar, p -> p_bar
    r2 = roles(h, "t")  # x -> x_dot, x_bar -> x_bar_dot, p_bar -> p_bar_dot
    r3 = roles(third, "t")  # tangents of h's slots
    vals = {"x": x, "p": p, r1["y"]: ct, r2["x"]: t1, r3["x"]: t2}
    out = run(tp, vals)
    np.testing.assert_allclose(out[r1["x"]], 4 * p * x ** 3 * ct, rtol=1e-14)
    np.testing.assert_allclose(out[r2[r1["x"]]], 12 * p * x ** 2 * t1 * ct, rtol=1e-14)
    np.testing.assert_allclose(out[r3[r2[r1["x"]]]], 24 * p * x * t1 * t2 * ct, rtol=1e-13)
    assert_sum_close(out[r3[r2[r1["p"]]]], 12 * x ** 2 * t1 * t2 * ct, rtol=1e-13)


# ---------------------------------------------------------------- float32


def f32_values(x):
    """Inputs rounded to float32 (kept as float64 for the float64 reference)."""
    return {k: (v if isinstance(v, (bool, np.bool_)) or (isinstance(v, np.ndarray) and v.dtype == bool)
                else np.asarray(np.asarray(v, np.float32), np.float64) if np.ndim(v) else float(np.float32(v)))
            for k, v in x.items()}


@pytest.mark.parametrize("name", list(CASES))
def test_float32_derivatives(plans, name):
    k, wrt, make = CASES[name]
    p, tp, ap = plans[k.name], plans[k.name + "_tangent"], plans[k.name + "_adjoint"]
    rng = np.random.default_rng(21)
    x = f32_values(make(rng))
    t = f32_values(random_like(rng, x, wrt))
    ct = f32_values({m: rng.standard_normal(out_shape(k, m)) for m in mutables(k)})
    # the float32 tangent against the float64 tangent at the same (float32) point
    t32 = tangent_outputs(tp, k, x, t, np.float32)
    t64 = tangent_outputs(tp, k, x, t, np.float64)
    for m in t64:
        assert t32[m].dtype == np.float32
    assert_close_scaled(t32, t64, 1e-4, f"{name} float32 tangent")
    # and against finite differences of the float64 primal
    assert_close_scaled(t64, fd(p, x, t), 1e-7, f"{name} float64 tangent at the float32 point")
    # the float32 adjoint: against float64, and the transpose identity in float32 precision
    b32 = adjoint_outputs(ap, k, x, ct, wrt, np.float32)
    b64 = adjoint_outputs(ap, k, x, ct, wrt, np.float64)
    for w in wrt:
        assert b32[w].dtype == np.float32
    assert_close_scaled(b32, b64, 1e-4, f"{name} float32 adjoint")
    lhs, s1 = inner(b32, t)
    rhs, s2 = inner(ct, t32)
    assert abs(lhs - rhs) <= 1e-5 * max(s1, s2), (name, lhs, rhs)
