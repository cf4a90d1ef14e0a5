"""Derived kernels (docs/derivatives.md): tangent kernels against central finite
differences of the primal kernel, adjoint kernels against the transpose of the tangent
(<adjoint(ct), t> == <ct, tangent(t)>), Param and Table cotangents against sums of
per-sample contributions, finished samples, Terminated, inspection of derived kernels, and
the conventions at non-differentiable points against jax.grad / jax.jvp (float64).

Every kernel runs through eagle (plan, bind, launch). All case kernels and their derivatives
are compiled in one eagle.plan.auto call (one translation unit) into a module cache dir.
Second derivatives and float32 are in test_derivatives_higher.py.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import hawk.math as hm  # noqa: E402

import eagle.plan  # noqa: E402
import hawk  # noqa: E402
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector  # noqa: E402
from hawk.math import (  # noqa: E402
    atan2, clamp, cos, cross, dot, exp, floor, log, maximum, minimum, norm, normalize,
    sign, sin, sqrt, tan, tanh, vec, where,
)

N = 9  # samples per launch
SEEDS = (11, 12, 13)  # several random points per case
H = 1e-6  # finite-difference step
FD_RTOL = 1e-7
ADJ_RTOL = 1e-12
M = 6  # table entries

# ---------------------------------------------------------------- harness


def roles(kernel: hawk.Kernel, role: str) -> dict[str, str]:
    """{primal name: slot name} of a derived kernel's slots with the given role."""
    return {prim: s.name for s, (r, prim) in zip(kernel.slots, kernel._core.slot_roles()) if r == role}


def mutables(kernel: hawk.Kernel) -> list[str]:
    return [s.name for s in kernel.slots if s.kind == "mutable"]


def run(plan, values: dict, dtype=np.float64) -> dict:
    """Binds copies of ``values`` (those the kernel has) plus zeroed outputs and sums,
    launches once and returns every bound array (outputs included)."""
    k = plan.kernel
    vals: dict = {}
    for s in k.slots:
        if s.name in values:
            v = values[s.name]
            if s.kind == "param":
                vals[s.name] = float(np.asarray(v).reshape(-1)[0])
            elif s.kind == "terminated":
                vals[s.name] = np.array(v, dtype=bool)
            else:
                vals[s.name] = np.array(v, dtype=dtype)
        elif s.kind == "mutable" and not s.inout:
            n = next(np.shape(values[t.name])[-1] for t in k.slots
                     if t.kind in ("plane", "terminated", "mutable") and t.name in values)
            vals[s.name] = np.zeros((s.width, n) if s.is_vector else (n,), dtype)
        elif s.kind == "param_sum":
            vals[s.name] = np.full((s.width,), np.nan, dtype)  # overwritten by the launch
        elif s.kind == "table_sum":
            m = np.shape(vals[k.slots[s.table_of].name])[0]
            vals[s.name] = np.full((m, s.width) if s.is_vector else (m,), np.nan, dtype)
        else:
            raise KeyError(f"no value for {s.name} of {k.name}")
    plan.bind(**vals).launch()
    return vals


def random_like(rng, values: dict, names) -> dict:
    out = {}
    for w in names:
        v = values[w]
        out[w] = rng.standard_normal() if np.ndim(v) == 0 else rng.standard_normal(np.shape(v))
    return out


def perturb(values: dict, t: dict, h: float) -> dict:
    out = dict(values)
    for w, tw in t.items():
        out[w] = np.asarray(values[w], dtype=np.float64) + h * np.asarray(tw)
    return out


def fd(plan, values: dict, t: dict, h: float = H) -> dict:
    """Central finite differences of every Mutable output of the primal plan along t."""
    hi = run(plan, perturb(values, t, h))
    lo = run(plan, perturb(values, t, -h))
    return {m: (hi[m] - lo[m]) / (2 * h) for m in mutables(plan.kernel)}


def tangent_outputs(tplan, primal: hawk.Kernel, values: dict, t: dict, dtype=np.float64) -> dict:
    tn = roles(tplan.kernel, "t")
    vals = dict(values)
    for w, tw in t.items():
        vals[tn[w]] = tw
    out = run(tplan, vals, dtype)
    return {m: out[tn[m]] for m in mutables(primal)}


def adjoint_outputs(aplan, primal: hawk.Kernel, values: dict, ct: dict, wrt, dtype=np.float64) -> dict:
    cn = roles(aplan.kernel, "c")
    vals = dict(values)
    for m, c in ct.items():
        vals[cn[m]] = c
    out = run(aplan, vals, dtype)
    return {w: out[cn[w]] for w in wrt}


def inner(a: dict, b: dict) -> tuple[float, float]:
    """sum over keys of <a_k, b_k>, and the sum of |terms| (the scale for a relative check)."""
    s, scale = 0.0, 0.0
    for key in a:
        prod = np.asarray(a[key], np.float64).reshape(-1) * np.asarray(b[key], np.float64).reshape(-1)
        s += float(prod.sum())
        scale += float(np.abs(prod).sum())
    return s, scale


# ---------------------------------------------------------------- kernels

CASES: dict[str, tuple] = {}  # name -> (kernel, wrt, make(rng) -> values)


def case(wrt, make):
    def deco(fn):
        k = fn if isinstance(fn, hawk.Kernel) else hawk.kernel(fn)
        CASES[k.name] = (k, tuple(wrt), make)
        return k

    return deco


def uni(lo, hi, shape=N):
    return lambda rng: rng.uniform(lo, hi, shape)


def signed(lo, hi, shape=N):
    return lambda rng: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def mk(**gens):
    """values maker: each keyword is a generator(rng) or a constant."""

    def make(rng):
        return {k: (g(rng) if callable(g) else g) for k, g in gens.items()}

    return make


P = uni(0.8, 1.25, ())  # a Param near 1


