"""Stops located inside the step (``events="refine"``: hawk/events.py, eagle/events.py) and
gradients through them, in both dtypes, against closed forms: a drag-free ball under an exact
kinematic update and a linear decay under an exact exponential update (their per-step
solutions are exact, so the refined crossing IS the analytic one), the derivatives against the
closed forms and against central differences of the refined times; the refusals' texts
pinned; the GPU path's logic through the CPU emulation of the device loop, and the derived
kernels' CUDA through NVRTC (never run: no GPU here)."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import eagle.diff
import eagle.loop
import eagle.plan
import hawk
from eagle.events import EventRunner, _saving_plan, check_refine, model_of
from hawk import Mutable, Param, Random, Scalar, Terminated, Vector
from hawk.events import event_kernel, saving_kernel, stop_rule
from hawk.math import exp, norm, vec
from raptor_core import _core

DTYPES = (np.float64, np.float32)
G = 9.81


@hawk.kernel(steps=1, time="t", time_step="dt")
def ball(g: Param, dt: Param, terminated: Terminated, x: Mutable[Scalar], z: Mutable[Scalar], u: Mutable[Scalar],
         w: Mutable[Scalar], t: Mutable[Scalar]):
    x = x + u * dt
    z = z + w * dt - 0.5 * g * dt * dt  # exact for constant gravity
    w = w - g * dt
    t = t + dt
    terminated = z < 0.0


@hawk.kernel(steps=1, time="t", time_step="dt")
def decay(a: Param, dt: Param, c: Scalar, terminated: Terminated, x: Mutable[Scalar], t: Mutable[Scalar]):
    x = x * exp(-a * dt)  # exact for x' = -a x
    t = t + dt
    terminated = x < c


@hawk.kernel(steps=1, time="t", time_step="dt")
def ball_or_timeout(g: Param, dt: Scalar, t_max: Scalar, terminated: Terminated, z: Mutable[Scalar], w: Mutable[Scalar],
                    t: Mutable[Scalar]):
    z = z + w * dt - 0.5 * g * dt * dt
    w = w - g * dt
    t = t + dt
    terminated = z < 0.0 or t >= t_max


@hawk.kernel(steps=1, time="t", time_step="dt", guard=hawk.Guard(active_set=True))
def past_the_line(g: Param, dt: Param, x_min: Scalar, terminated: Terminated, x: Mutable[Scalar], z: Mutable[Scalar],
                  u: Mutable[Scalar], w: Mutable[Scalar], t: Mutable[Scalar]):
    x = x + u * dt
    z = z + w * dt - 0.5 * g * dt * dt
    w = w - g * dt
    t = t + dt
    terminated = not (z >= 0.0 or x <= x_min)  # below ground AND past the line


@hawk.kernel(steps=1, time="t", time_step="dt")
def counted(dt: Param, k: Mutable[Scalar[hawk.int32]], x: Mutable[Scalar], t: Mutable[Scalar], terminated: Terminated):
    x = x + dt
    t = t + dt
    k = k + 1
    terminated = k >= 10


@hawk.kernel(steps=1, time="t", time_step="dt")
def float_counter(dt: Param, n: Mutable[Scalar], t: Mutable[Scalar], terminated: Terminated):
    n = n + 1.0
    t = t + dt
    terminated = n >= 10.0


@hawk.kernel(steps=1, time="t", time_step="dt")
def flight(cd: Param, dt: Param, g: Param, terminated: Terminated, r: Mutable[Vector[3]], v: Mutable[Vector[3]],
           t: Mutable[Scalar]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v  # page 002's flight, its state in place
    v = v + dt * a
    r = r + dt * v
    t = t + dt
    terminated = r[2] < 0.0


def tol(dtype):
    return 1e-12 if dtype == np.float64 else 2e-5


def balls(n=30, seed=0):
    rng = np.random.default_rng(seed)
    speed, angle, h = rng.uniform(5, 20, n), rng.uniform(0.2, 1.2, n), rng.uniform(0.1, 2.0, n)
    return speed * np.cos(angle), speed * np.sin(angle), h


def landing(u, w, h):
    """The drag-free ball's landing time and range, and d T/d (w, h, g)."""
    s = np.sqrt(w ** 2 + 2 * G * h)
    T = (w + s) / G
    return T, u * T, (1 + w / s) / G, 1 / s, -(w + s) / G ** 2 + h / (s * G)