# Unary functions: y = f(p * x), wrt the plane and the Param (a sum over samples).
@case(["x", "p"], mk(x=uni(0.5, 2.0), p=P))
def d_sqrt(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = sqrt(p * x)


@case(["x", "p"], mk(x=uni(-1.0, 1.0), p=P))
def d_exp(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = exp(p * x)


@case(["x", "p"], mk(x=uni(0.5, 2.0), p=P))
def d_log(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = log(p * x)


@case(["x", "p"], mk(x=uni(-2.0, 2.0), p=P))
def d_sin(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = sin(p * x)


@case(["x", "p"], mk(x=uni(-2.0, 2.0), p=P))
def d_cos(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = cos(p * x)


@case(["x", "p"], mk(x=uni(-1.0, 1.0), p=P))
def d_tan(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = tan(p * x)


@case(["x", "p"], mk(x=uni(-2.0, 2.0), p=P))
def d_tanh(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = tanh(p * x)


@case(["x", "p"], mk(x=signed(0.3, 2.0), p=P))
def d_abs(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = hm.abs(p * x)


@case(["x", "p"], mk(x=lambda rng: rng.integers(-3, 3, N) + rng.uniform(0.2, 0.8, N), p=P))
def d_floor(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = floor(x) * p * x + floor(p)


@case(["x", "p"], mk(x=signed(0.3, 2.0), p=P))
def d_sign(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = sign(x) * p * x * x


@case(["x", "p"], mk(x=uni(-2.0, 2.0), p=P))
def d_neg(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = -(p * x) * x + (-p)


@case(["x", "p"], mk(x=signed(0.5, 2.0), p=P))
def d_pow_int(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = (p * x) ** 3 + x ** -2 + x ** 1 * p + x ** 0 + (x * p) ** 2 + x ** 5


@case(["x", "p"], mk(x=uni(0.5, 2.0), p=P))
def d_pow_float(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = (p * x) ** 2.5 + x ** -0.5 + p ** 1.5


@case(["x", "z", "p"], mk(x=uni(0.5, 2.0), z=uni(-1.5, 1.5), p=P))
def d_pow_plane(x: Scalar, z: Scalar, p: Param, y: Mutable[Scalar]):
    y = x ** z * p + p ** z


@case(["x", "z", "p"], mk(x=signed(0.5, 2.0), z=signed(0.5, 2.0), p=P))
def d_arith(x: Scalar, z: Scalar, p: Param, y: Mutable[Scalar]):
    y = (x + p) * z - x / (z + 3.0 * p) - p / x + (2.0 - x) * (1.0 / z) + x * 0.5 - 1.0


@case(["x", "z", "p"], mk(x=signed(0.3, 2.0), z=signed(0.3, 2.0), p=P))
def d_atan2(x: Scalar, z: Scalar, p: Param, y: Mutable[Scalar]):
    y = atan2(p * x, z)


def apart(rng):
    """x, z with |x - z| >= 0.2 (away from the kink of minimum / maximum / where)."""
    x = rng.uniform(-2.0, 2.0, N)
    z = x + rng.uniform(0.2, 1.0, N) * rng.choice([-1.0, 1.0], N)
    return {"x": x, "z": z}


def apart_p(rng):
    d = apart(rng)
    d["p"] = 1.0  # p * x keeps the gap (p = 1)
    return d


@case(["x", "z", "p"], apart_p)
def d_minimum(x: Scalar, z: Scalar, p: Param, y: Mutable[Scalar]):
    y = minimum(p * x, z)


@case(["x", "z", "p"], apart_p)
def d_maximum(x: Scalar, z: Scalar, p: Param, y: Mutable[Scalar]):
    y = maximum(p * x, z) * p


def clamp_vals(rng):
    lo = rng.uniform(-1.0, 0.0, N)
    hi = lo + 1.0
    x = np.where(rng.random(N) < 0.5, rng.uniform(-1.0, 2.0, N), rng.uniform(lo + 0.1, hi - 0.1))
    x = np.where(np.abs(x - lo) < 0.1, lo - 0.2, x)
    x = np.where(np.abs(x - hi) < 0.1, hi + 0.2, x)
    return {"x": x, "lo": lo, "hi": hi, "p": 1.0}


@case(["x", "lo", "hi", "p"], clamp_vals)
def d_clamp(x: Scalar, lo: Scalar, hi: Scalar, p: Param, y: Mutable[Scalar]):
    y = clamp(x * p, lo, hi) * p


@case(["x", "z", "p"], apart_p)
def d_where(x: Scalar, z: Scalar, p: Param, y: Mutable[Scalar]):
    y = where(x > z, x * z * p, x / (z * z + 1.0))


V3 = uni(-2.0, 2.0, (3, N))


@case(["a", "p"], mk(a=V3, p=P))
def d_norm(a: Vector[3], p: Param, y: Mutable[Scalar]):
    y = norm(a) * p


@case(["a", "b", "p"], mk(a=V3, b=V3, p=P))
def d_dot(a: Vector[3], b: Vector[3], p: Param, y: Mutable[Scalar]):
    y = dot(a, b * p)


@case(["a", "b", "p"], mk(a=V3, b=V3, p=P))
def d_cross(a: Vector[3], b: Vector[3], p: Param, o: Mutable[Vector[3]]):
    o = cross(a * p, b)


@case(["a", "p"], mk(a=V3, p=P))
def d_normalize(a: Vector[3], p: Param, o: Mutable[Vector[3]]):
    o = normalize(a * p) * p


@case(["a", "x", "p"], mk(a=V3, x=uni(-1.0, 1.0), p=P))
def d_vec_component(a: Vector[3], x: Scalar, p: Param, o: Mutable[Vector[3]], y: Mutable[Scalar]):
    w = vec(a[2] * p, a[0] * a[1], p + x)
    o = w * x - a
    y = w[1] * w[2] - a[1]


@case(["x", "p"], mk(x=signed(0.2, 2.0), p=P))
def d_if_elif_else(x: Scalar, p: Param, y: Mutable[Scalar]):
    if x > 1.0:
        y = sqrt(x) * p
    elif x > 0.0:
        y = x * x * p
    else:
        y = -x * exp(p)


def ifexp_vals(rng):
    d = apart(rng)
    d["p"] = P(rng)
    return d


@case(["x", "z", "p"], ifexp_vals)
def d_ifexp(x: Scalar, z: Scalar, p: Param, y: Mutable[Scalar]):
    y = sin(x) * p if x > z else cos(z) * x


@case(["x", "p"], mk(x=uni(-1.0, 1.0), p=P))
def d_for(x: Scalar, p: Param, y: Mutable[Scalar], o: Mutable[Vector[3]]):
    acc = x
    for i in range(4):
        acc = acc * p + 0.25 * sin(acc) + i * 0.125
    y = acc
    o = vec(0.0, 0.0, 0.0)
    for j in range(3):
        o = o + vec(acc, x, p) * (j + 1.0)


@hawk.func
def smooth(a, b):
    return a * tanh(b) + b


@hawk.func
def twice(a):
    return smooth(a, a) * 2.0


@case(["x", "p"], mk(x=uni(-1.5, 1.5), p=P))
def d_helper(x: Scalar, p: Param, y: Mutable[Scalar]):
    y = smooth(x, p) * twice(x) + smooth(p, x)


def table_vals(rng):
    return {
        "w": rng.uniform(-1.0, 1.0, M),
        "wv": rng.uniform(-1.0, 1.0, (M, 3)),
        "idx": rng.integers(0, M - 1, N).astype(np.float64),
        "x": rng.uniform(-1.0, 1.0, N),
        "p": P(rng),
    }


@case(["w", "wv", "x", "p"], table_vals)
def d_table(w: Table[Scalar], wv: Table[Vector[3]], idx: Scalar, x: Scalar, p: Param,
            y: Mutable[Scalar], o: Mutable[Vector[3]]):
    y = w.at(idx) * x + w.at(2) * p + w.at(idx + 1.0) * w.at(idx)
    o = wv.at(idx) * x + wv.at(0) * w.at(1) + sin(wv.at(idx + 1.0)) * p


def osc_vals(rng):
    # samples stop at different steps: t_final spread over the launch's 5 steps (dt = 0.1),
    # some never stop in this launch, two are finished before it.
    term = np.zeros(N, bool)
    term[[1, 5]] = True
    return {
        "dt": 0.1, "c": P(rng),
        "t_final": np.array([0.05, 0.15, 0.25, 0.35, 0.45, 0.15, 0.9, 0.25, 0.55]),
        "corr": rng.uniform(-0.3, 0.3, N), "terminated": term,
        "x": rng.uniform(-1.0, 1.0, N), "v": rng.uniform(-1.0, 1.0, N), "t": np.zeros(N),
    }


@case(["c", "corr", "x", "v"], osc_vals)
@hawk.kernel(steps=5)
def d_osc(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
          x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-sin(x) - c * v * v + corr * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final


@case(["s", "acc", "b", "x"], mk(s=V3, acc=uni(-1.0, 1.0), b=V3, x=uni(0.5, 1.5)))
def d_inout(b: Vector[3], x: Scalar, s: Mutable[Vector[3]], acc: Mutable[Scalar], y: Mutable[Scalar]):
    y = acc * dot(s, b)  # reads the old values
    acc = acc * x + exp(s[0] * 0.5)
    s = s * x + cross(s, b) * 0.1


@case(["v", "cd"], mk(v=uni(-3.0, 3.0, (3, N)), cd=uni(0.1, 0.5, ()), dt=0.01, g=9.81))
def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


# ---------------------------------------------------------------- plans


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    kernels = []
    for k, wrt, _ in CASES.values():
        kernels += [k, k.tangent(list(wrt)), k.adjoint(list(wrt))]
    ps = eagle.plan.auto(kernels, targets=("host",), cache_dir=module_cache_dir)
    return {p.kernel.name: p for p in ps}


def case_plans(plans, name):
    k, wrt, make = CASES[name]
    return k, wrt, make, plans[k.name], plans[k.name + "_tangent"], plans[k.name + "_adjoint"]


# ---------------------------------------------------------------- first derivatives


@pytest.mark.parametrize("name", list(CASES))
def test_tangent_matches_finite_differences(plans, name):
    k, wrt, make, p, tp, _ = case_plans(plans, name)
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        x = make(rng)
        t = random_like(rng, x, wrt)
        want = fd(p, x, t)
        got = tangent_outputs(tp, k, x, t)
        for m in want:
            scale = max(1.0, float(np.max(np.abs(want[m]))))
            np.testing.assert_allclose(got[m], want[m], rtol=FD_RTOL, atol=FD_RTOL * scale,
                                       err_msg=f"{name}: tangent of {m} (seed {seed})")


@pytest.mark.parametrize("name", list(CASES))
def test_tangent_with_primal_outputs_the_primal(plans, name):
    k, wrt, make, p, tp, _ = case_plans(plans, name)
    rng = np.random.default_rng(SEEDS[0])
    x = make(rng)
    t = random_like(rng, x, wrt)
    want = run(p, x)
    vals = dict(x)
    tn = roles(tp.kernel, "t")
    for w in wrt:
        vals[tn[w]] = t[w]
    got = run(tp, vals)
    for m in mutables(k) + [s.name for s in k.slots if s.kind == "terminated"]:
        np.testing.assert_array_equal(got[m], want[m], err_msg=f"{name}: primal {m}")


@pytest.mark.parametrize("name", list(CASES))
def test_adjoint_is_transpose_of_tangent(plans, name):
    k, wrt, make, _, tp, ap = case_plans(plans, name)
    outs = mutables(k)
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        x = make(rng)
        t = random_like(rng, x, wrt)
        ct = {m: rng.standard_normal(np.shape(x[m]) if m in x else (
            (k.slot(m).width, N) if k.slot(m).is_vector else (N,))) for m in outs}
        tan = tangent_outputs(tp, k, x, t)
        bar = adjoint_outputs(ap, k, x, ct, wrt)
        lhs, s1 = inner(bar, t)
        rhs, s2 = inner(ct, tan)
        assert abs(lhs - rhs) <= ADJ_RTOL * max(s1, s2), (name, seed, lhs, rhs)
        assert s1 > 0  # the check is not vacuous


def test_every_case_covers_plane_param_and_table_inputs():
    kinds = set()
    for k, wrt, _ in CASES.values():
        kinds |= {k.slot(w).kind + ("_inout" if k.slot(w).inout else "") for w in wrt}
    assert {"plane", "param", "table", "mutable_inout"} <= kinds


# ---------------------------------------------------------------- Param and Table sums


def per_sample_bars(ap, k, x, wrt, ct):
    """The adjoint run once per sample with a one-hot ct: {w: [per-sample cotangent]}."""
    out = {w: [] for w in wrt}
    for i in range(N):
        one = {m: np.zeros_like(c) for m, c in ct.items()}
        for m in one:
            one[m][..., i] = ct[m][..., i]
        bar = adjoint_outputs(ap, k, x, one, wrt)
        for w in wrt:
            out[w].append(bar[w])
    return out


@pytest.mark.parametrize("name", ["drag_step", "d_table", "d_osc", "d_pow_plane"])
def test_param_and_table_cotangents_are_sums_over_samples(plans, name):
    k, wrt, make, p, _, ap = case_plans(plans, name)
    rng = np.random.default_rng(5)
    x = make(rng)
    ct = {m: rng.standard_normal((k.slot(m).width, N) if k.slot(m).is_vector else (N,)) for m in mutables(k)}
    full = adjoint_outputs(ap, k, x, ct, wrt)
    per = per_sample_bars(ap, k, x, wrt, ct)
    summed = [w for w in wrt if k.slot(w).kind in ("param", "table")]
    assert summed
    for w in summed:
        np.testing.assert_allclose(full[w], np.sum(per[w], axis=0), rtol=1e-13, atol=1e-14,
                                   err_msg=f"{name}: {w}_bar vs the sum of one-hot adjoints")
        # independently: finite differences of each entry, summed over samples with ct
        flat = np.asarray(x[w], np.float64).reshape(-1)
        ref = np.zeros(flat.size)
        for j in range(flat.size):
            e = np.zeros(flat.size)
            e[j] = 1.0
            d = fd(p, x, {w: e.reshape(np.shape(x[w])) if np.ndim(x[w]) else 1.0})
            ref[j] = sum(float(np.sum(ct[m] * d[m])) for m in d)
        np.testing.assert_allclose(np.asarray(full[w]).reshape(-1), ref, rtol=1e-7, atol=1e-7,
                                   err_msg=f"{name}: {w}_bar vs finite differences")
    if name == "d_table":  # each sample scatters into the entries it read, only those
        idx = x["idx"].astype(int)
        for i in range(N):
            touched = {idx[i], idx[i] + 1, 0, 1, 2}
            untouched = [j for j in range(M) if j not in touched]
            assert np.all(np.asarray(per["w"][i])[untouched] == 0.0)
            assert np.all(np.asarray(per["wv"][i])[[j for j in range(M) if j not in (idx[i], idx[i] + 1, 0)]] == 0.0)


def test_param_sum_is_overwritten_by_each_launch(plans):
    k, wrt, make, _, _, ap = case_plans(plans, "drag_step")
    x = make(np.random.default_rng(3))
    vals = dict(x, v_next_bar=np.ones((3, N)), v_bar=np.zeros((3, N)), cd_bar=np.zeros(1))
    b = ap.bind(**vals)
    b.launch()
    first = vals["cd_bar"].copy()
    b.launch()
    np.testing.assert_array_equal(vals["cd_bar"], first)


# ---------------------------------------------------------------- finished samples, Terminated


def test_finished_sample_derivatives_are_zero(plans):
    k, wrt, make, p, tp, ap = case_plans(plans, "d_osc")
    rng = np.random.default_rng(8)
    x = make(rng)
    x["terminated"] = np.zeros(N, bool)
    x["terminated"][[0, 3, 4]] = True  # finished before the launch
    done = [0, 3, 4]
    live = [i for i in range(N) if i not in done]
    t = random_like(rng, x, wrt)
    tan = tangent_outputs(tp, k, x, t)
    # pure tangent outputs of a finished sample stay 0; its in-out states keep their tangent
    # (the step is the identity for it)
    np.testing.assert_array_equal(tan["t"][done], 0.0)
    np.testing.assert_array_equal(tan["x"][done], t["x"][done])
    np.testing.assert_array_equal(tan["v"][done], t["v"][done])
    ct = {m: rng.standard_normal(N) for m in ("x", "v", "t")}
    bar = adjoint_outputs(ap, k, x, ct, wrt)
    np.testing.assert_array_equal(bar["corr"][done], 0.0)  # a plane: nothing from them
    np.testing.assert_array_equal(bar["x"][done], ct["x"][done])
    np.testing.assert_array_equal(bar["v"][done], ct["v"][done])
    # the Param sum holds only the live samples' contributions
    ct_live = {m: c.copy() for m, c in ct.items()}
    for c in ct_live.values():
        c[done] = 0.0
    only_live = adjoint_outputs(ap, k, x, ct_live, wrt)
    assert bar["c"][0] == pytest.approx(only_live["c"][0], rel=1e-14, abs=0)
    ct_done = {m: c - ct_live[m] for m, c in ct.items()}
    assert adjoint_outputs(ap, k, x, ct_done, wrt)["c"][0] == 0.0
    # everything finished: all derivatives vanish but the identity of the states
    x["terminated"][:] = True
    tan = tangent_outputs(tp, k, x, t)
    np.testing.assert_array_equal(tan["t"], 0.0)
    bar = adjoint_outputs(ap, k, x, ct, wrt)
    assert bar["c"][0] == 0.0
    np.testing.assert_array_equal(bar["corr"], 0.0)
    assert live


def test_map_kernel_finished_sample_gets_zero_derivatives(cache_dir):
    @hawk.kernel
    def masked_map(x: Scalar, p: Param, done: Terminated, y: Mutable[Scalar]):
        y = sin(x) * p
        done = x > 100.0

    T, A = masked_map.tangent(["x", "p"]), masked_map.adjoint(["x", "p"])
    tp, ap = eagle.plan.auto([T, A], cache_dir=cache_dir)
    x = np.linspace(0.1, 1.0, N)
    mask = np.zeros(N, bool)
    mask[2] = True
    tv = dict(x=x, p=1.5, done=mask.copy(), x_dot=np.ones(N), p_dot=1.0, y=np.zeros(N), y_dot=np.zeros(N))
    tp.bind(**tv).launch()
    assert tv["y_dot"][2] == 0.0 and np.all(tv["y_dot"][[0, 1, 3]] != 0.0)
    av = dict(x=x, p=1.5, done=mask.copy(), y_bar=np.ones(N), x_bar=np.zeros(N), p_bar=np.zeros(1))
    ap.bind(**av).launch()
    assert av["x_bar"][2] == 0.0
    assert av["p_bar"][0] == pytest.approx(np.sum(np.sin(np.delete(x, 2))), rel=1e-14)


def test_terminated_carries_no_derivative():
    k = CASES["d_osc"][0]
    for derive in (lambda w: k.tangent(w), lambda w: k.tangent(w, with_primal=False), k.adjoint):
        with pytest.raises(ValueError, match="terminated"):
            derive(["terminated"])
        with pytest.raises(ValueError, match="terminated"):
            derive(["x", "terminated"])
    # and the tangent / adjoint kernels hold no derivative slot for it
    for d in (k.tangent(["x"]), k.adjoint(["x"])):
        assert not [s for s in d.slots if s.name.startswith("terminated_")]
        assert [s.kind for s in d.slots].count("terminated") == 1


# ---------------------------------------------------------------- inspection


def test_derived_kernels_are_inspectable(plans):
    k = CASES["drag_step"][0]
    T, A = k.tangent(["v", "cd"]), k.adjoint(["v", "cd"])
    assert T.name == "drag_step_tangent" and A.name == "drag_step_adjoint"
    assert [s.name for s in T.slots] == ["v", "cd", "dt", "g", "v_next", "v_dot", "cd_dot", "v_next_dot"]
    assert [s.name for s in A.slots] == ["v", "cd", "dt", "g", "v_next_bar", "v_bar", "cd_bar"]
    assert [(s.kind, s.width, s.is_vector) for s in A.slots[4:]] == [
        ("plane", 3, True), ("mutable", 3, True), ("param_sum", 1, False)]
    assert A._core.slot_roles() == [("p", "v"), ("p", "cd"), ("p", "dt"), ("p", "g"),
                                    ("c", "v_next"), ("c", "v"), ("c", "cd")]
    T0 = k.tangent(["v"], with_primal=False)
    assert [s.name for s in T0.slots] == ["v", "cd", "dt", "g", "v_dot", "v_next_dot"]
    for d in (T, A, T0):
        assert d.steps == 1
        assert d.ir.startswith(f"kernel {d.name}")
        assert "sqrt" in d.ir
        src = d.cpp()
        assert d.name in src and d.name in d.cpp("float32")
        # comments map the derived code back to the user's lines, with their text
        assert "// test_derivatives.py:" in src and "norm(v)" in src
        assert d.digest() != k.digest()
    assert "cd_bar" in A.ir and "v_next_bar" in A.ir
    assert plans["drag_step_adjoint"].kernel is not None  # it compiled (planned in the fixture)
    assert repr(A).startswith("<hawk.Kernel drag_step_adjoint(")
    # an osc tangent: names and kinds of the in-out state tangents
    ko = CASES["d_osc"][0]
    To = ko.tangent(["x", "c"])
    assert To.slot("x_dot").kind == "mutable" and To.slot("x_dot").inout
    assert To.slot("c_dot").kind == "param" and To.slot("v_dot").kind == "mutable"
    Ao = ko.adjoint(["x", "c"])
    assert Ao.slot("x_bar").inout and Ao.slot("v_bar").kind == "plane"
    assert Ao.slot("c_bar").kind == "param_sum" and Ao.slot("x").kind == "plane"
    Ab = CASES["d_table"][0].adjoint(["w", "wv"])
    assert Ab.slot("w_bar").kind == "table_sum" and Ab.slots[Ab.slot("w_bar").table_of].name == "w"
    assert Ab.slot("wv_bar").kind == "table_sum" and Ab.slots[Ab.slot("wv_bar").table_of].name == "wv"


def test_without_unread_inputs_drops_only_what_is_not_read(cache_dir):
    """The adjoint of a tangent kernel never reads the tangents; a tangent kernel does not
    read g (a constant term of the drag step). Trimmed kernels keep every output and compute
    the same numbers."""
    k = CASES["drag_step"][0]
    T = k.tangent(["v", "cd"], with_primal=False)
    Tt = T.without_unread_inputs()
    assert [s.name for s in Tt.slots] == [s.name for s in T.slots if s.name != "g"]
    A = T.adjoint(["v_dot", "cd_dot"])
    At = A.without_unread_inputs()
    assert {"v_dot", "cd_dot", "g"} <= {s.name for s in A.slots}
    assert not {"v_dot", "cd_dot", "g"} & {s.name for s in At.slots}
    assert [s.name for s in At.slots if s.is_output] == [s.name for s in A.slots if s.is_output]
    assert k.without_unread_inputs().slots == k.slots  # a user kernel reads all it declares
    pa, pat = eagle.plan.auto([A, At], cache_dir=cache_dir)
    rng = np.random.default_rng(5)
    values = {"v": rng.standard_normal((3, N)), "cd": 0.3, "dt": 0.01, "g": 9.81,
              "v_dot": rng.standard_normal((3, N)), "cd_dot": 0.7,
              "v_next_dot_bar": rng.standard_normal((3, N))}
    full, cut = run(pa, values), run(pat, values)
    for s in At.slots:
        if s.is_output:
            np.testing.assert_array_equal(cut[s.name], full[s.name])


def test_derived_name_clash_gets_underscore(cache_dir):
    @hawk.kernel
    def clash(x: Scalar, x_dot: Scalar, x_bar: Scalar, y: Mutable[Scalar]):
        y = x * x_dot + x_bar

    T, A = clash.tangent(["x"]), clash.adjoint(["x"])
    assert "x_dot_" in [s.name for s in T.slots]
    assert "x_bar_" in [s.name for s in A.slots]
    tp, ap = eagle.plan.auto([T, A], cache_dir=cache_dir)
    tn, cn = roles(T, "t"), roles(A, "c")
    x = np.linspace(1, 2, N)
    out = run(tp, {"x": x, "x_dot": 3.0 * np.ones(N), "x_bar": np.zeros(N), tn["x"]: np.ones(N)})
    np.testing.assert_array_equal(out[tn["y"]], 3.0)
    out = run(ap, {"x": x, "x_dot": 3.0 * np.ones(N), "x_bar": np.zeros(N), cn["y"]: np.ones(N)})
    np.testing.assert_array_equal(out[cn["x"]], 3.0)


# ---------------------------------------------------------------- against jax at kinks


@hawk.kernel
def j_abs(x: Scalar, y: Mutable[Scalar]):
    y = hm.abs(x)


@hawk.kernel
def j_sqrt(x: Scalar, y: Mutable[Scalar]):
    y = sqrt(x)


@hawk.kernel
def j_log(x: Scalar, y: Mutable[Scalar]):
    y = log(x)


@hawk.kernel
def j_norm(a: Vector[3], y: Mutable[Scalar]):
    y = norm(a)


@hawk.kernel
def j_normalize(a: Vector[3], o: Mutable[Vector[3]]):
    o = normalize(a)


@hawk.kernel
def j_min(x: Scalar, z: Scalar, y: Mutable[Scalar]):
    y = minimum(x, z)


@hawk.kernel
def j_max(x: Scalar, z: Scalar, y: Mutable[Scalar]):
    y = maximum(x, z)


@hawk.kernel
def j_clamp(x: Scalar, lo: Scalar, hi: Scalar, y: Mutable[Scalar]):
    y = clamp(x, lo, hi)


@hawk.kernel
def j_pow(x: Scalar, z: Scalar, y: Mutable[Scalar]):
    y = x ** z


@hawk.kernel
def j_pow_consts(x: Scalar, y: Mutable[Vector[6]]):
    y = vec(x ** 2.5, x ** 0.5, x ** 0.0, x ** 2, x ** 0, x ** -1)


@hawk.kernel
def j_atan2(x: Scalar, z: Scalar, y: Mutable[Scalar]):
    y = atan2(x, z)


@hawk.kernel
def j_floor_sign(x: Scalar, y: Mutable[Scalar]):
    y = floor(x) + sign(x) * 2.0


@hawk.kernel
def j_branch(x: Scalar, y: Mutable[Scalar]):
    if x > 0.0:
        y = sqrt(x)
    else:
        y = 0.0


@hawk.kernel
def j_ifexp_log(x: Scalar, y: Mutable[Scalar]):
    y = log(x) if x > 0.0 else x


@hawk.kernel
def j_where_sqrt(x: Scalar, y: Mutable[Scalar]):
    y = where(x > 0.0, sqrt(x), 0.0)


# (kernel, wrt, points (one per sample, each a tuple of inputs), jnp function of the inputs)
JAX_CASES = {
    "abs": (j_abs, ["x"], [(0.0,), (-0.0,), (1.5,), (-2.0,), (np.nan,)], jnp.abs),
    "sqrt": (j_sqrt, ["x"], [(0.0,), (4.0,), (0.25,)], jnp.sqrt),
    "log": (j_log, ["x"], [(0.0,), (1.0,), (3.0,)], jnp.log),
    "norm": (j_norm, ["a"], [((0.0, 0.0, 0.0),), ((3.0, 0.0, -4.0),), ((0.0, 0.0, 2.0),)], jnp.linalg.norm),
    "normalize": (j_normalize, ["a"], [((0.0, 0.0, 0.0),), ((3.0, 0.0, -4.0),)], lambda a: a / jnp.linalg.norm(a)),
    "minimum": (j_min, ["x", "z"], [(1.0, 1.0), (0.0, 0.0), (1.0, 2.0), (2.0, -1.0), (np.nan, 1.0), (1.0, np.nan)],
                jnp.minimum),
    "maximum": (j_max, ["x", "z"], [(1.0, 1.0), (-3.0, -3.0), (1.0, 2.0), (2.0, -1.0), (np.nan, 1.0), (1.0, np.nan)],
                jnp.maximum),
    "clamp": (j_clamp, ["x", "lo", "hi"], [(0.0, 0.0, 1.0), (1.0, 0.0, 1.0), (0.5, 0.0, 1.0), (2.0, 0.0, 1.0),
                                           (1.0, 1.0, 1.0)],
              lambda x, lo, hi: jnp.minimum(jnp.maximum(x, lo), hi)),
    "pow": (j_pow, ["x", "z"], [(0.0, 2.5), (0.0, 0.0), (0.0, 1.0), (0.0, 2.0), (0.0, 0.5), (2.0, 0.0),
                                (1.5, -1.0), (0.0, -1.0)], lambda x, z: x ** z),
    "pow_consts": (j_pow_consts, ["x"], [(0.0,), (2.0,)],
                   lambda x: jnp.stack([x ** 2.5, x ** 0.5, x ** 0.0, x ** 2, x ** 0, x ** -1])),
    "atan2": (j_atan2, ["x", "z"], [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (-1.0, -1.0)], jnp.arctan2),
    "floor_sign": (j_floor_sign, ["x"], [(0.0,), (1.0,), (-2.5,)], lambda x: jnp.floor(x) + jnp.sign(x) * 2.0),
}


@pytest.fixture(scope="module")
def jax_plans(module_cache_dir):
    ks = []
    for k, wrt, _, _ in JAX_CASES.values():
        ks += [k.tangent(wrt, with_primal=False), k.adjoint(wrt)]
    for k in (j_branch, j_ifexp_log, j_where_sqrt):
        ks += [k.tangent(["x"], with_primal=False), k.adjoint(["x"])]
    return {p.kernel.name: p for p in eagle.plan.auto(ks, cache_dir=module_cache_dir)}


def _as_planes(k, wrt, points):
    """Inputs of the kernel, sample i = points[i]."""
    names = [s.name for s in k.slots if s.kind == "plane"]
    out = {}
    for j, name in enumerate(names):
        col = np.array([pt[j] for pt in points], np.float64)
        out[name] = col.T.copy() if col.ndim == 2 else col
    return out


@pytest.mark.parametrize("name", list(JAX_CASES))
def test_conventions_at_kinks_match_jax(jax_plans, name):
    k, wrt, points, f = JAX_CASES[name]
    tp, ap = jax_plans[k.name + "_tangent"], jax_plans[k.name + "_adjoint"]
    x = _as_planes(k, wrt, points)
    n = len(points)
    out_slot = mutables(k)[0]
    width = k.slot(out_slot).width
    vec_out = k.slot(out_slot).is_vector
    for i, pt in enumerate(points):
        args = tuple(jnp.asarray(a, jnp.float64) for a in pt)
        # adjoint (ct = 1 on each output component) vs jax.vjp
        for c in range(width):
            ct_j = jnp.zeros(width).at[c].set(1.0) if vec_out else jnp.float64(1.0)
            _, vjp = jax.vjp(f, *args)
            want = vjp(ct_j)
            ct = np.zeros((width, n) if vec_out else (n,))
            if vec_out:
                ct[c, i] = 1.0  # one-hot: the other samples and components hold no cotangent
            else:
                ct[i] = 1.0
            bar = adjoint_outputs(ap, k, x, {out_slot: ct}, wrt)
            for j, w in enumerate(wrt):
                np.testing.assert_allclose(np.asarray(bar[w])[..., i], np.asarray(want[j]), rtol=1e-14, atol=0,
                                           err_msg=f"{name}: d/d{w} at {pt}, component {c} (adjoint)")
        # tangent (one-hot tangents) vs jax.jvp
        for j, w in enumerate(wrt):
            for c in range(np.size(pt[j])):
                tj = [jnp.zeros_like(a) for a in args]
                tj[j] = tj[j].at[c].set(1.0) if tj[j].ndim else jnp.float64(1.0)
                _, want = jax.jvp(f, args, tuple(tj))
                t = {ww: np.zeros_like(x[ww]) for ww in wrt}
                t[w][..., i] = 0.0
                if t[w].ndim == 2:
                    t[w][c, i] = 1.0
                else:
                    t[w][i] = 1.0
                got = tangent_outputs(tp, k, x, t)[out_slot]
                np.testing.assert_allclose(np.asarray(got)[..., i], np.asarray(want), rtol=1e-14, atol=0,
                                           err_msg=f"{name}: tangent along {w}[{c}] at {pt}")


def test_jax_reference_values_at_kinks():
    """The documented conventions, as JAX computes them (so the table in docs holds)."""
    g = jax.grad
    assert g(jnp.abs)(0.0) == 1.0
    assert g(jnp.sqrt)(0.0) == np.inf
    assert np.all(np.isnan(g(jnp.linalg.norm)(jnp.zeros(3))))
    assert g(jnp.minimum, argnums=(0, 1))(1.0, 1.0) == (0.5, 0.5)
    assert g(jnp.maximum, argnums=(0, 1))(1.0, 1.0) == (0.5, 0.5)
    assert g(lambda x: x ** 2.5)(0.0) == 0.0
    assert g(lambda x: x ** 0.5)(0.0) == np.inf


@pytest.mark.parametrize("k", [j_branch, j_ifexp_log], ids=lambda k: k.name)
def test_branch_not_taken_contributes_exactly_zero(jax_plans, k):
    """hawk: a value computed under a predicate that is false (an if/else branch or a
    conditional expression's side not taken) adds exactly 0, even where its partial is inf
    or NaN. The same code in jax.numpy (jnp.where evaluates both sides) has a NaN gradient."""
    tp, ap = jax_plans[k.name + "_tangent"], jax_plans[k.name + "_adjoint"]
    xs = np.array([-2.0, -0.5, -1e-300, 0.0, 0.25, 4.0])
    n = xs.size
    bar = adjoint_outputs(ap, k, {"x": xs}, {"y": np.ones(n)}, ["x"])["x"]
    tan = tangent_outputs(tp, k, {"x": xs}, {"x": np.ones(n)})["y"]
    safe = np.where(xs > 0, xs, 1.0)
    if k is j_ifexp_log:  # log(x) if x > 0 else x
        want = np.where(xs > 0, 1.0 / safe, 1.0)
        jf = lambda x: jnp.where(x > 0, jnp.log(x), x)  # noqa: E731
    else:  # if x > 0: sqrt(x) else 0
        want = np.where(xs > 0, 0.5 / np.sqrt(safe), 0.0)
        jf = lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0)  # noqa: E731
    np.testing.assert_array_equal(bar, want)
    np.testing.assert_array_equal(tan, want)
    assert not np.any(np.isnan(bar)) and not np.any(np.isnan(tan))
    jg = np.asarray(jax.vmap(jax.grad(jf))(jnp.asarray(xs)))
    if k is j_branch:
        assert np.all(np.isnan(jg[xs <= 0]))  # the documented difference: JAX gives NaN there
        np.testing.assert_array_equal(bar[xs <= 0], 0.0)
    np.testing.assert_allclose(jg[xs > 0], bar[xs > 0], rtol=1e-15)


def test_where_computes_both_sides_like_jax(jax_plans):
    """hawk.math.where(c, a, b) computes both sides, like jnp.where: its gradient is NaN where
    the side not chosen has an infinite or NaN partial (use if/else to get 0 instead)."""
    tp, ap = jax_plans["j_where_sqrt_tangent"], jax_plans["j_where_sqrt_adjoint"]
    xs = np.array([-2.0, -0.5, 0.0, 0.25, 4.0])
    n = xs.size
    bar = adjoint_outputs(ap, j_where_sqrt, {"x": xs}, {"y": np.ones(n)}, ["x"])["x"]
    tan = tangent_outputs(tp, j_where_sqrt, {"x": xs}, {"x": np.ones(n)})["y"]
    jg = np.asarray(jax.vmap(jax.grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0)))(jnp.asarray(xs)))
    jt = np.asarray(jax.jvp(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0), (jnp.asarray(xs),), (jnp.ones(n),))[1])
    np.testing.assert_allclose(bar, jg, rtol=1e-15)  # NaN at x <= 0 on both sides
    np.testing.assert_allclose(tan, jt, rtol=1e-15)


# ---------------------------------------------------------------- more launch shapes


@hawk.kernel
def big_drag(v: Vector[3], cd: Param, dt: Param, g: Param, wt: Table[Vector[3]], idx: Scalar,
             v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v + wt.at(idx)
    v_next = v + dt * a


@hawk.kernel
def table_branch(w: Table[Scalar], idx: Scalar, p: Param, out: Mutable[Scalar]):
    if idx < 4.0:
        r = w.at(idx) * p
    else:
        r = -1.0  # idx is out of range here: the branch not taken reads no entry
    out = r


def test_sums_over_many_samples_split_across_threads(cache_dir):
    """A launch large enough for the host thread pool: the Param sum and the Table scatter
    still equal NumPy's sums of the per-sample contributions, at every launch."""
    A = big_drag.adjoint(["v", "cd", "wt"])
    (ap,) = eagle.plan.auto([A], cache_dir=cache_dir)
    n = 1 << 17
    rng = np.random.default_rng(0)
    v = rng.uniform(-3.0, 3.0, (3, n))
    ct = rng.standard_normal((3, n))
    idx = rng.integers(0, 7, n).astype(np.float64)
    vals = dict(v=v, cd=0.3, dt=0.01, g=9.81, wt=np.zeros((7, 3)), idx=idx, v_next_bar=ct,
                v_bar=np.zeros((3, n)), cd_bar=np.zeros(1), wt_bar=np.zeros((7, 3)))
    b = ap.bind(**vals)
    nv = np.sqrt(np.sum(v * v, axis=0))
    want_cd = np.sum(ct * (-0.01 * nv * v))
    want_w = np.zeros((7, 3))
    np.add.at(want_w, idx.astype(int), 0.01 * ct.T)
    for _ in range(2):  # overwritten, not accumulated
        b.launch()
        assert vals["cd_bar"][0] == pytest.approx(want_cd, rel=1e-12)
        np.testing.assert_allclose(vals["wt_bar"], want_w, rtol=1e-11, atol=1e-12)
    cvn = np.sum(ct * v, axis=0)
    want_v = ct - 0.01 * 0.3 * (nv * ct + cvn * v / nv)
    np.testing.assert_allclose(vals["v_bar"], want_v, rtol=1e-12, atol=1e-14)


def test_table_read_in_branch_not_taken_is_not_scattered(cache_dir):
    T, A = table_branch.tangent(["w", "p"]), table_branch.adjoint(["w", "p"])
    tp, ap = eagle.plan.auto([T, A], cache_dir=cache_dir)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([0.0, 1.0, 3.0, 10.0, 5.0, 2.0])  # 10 and 5: out of range, branch not taken
    av = dict(w=w, idx=idx, p=2.0, out_bar=np.ones(6), w_bar=np.full(4, np.nan), p_bar=np.full(1, np.nan))
    ap.bind(**av).launch()
    np.testing.assert_array_equal(av["w_bar"], [2.0, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(av["p_bar"], [1.0 + 2.0 + 4.0 + 3.0])
    tv = dict(w=w, idx=idx, p=2.0, out=np.zeros(6), w_dot=np.ones(4), p_dot=1.0, out_dot=np.zeros(6))
    tp.bind(**tv).launch()
    np.testing.assert_array_equal(tv["out_dot"], [3.0, 4.0, 6.0, 0.0, 0.0, 5.0])