def run_ball(dtype, record=False, **kw):
    u, w, h = balls()
    n = len(u)
    res = eagle.simulate(ball, g=G, dt=0.01, x=np.zeros(n, dtype), z=h.astype(dtype), u=u.astype(dtype),
                         w=w.astype(dtype), t=np.zeros(n, dtype), max_steps=10_000, events="refine", record=record, **kw)
    return res, u, w, h


def line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "line_of" not in line)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("record", [False, True])
def test_a_ball_lands_at_the_closed_forms_time_and_range(dtype, record):
    res, u, w, h = run_ball(dtype, record)
    T, R, *_ = landing(u, w, h)
    assert res.done and res.status == "finished" and res.x.dtype == dtype
    np.testing.assert_allclose(res.t_stop, T, rtol=tol(dtype))
    np.testing.assert_allclose(res.t, T, rtol=tol(dtype))  # the time plane is at the event too
    np.testing.assert_allclose(res.x, R, rtol=tol(dtype))
    np.testing.assert_allclose(res.z, 0.0, atol=tol(dtype) * 10)
    # The same launches as events="step" (the stop is moved back inside its last step).
    step = eagle.simulate(ball, g=G, dt=0.01, x=np.zeros(len(u), dtype), z=h.astype(dtype), u=u.astype(dtype),
                          w=w.astype(dtype), t=np.zeros(len(u), dtype), max_steps=10_000)
    assert res.steps == step.steps and step.t_stop is None
    assert np.all(res.t <= step.t) and np.all(step.t - res.t < 0.01 + 1e-6)


def test_a_single_trajectory_gives_its_event_time_as_a_number():
    res = eagle.simulate(ball, g=G, dt=0.05, x=0.0, z=1.0, u=2.0, w=3.0, t=0.0, max_steps=1000, events="refine")
    T, R, *_ = landing(np.array(2.0), np.array(3.0), np.array(1.0))
    assert isinstance(res.t_stop, np.float64) and abs(res.t_stop - T) <= 1e-12 * T and abs(res.x - R) <= 1e-12 * R


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_gradient_includes_the_landing_time(dtype):
    res, u, w, h = run_ball(dtype, record=True)
    T, R, dT_dw, dT_dh, dT_dg = landing(u, w, h)
    rt = 1e-12 if dtype == np.float64 else 2e-3
    gx = eagle.diff.reverse(res.record, {"x": np.ones(len(u), dtype)})  # d sum(range)
    np.testing.assert_allclose(gx["u"], T, rtol=rt)
    np.testing.assert_allclose(gx["w"], u * dT_dw, rtol=rt)
    np.testing.assert_allclose(gx["z"], u * dT_dh, rtol=rt)
    np.testing.assert_allclose(gx["ball.g"], (u * dT_dg).sum(), rtol=rt)
    gt = eagle.diff.reverse(res.record, {"t": np.ones(len(u), dtype)})  # d sum(landing time)
    np.testing.assert_allclose(gt["w"], dT_dw, rtol=rt)
    np.testing.assert_allclose(gt["z"], dT_dh, rtol=rt)
    np.testing.assert_allclose(gt["ball.g"], dT_dg.sum(), rtol=rt)
    # The event time does not depend on the step length (only the crossing fixes it).
    assert abs(gt["ball.dt"]) < (1e-9 if dtype == np.float64 else 1e-1)


def run_decay(dtype, a, x0, c, record=False):
    n = len(x0)
    return eagle.simulate(decay, a=a, dt=0.1, c=c.astype(dtype), x=x0.astype(dtype), t=np.zeros(n, dtype),
                          max_steps=10_000, events="refine", record=record)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_linear_decay_stops_at_log_x0_over_c_over_a_with_its_derivatives(dtype):
    rng = np.random.default_rng(3)
    x0, c, a = rng.uniform(1.0, 5.0, 16), rng.uniform(0.05, 0.5, 16), 0.7
    res = run_decay(dtype, a, x0, c, record=True)
    T = np.log(x0 / c) / a
    np.testing.assert_allclose(res.t_stop, T, rtol=tol(dtype))
    np.testing.assert_allclose(res.x, c, rtol=tol(dtype) * 10)
    g = eagle.diff.reverse(res.record, {"t": np.ones(16, dtype)})
    rt = 1e-11 if dtype == np.float64 else 2e-3
    np.testing.assert_allclose(g["x"], 1 / (a * x0), rtol=rt)        # closed forms
    np.testing.assert_allclose(g["c"], -1 / (a * c), rtol=rt)
    np.testing.assert_allclose(g["decay.a"], (-np.log(x0 / c) / a ** 2).sum(), rtol=rt)
    if dtype == np.float64:  # against central differences of the refined times themselves
        h = 1e-6
        fd = (run_decay(dtype, a + h, x0, c).t_stop.sum() - run_decay(dtype, a - h, x0, c).t_stop.sum()) / (2 * h)
        np.testing.assert_allclose(g["decay.a"], fd, rtol=1e-7)
        for i in (0, 7):
            up, dn = x0.copy(), x0.copy()
            up[i] += h
            dn[i] -= h
            fd_i = (run_decay(dtype, a, up, c).t_stop[i] - run_decay(dtype, a, dn, c).t_stop[i]) / (2 * h)
            np.testing.assert_allclose(g["x"][i], fd_i, rtol=1e-7)


@pytest.mark.parametrize("dtype", DTYPES)
def test_or_of_two_rules_stops_at_the_first_crossing_with_a_per_sample_step(dtype):
    n = 6
    w, h = np.full(n, 5.0), np.ones(n)
    T, *_ = landing(np.zeros(n), w, h)
    t_max = np.where(np.arange(n) % 2 == 0, T * 0.5, T + 1.0)
    dt = np.linspace(0.01, 0.03, n)
    res = eagle.simulate(ball_or_timeout, g=G, dt=dt.astype(dtype), t_max=t_max.astype(dtype), z=h.astype(dtype),
                         w=w.astype(dtype), t=np.zeros(n, dtype), max_steps=10_000, events="refine")
    np.testing.assert_allclose(res.t_stop, np.minimum(T, t_max), rtol=tol(dtype))
    np.testing.assert_allclose(res.z[1::2], 0.0, atol=1e-10 if dtype == np.float64 else 1e-4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_and_not_of_rules_stops_when_the_last_of_them_crosses_with_an_active_set(dtype):
    u, w, h = balls(10)
    T, R, *_ = landing(u, w, h)
    x_min = R * np.where(np.arange(10) % 2 == 0, 0.5, 1.5)  # even: past the line before landing
    res = eagle.simulate(past_the_line, g=G, dt=0.01, x_min=x_min.astype(dtype), x=np.zeros(10, dtype),
                         z=h.astype(dtype), u=u.astype(dtype), w=w.astype(dtype), t=np.zeros(10, dtype),
                         max_steps=10_000, events="refine")
    np.testing.assert_allclose(res.t_stop, np.maximum(T, x_min / u), rtol=tol(dtype))
    assert stop_rule(past_the_line).tree == ("not", ("or", [("cmp", 0), ("cmp", 1)]))


def test_until_done_refines_and_the_device_loop_gives_the_same_stops():
    """until_done(events='refine') on the host, and the same event runner over the device
    plan of the loop run on the CPU (``device_emulation``: how the GPU path's logic is
    tested here; it has not run on a GPU)."""
    u, w, h = balls(12)
    (plan,) = eagle.plan.auto([ball])
    runs = []
    for device in (False, True):
        planes = dict(x=np.zeros(12), z=h.copy(), u=u.copy(), w=w.copy(), t=np.zeros(12))
        mask = np.zeros(12, bool)
        if not device:
            runner = eagle.until_done([plan], max_steps=10_000, events="refine", g=G, dt=0.01, terminated=mask, **planes)
        else:
            model = model_of(ball, check_refine(ball, "raise", "test"), "host")
            values = dict(planes, **{f"_event_prev_{s}": np.zeros(12) for s in model.state})
            inner = eagle.loop.device_emulation([_saving_plan(model)], max_steps=10_000, g=G, dt=0.01, terminated=mask,
                                                **values)
            runner = EventRunner(inner, model, dict(values, g=G, dt=0.01, terminated=mask), "raise", "test")
        first = runner.run(max_steps=150)  # stop part-way and go on: each run refines its own stops
        assert np.isnan(runner.t_stop[~mask]).all()
        report = runner.run()
        assert report.done and first.steps + report.steps == runner.steps
        runs.append((planes, runner.t_stop))
    T, R, *_ = landing(u, w, h)
    for planes, t_stop in runs:
        np.testing.assert_allclose(t_stop, T, rtol=1e-12)
        np.testing.assert_allclose(planes["x"], R, rtol=1e-12)
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    sim = eagle.simulate(ball, g=G, dt=0.01, x=np.zeros(12), z=h.copy(), u=u.copy(), w=w.copy(), t=np.zeros(12),
                         max_steps=10_000, events="refine")  # the same loop in one call
    np.testing.assert_array_equal(sim.t_stop, runs[0][1])
    np.testing.assert_array_equal(sim.x, runs[0][0]["x"])


def test_a_rule_without_continuous_form_is_refused_or_stopped_at_the_step():
    line = line_of("terminated = k >= 10")
    kw = dict(dt=0.1, k=np.zeros(3, np.int32), x=np.zeros(3), t=np.zeros(3), max_steps=100)
    with pytest.raises(ValueError) as err:
        eagle.simulate(counted, events="refine", **kw)
    assert str(err.value) == (
        f"eagle.simulate: kernel 'counted': the stop rule at {__file__}:{line} (terminated = k >= 10) has no continuous "
        "form: 'k' or '10' is an integer or bool value; its crossing cannot be located inside the step. Pass "
        "on_no_event='step' to stop such samples at the end of their step, as events='step' does")
    assert (kw["k"] == 0).all()  # refused before anything ran
    res = eagle.simulate(counted, events="refine", on_no_event="step", **kw)
    assert res.steps == 10 and (res.k == 10).all()
    np.testing.assert_allclose(res.t_stop, 1.0, rtol=1e-12)


def test_a_stop_with_no_crossing_in_time_is_found_at_run_time():
    line = line_of("terminated = n >= 10.0")
    with pytest.raises(ValueError) as err:
        eagle.simulate(float_counter, dt=0.1, n=np.zeros(2), t=np.zeros(2), max_steps=100, events="refine")
    assert str(err.value) == (
        f"eagle.simulate: kernel 'float_counter': the stop rule at {__file__}:{line} (terminated = n >= 10.0) held for 2 "
        "samples without a crossing inside their last step to locate (it held after a step of zero length, or g jumped "
        "across zero: a counter or a random draw?); they were left at the end of that step. Pass on_no_event='step' to "
        "accept that")
    res = eagle.simulate(float_counter, dt=0.1, n=np.zeros(2), t=np.zeros(2), max_steps=100, events="refine",
                         on_no_event="step")
    assert res.steps == 10 and (res.state["n"] == 10.0).all()  # res.n is the sample count


def test_refusals():
    @hawk.kernel(steps=1)
    def plain(dt: Param, z: Mutable[Scalar], terminated: Terminated):
        z = z - dt
        terminated = z < 0.0

    @hawk.kernel(steps=2, time="t", time_step="dt")
    def two(dt: Param, z: Mutable[Scalar], t: Mutable[Scalar], terminated: Terminated):
        z = z - dt
        t = t + dt
        terminated = z < 0.0

    @hawk.kernel(steps=1, time="t", time_step="dt")
    def noisy(dt: Param, rng: Random, z: Mutable[Scalar], t: Mutable[Scalar], terminated: Terminated):
        z = z - dt * rng.uniform()
        t = t + dt
        terminated = z < 0.0

    @hawk.kernel(steps=1, time="t", time_step="dt")
    def equal(dt: Param, z: Mutable[Scalar], t: Mutable[Scalar], terminated: Terminated):
        z = z - dt
        t = t + dt
        terminated = z == 0.0

    with pytest.raises(ValueError) as err:
        eagle.simulate(plain, dt=0.1, z=1.0, max_steps=10, events="refine")
    assert str(err.value) == ("eagle.simulate: events='refine' needs kernel 'plain' to declare its time plane and step: "
                              "@hawk.kernel(steps=1, time='t', time_step='dt')")
    with pytest.raises(ValueError) as err:
        eagle.simulate(two, dt=0.1, z=1.0, t=0.0, max_steps=10, events="refine")
    assert str(err.value) == ("eagle.simulate: events='refine' re-runs one step of kernel 'two', which makes 2 steps "
                              "per launch; declare steps=1")
    with pytest.raises(ValueError) as err:
        eagle.simulate(noisy, dt=0.1, rng=0, z=1.0, t=0.0, max_steps=10, events="refine")
    assert str(err.value) == ("eagle.simulate: events='refine' re-runs the last step of kernel 'noisy' for the samples "
                              "that stopped in it, and a kernel that draws random numbers would draw others; draw them in "
                              "a kernel of their own, or use events='step'")
    with pytest.raises(ValueError, match=r"\(terminated = z == 0.0\) has no continuous form: 'z == 0.0' compares with Eq"):
        eagle.simulate(equal, dt=0.1, z=1.0, t=0.0, max_steps=10, events="refine")
    with pytest.raises(ValueError) as err:
        eagle.simulate([ball, ball], g=G, dt=0.1, x=0.0, z=1.0, u=0.0, w=0.0, t=0.0, max_steps=10, events="refine")
    assert str(err.value) == ("eagle.simulate: events='refine' re-runs the step of a model of one kernel (with its stop "
                              "rule); this model has 2: ['ball', 'ball']")
    @hawk.kernel(steps=1, time="t", time_step="dt")
    def no_mask(dt: Param, t: Mutable[Scalar]):
        t = t + dt

    (plan,) = eagle.plan.auto([no_mask])
    with pytest.raises(ValueError) as err:
        eagle.until_done([plan], max_steps=3, events="refine", dt=0.1, t=np.zeros(2))
    assert str(err.value) == "eagle.until_done: kernel 'no_mask' has no Terminated mask, so it has no stop rule to locate"
    with pytest.raises(ValueError, match="on_no_event is one of"):
        eagle.until_done([], events="refine", on_no_event="skip")
    with pytest.raises(hawk.KernelError) as kerr:
        @hawk.kernel(steps=1, time="z", time_step="dt")
        def bad_time(dt: Param, z: Scalar, y: Mutable[Scalar], terminated: Terminated):
            y = z
            terminated = z < 0.0
    assert "hawk kernel 'bad_time': time='z' names the time plane, a float Mutable[Scalar] the step reads and advances " \
           "(t = t + dt); 'z' is Scalar" in str(kerr.value)
    with pytest.raises(hawk.KernelError, match="time_step='h' names the step's length, a float Param or Scalar; the "
                                               "kernel has no parameter 'h'"):
        @hawk.kernel(steps=1, time="t", time_step="h")
        def bad_step(dt: Param, t: Mutable[Scalar], terminated: Terminated):
            t = t + dt
            terminated = t > 1.0


def test_the_stop_rule_is_read_from_the_source():
    r = stop_rule(ball_or_timeout)
    assert r.continuous and r.components == (("z", "0.0"), ("t", "t_max")) and r.ops == ("<", ">=")
    assert r.tree == ("or", [("cmp", 0), ("cmp", 1)]) and r.line == line_of("terminated = z < 0.0 or t >= t_max")
    assert r.holds([np.array([False, True]), np.array([False, False])]).tolist() == [False, True]


DERIVED = {
    "event_form": lambda: event_kernel(ball, stop_rule(ball)),
    "event_tangent": lambda: event_kernel(ball, stop_rule(ball)).tangent(["dt"]),
    "event_adjoint": lambda: event_kernel(decay, stop_rule(decay)).adjoint(["a", "dt", "c", "x", "t"]),
    "saving_form": lambda: saving_kernel(ball),
}


@pytest.mark.parametrize("case", sorted(DERIVED))
def test_the_derived_kernels_cuda_compiles_with_nvrtc(case):
    from conftest import nvrtc_missing

    if nvrtc_missing():
        pytest.skip("NVRTC not found")
    assert _core.nvrtc_check([DERIVED[case]()._core], "sm_90") == 2


def launch_balls(n=24, seed=1):
    rng = np.random.default_rng(seed)
    speed, elev, head = 20 + 20 * rng.uniform(size=n), np.radians(20 + 50 * rng.uniform(size=n)), 2 * np.pi * rng.uniform(size=n)
    v0 = np.stack([speed * np.cos(elev) * np.cos(head), speed * np.cos(elev) * np.sin(head), speed * np.sin(elev)])
    r0 = np.zeros((3, n))
    r0[2] = 1.0
    return r0, v0


def mean_range(cd, events="refine", record=False, dtype=np.float64):
    r0, v0 = launch_balls()
    n = r0.shape[1]
    res = eagle.simulate(flight, cd=cd, dt=0.02, g=G, r=r0.astype(dtype), v=v0.astype(dtype), t=np.zeros(n, dtype),
                         max_steps=1000, events=events, record=record)
    return res, np.hypot(res.r[0], res.r[1]).mean()


@pytest.mark.parametrize("dtype", DTYPES)
def test_page_002s_balls_land_exactly_and_the_range_gradient_includes_the_landing_time(dtype):
    cd = 0.004
    res, m = mean_range(cd, record=True, dtype=dtype)
    n = res.n
    assert res.done and np.abs(res.r[2]).max() < (1e-12 if dtype == np.float64 else 1e-4)  # on the ground
    rng_ = np.hypot(res.r[0], res.r[1])
    seed = np.stack([res.r[0] / rng_, res.r[1] / rng_, np.zeros(n)]).astype(dtype) / n
    grad = eagle.diff.reverse(res.record, {"r": seed})["flight.cd"]
    h = 1e-7
    fd = (mean_range(cd + h)[1] - mean_range(cd - h)[1]) / (2 * h)  # of the refined ranges, float64
    np.testing.assert_allclose(grad, fd, rtol=1e-6 if dtype == np.float64 else 2e-3)
    # Without the event the landing step is held fixed: the slope misses the landing time's
    # part (here -2621 against -3477).
    res_s, _ = mean_range(cd, events="step", record=True, dtype=dtype)
    rng_s = np.hypot(res_s.r[0], res_s.r[1])
    seed_s = np.stack([res_s.r[0] / rng_s, res_s.r[1] / rng_s, np.zeros(n)]).astype(dtype) / n
    held = eagle.diff.reverse(res_s.record, {"r": seed_s})["flight.cd"]
    assert abs(held - fd) > 10 * abs(grad - fd)


def test_newton_converges_in_a_few_tangent_launches(monkeypatch):
    """The refinement of 30 balls takes a handful of launches of the tangent kernel: the
    crossing at 0 and 1, Newton from the secant's guess (a converged step on the bracket's end
    is accepted, not bisected to the tolerance), the jump check and the final state."""
    import eagle.events as ev

    launches = []
    run = ev._Step.run

    def counting(self, sel, theta):
        launches.append(int(sel.shape[0]))
        return run(self, sel, theta)

    monkeypatch.setattr(ev._Step, "run", counting)
    res, u, w, h = run_ball(np.float64)
    assert len(launches) <= 10 and sum(launches) <= 10 * len(u)
    np.testing.assert_allclose(res.t_stop, landing(u, w, h)[0], rtol=1e-12)
