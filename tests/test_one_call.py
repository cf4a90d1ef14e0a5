"""Direct calls (``kernel(*args, **kwargs)``, eagle/call.py) and ``eagle.simulate``
(eagle/simulate.py), in both dtypes: values against NumPy, the loop against the same loop
written with ``until_done``, the recorded run's gradient against central differences, and the
refusals' texts (pinned, so a change to them is deliberate), with nothing written when a call
is refused."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import eagle.diff
import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import norm, vec

from stepping_kernels import np_tally, tally

DTYPES = (np.float64, np.float32)


@hawk.kernel
def affine(x: Scalar, a: Param, b: Param, y: Mutable[Scalar]):
    y = a * x + b


@hawk.kernel
def drag(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


@hawk.kernel
def lookup(i: Scalar, t: Table[Scalar], y: Mutable[Scalar]):
    y = t.at(i)


@hawk.kernel(steps=1)
def osc(dt: Param, c: Param, t_final: Scalar, terminated: Terminated, x: Mutable[Scalar], v: Mutable[Scalar],
        t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final


@hawk.kernel(steps=1)
def fall(g: Param, dt: Param, terminated: Terminated, z: Mutable[Scalar], w: Mutable[Scalar], steps: Mutable[Scalar]):
    w = w - g * dt
    z = z + dt * w
    steps = steps + 1.0
    terminated = z < 0.0


def np_drag(v, cd, dt, g):
    a = np.array([0.0, 0.0, -g])[:, None] - cd * np.linalg.norm(v, axis=0) * v
    return v + dt * a


def np_osc(x, v, t, t_final, dt, c, max_steps, dtype):
    """The osc loop in NumPy: each sample steps until t >= t_final, in the kernel's order."""
    x, v, t = x.astype(dtype), v.astype(dtype), t.astype(dtype)
    done = np.zeros(x.shape, bool)
    dt, c = dtype(dt), dtype(c)
    steps = 0
    while not done.all() and steps < max_steps:
        vn = v + dt * (-x - c * v)
        xn, tn = x + dt * v, t + dt
        live = ~done
        x, v, t = np.where(live, xn, x), np.where(live, vn, v), np.where(live, tn, t)
        done = done | (live & (tn >= t_final.astype(dtype)))
        steps += 1
    return x, v, t, done, steps


# ------------------------------------------------------------------------------------------
# Direct calls


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_call_binds_like_python_and_returns_the_outputs(dtype):
    x = np.linspace(-1, 1, 7).astype(dtype)
    want = (dtype(2.0) * x + dtype(0.5)).astype(dtype)
    for got in (affine(x, 2.0, 0.5), affine(x=x, a=2.0, b=0.5), affine(x, 2.0, b=0.5)):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
    y = np.zeros_like(x)
    out = affine(x, 2.0, 0.5, y)
    assert out is y  # a Mutable given as an array is updated in place and returned
    np.testing.assert_array_equal(y, want)


def test_numbers_are_one_sample_or_broadcast():
    got = affine(3.0, 2.0, 1.0)
    assert isinstance(got, np.float64) and got == 7.0
    assert affine(3, 2, 1) == 7.0  # ints are numbers for a float plane
    v = np.random.default_rng(1).normal(size=(3, 5))
    np.testing.assert_allclose(drag(v, 0.1, 0.01, 9.81), np_drag(v, 0.1, 0.01, 9.81), rtol=1e-15)
    one = drag(np.array([1.0, 0.0, 2.0]), 0.1, 0.01, 9.81)  # one sample's Vector[3]
    assert one.shape == (3,)
    np.testing.assert_allclose(one, np_drag(np.array([[1.0], [0.0], [2.0]]), 0.1, 0.01, 9.81)[:, 0], rtol=1e-15)
    # a one-sample Vector broadcast beside a batch
    tf = np.array([0.005, 1.0, 2.0])
    x, v, t = osc(0.01, 0.3, tf, x=np.ones(3), v=0.0, t=0.0)
    np.testing.assert_array_equal(t, np.full(3, 0.01))
    np.testing.assert_array_equal(v, np.full(3, -0.01))


def test_a_stepping_kernel_called_runs_one_launch_and_takes_its_mask():
    tf = np.array([0.005, 1.0])
    mask = np.array([False, True])
    x, v, t = osc(0.01, 0.3, tf, mask, np.ones(2), np.zeros(2), np.zeros(2))
    np.testing.assert_array_equal(t, [0.01, 0.0])  # the finished sample kept its values
    np.testing.assert_array_equal(mask, [True, True])


REFUSALS = [
    (lambda: affine(np.arange(4), 2.0, 1.0),
     "eagle: kernel 'affine': plane 'x' is int64, which is not supported; a kernel runs float32 or float64 planes"),
    (lambda: affine(np.array([True, False]), 2.0, 1.0),
     "eagle: kernel 'affine': plane 'x' is bool, which is not supported; a kernel runs float32 or float64 planes"),
    (lambda: affine(True, 2.0, 1.0),
     "hawk kernel 'affine': plane 'x' is Scalar and takes float values, got bool; pass floats (an integer or bool array "
     "is never reinterpreted)"),
    (lambda: affine(np.arange(4.0), 2.0), "hawk kernel 'affine': missing a value for 'b' (Param)"),
    (lambda: affine(np.arange(4.0), 2.0, 1.0, a=3.0), "hawk kernel 'affine': got multiple values for argument 'a'"),
    (lambda: affine(np.arange(4.0), 2.0, 1.0, z=1.0),
     "hawk kernel 'affine': 'z' is not a parameter (parameters: ['x', 'a', 'b', 'y'])"),
    (lambda: affine(np.arange(4.0), 2.0, 1.0, np.zeros(3)),
     "hawk kernel 'affine': 'y' has 3 samples (shape (3,)) but 'x' has 4; per-sample planes must have the same last "
     "axis (or be one sample's value, broadcast)"),
    (lambda: affine(1.0, 2.0, 3.0, 4.0, 5.0), "hawk kernel 'affine': takes 4 positional arguments (x, a, b, y), got 5"),
]


@pytest.mark.parametrize("case", range(len(REFUSALS)))
def test_refusals_name_the_kernel_and_plane(case):
    fn, text = REFUSALS[case]
    with pytest.raises((TypeError, ValueError)) as err:
        fn()
    assert str(err.value) == text


def test_nothing_is_written_when_a_call_fails():
    y = np.full(3, 7.0)
    with pytest.raises(TypeError):
        affine(np.arange(3.0), 2.0, y=y)  # b missing: refused before anything runs
    np.testing.assert_array_equal(y, 7.0)
    # A kernel error while it runs (a Table index out of range at sample 2): samples 0 and 1
    # ran, but the caller's array is only written when the call succeeded.
    with pytest.raises(RuntimeError, match="table 't' index 5 is out of range"):
        lookup(np.array([0.0, 1.0, 5.0]), np.array([1.0, 2.0]), y)
    np.testing.assert_array_equal(y, 7.0)
    assert lookup(np.array([0.0, 1.0, 1.0]), np.array([1.0, 2.0]), y) is y
    np.testing.assert_array_equal(y, [1.0, 2.0, 2.0])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1e19, -0.5])
def test_an_index_of_minus_one_says_where_minus_one_comes_from(bad):
    """A Table index is floor() of the value; NaN, infinities and values beyond +-9e18 read as
    -1, and the error says so wherever it reports -1 (floor(-0.5) is -1 too); nothing is
    written."""
    y = np.full(3, 7.0)
    with pytest.raises(RuntimeError) as err:
        lookup(np.array([0.0, bad, 1.0]), np.array([1.0, 2.0]), y)
    assert str(err.value) == (
        "kernel 'lookup': table 't' index -1 is out of range [0, 2) at sample 1 (an index is floor() of the value "
        "given; NaN, infinities and values beyond +-9e18 read as -1)")
    np.testing.assert_array_equal(y, 7.0)


def test_a_call_reads_an_input_it_overwrites_as_numpys_out_does():
    """An input array that shares memory with a written one is read as it was before the call
    (NumPy's out= rule): the same array, an overlapping view, a Table that is also the output."""
    x = np.linspace(-1, 1, 9)
    x0 = x.copy()
    assert affine(x, 2.0, 0.5, y=x) is x
    np.testing.assert_array_equal(x, 2.0 * x0 + 0.5)
    buf = np.arange(12.0)
    want = 3.0 * buf[2:11] - 1.0
    np.testing.assert_array_equal(affine(buf[2:11], 3.0, -1.0, y=buf[:9]), want)  # y starts two samples earlier
    np.testing.assert_array_equal(buf[:9], want)
    t = np.array([5.0, 6.0, 7.0])
    assert lookup(np.array([2.0, 0.0, 1.0]), t, y=t) is t  # y[i] = t_before[i-th index]
    np.testing.assert_array_equal(t, [7.0, 5.0, 6.0])
    # a kernel that may fail runs on copies of what it writes: the same rule holds
    t = np.array([5.0, 6.0, 7.0])
    lookup(np.array([1.0, 2.0, 0.0]), t, y=t)
    np.testing.assert_array_equal(t, [6.0, 7.0, 5.0])


def test_a_call_refuses_two_written_arrays_that_overlap():
    x = np.ones(4)
    with pytest.raises(ValueError) as err:
        osc(0.01, 0.3, np.ones(4), x=x, v=x, t=np.zeros(4))
    assert str(err.value).startswith("eagle: kernel 'osc': 'x' and 'v' overlap in memory, and the kernel writes 'x';")
    np.testing.assert_array_equal(x, 1.0)


def test_simulate_refuses_an_input_that_overlaps_a_written_plane():
    """A stepping loop cannot read an input "as before": its steps run in lanes that copied
    the sample's inputs when they took it, so an overlap is refused, and nothing runs."""
    x = np.linspace(0.5, 1.5, 6)
    x0 = x.copy()
    with pytest.raises(ValueError) as err:
        eagle.simulate(osc, dt=0.01, c=0.3, t_final=x, x=x, v=np.zeros(6), t=0.0, max_steps=10)
    assert str(err.value) == (
        "eagle: kernel 'osc': 't_final' and 'x' overlap in memory, and the kernel writes 'x'; a plane the kernel "
        "writes needs memory of its own (a launch's samples run in any order, on any thread): bind a copy to one of "
        "them (its .copy()); to update an array in place, make it a Mutable and bind it once")
    np.testing.assert_array_equal(x, x0)


# ------------------------------------------------------------------------------------------
# eagle.simulate


def start(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return dict(x=rng.uniform(0.5, 1.5, n), v=rng.uniform(-0.2, 0.3, n), t=np.zeros(n), t_final=rng.uniform(0.05, 1.5, n))


@pytest.mark.parametrize("dtype", DTYPES)
def test_simulate_equals_until_done_and_numpy(dtype):
    s = {k: a.astype(dtype) for k, a in start().items()}
    res = eagle.simulate(osc, dt=0.01, c=0.3, max_steps=1000, **{k: a.copy() for k, a in s.items()})
    # the same loop written with until_done
    (plan,) = eagle.plan.auto([osc])
    planes = {k: a.copy() for k, a in s.items()}
    mask = np.zeros(len(s["x"]), bool)
    report = eagle.until_done([plan], max_steps=1000, dt=0.01, c=0.3, terminated=mask, **planes).run()
    assert res.status == "finished" and res.done and res.steps == report.steps and res.n == len(s["x"])
    for k in ("x", "v", "t"):
        np.testing.assert_array_equal(getattr(res, k), planes[k])
    np.testing.assert_array_equal(res.finished, mask)
    x, v, t, done, steps = np_osc(s["x"], s["v"], s["t"], s["t_final"], 0.01, 0.3, 1000, dtype)
    assert res.steps == steps
    rtol = 1e-13 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(res.x, x, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(res.v, v, rtol=rtol, atol=rtol)
    assert res.x.dtype == dtype


@pytest.mark.parametrize("record", [False, True])
@pytest.mark.parametrize("given", [False, True])
def test_simulate_returns_sums_over_samples_as_the_last_launch_wrote_them(record, given):
    """hawk.sum / hawk.max outputs and a scatter target of a stepping model: allocated when
    left out (a launch overwrites them) or written into the arrays given, and in the result
    beside the state, as NumPy's plain loop has them after the last launch (simulate of such
    a model raised 'missing value(s) for ['total', 'top']' whether they were given or not)."""
    limit = np.random.default_rng(4).integers(1, 41, 250).astype(np.float64)
    hist = np.zeros(40)
    sums = dict(total=np.zeros(1), top=np.zeros(1)) if given else {}
    res = eagle.simulate(tally, limit=limit, t=0.0, hist=hist, max_steps=30, record=record, **sums)
    want, done, launches = np_tally(limit, 30)
    assert res.steps == launches == 30 and res.status == "max_steps" and list(res.state) == ["t", "total", "top", "hist"]
    np.testing.assert_array_equal(res.finished, done)
    for name, want in want.items():
        np.testing.assert_array_equal(getattr(res, name), want, err_msg=name)
    assert res.hist is hist and all(res.state[k] is v for k, v in sums.items())


def test_a_call_writes_a_sum_into_the_array_given():
    """A sum output given to a direct call is written, as a Mutable's array is (it was refused
    as missing); left out, it is allocated and returned."""
    x = np.arange(5.0)
    total, top = np.full(1, 7.0), np.zeros(1)
    hist = np.zeros(8)
    out = tally(limit=x + 2.0, t=x.copy(), total=total, top=top, hist=hist)
    assert out[1] is total and out[2] is top and out[3] is hist
    np.testing.assert_array_equal(total, [((x + 1.0) * 0.5).sum()])
    np.testing.assert_array_equal(top, [1.0])
    np.testing.assert_array_equal(hist, np.bincount(x.astype(int), minlength=8).astype(float))
    alloc = tally(limit=x + 2.0, t=x.copy(), hist=np.zeros(8))
    np.testing.assert_array_equal(alloc[1], total)


def test_simulate_binds_positionally_updates_arrays_and_stops_at_max_steps():
    s = start()
    x = s["x"].copy()
    res = eagle.simulate(osc, 0.01, 0.3, s["t_final"], x=x, v=s["v"].copy(), t=0.0, max_steps=7)
    assert res.x is x  # the caller's state array, updated in place
    assert res.status == "max_steps" and not res.done and res.steps == 7
    x_np, _, t_np, done_np, _ = np_osc(s["x"], s["v"], s["t"], s["t_final"], 0.01, 0.3, 7, np.float64)
    np.testing.assert_array_equal(res.t, t_np)
    np.testing.assert_array_equal(res.finished, done_np)
    np.testing.assert_allclose(res.x, x_np, rtol=1e-14)
    assert res.report.steps == 7 and res.report.live == (~res.finished).sum()


def test_a_single_trajectory_gives_numbers_back():
    res = eagle.simulate(fall, g=9.81, dt=0.001, z=1.0, w=0.0, steps=0.0, max_steps=10_000)
    assert isinstance(res.z, np.float64) and isinstance(res.finished, bool) and res.finished
    # the drop lands in the step where z first goes below 0: the closed form's step
    n = 0
    z, w = 1.0, 0.0
    while z >= 0.0:
        w = w - 9.81 * 0.001
        z = z + 0.001 * w
        n += 1
    # `steps` is both a state plane and a field: the field (launches) wins, the plane is in .state
    assert res.steps == n and res.state["steps"] == float(n)
    assert res.z == z


def test_simulate_record_gives_the_gradient_of_the_final_state():
    s = start(n=12)
    res = eagle.simulate(osc, dt=0.01, c=0.3, max_steps=1000, record=True, **{k: a.copy() for k, a in s.items()})
    assert res.done and res.steps == np_osc(s["x"], s["v"], s["t"], s["t_final"], 0.01, 0.3, 1000, np.float64)[4]
    grads = eagle.diff.reverse(res.record, {"x": np.ones(12)})

    def final_x_sum(c: float) -> float:
        return float(np_osc(s["x"], s["v"], s["t"], s["t_final"], 0.01, c, 1000, np.float64)[0].sum())

    h = 1e-6
    fd = (final_x_sum(0.3 + h) - final_x_sum(0.3 - h)) / (2 * h)
    np.testing.assert_allclose(grads["osc.c"], fd, rtol=1e-7)
    # d sum(x_final) / d x0: each sample's own, against central differences
    eps = 1e-7
    for i in (0, 5, 11):
        up, dn = s["x"].copy(), s["x"].copy()
        up[i] += eps
        dn[i] -= eps
        fd_i = (np_osc(up, s["v"], s["t"], s["t_final"], 0.01, 0.3, 1000, np.float64)[0][i]
                - np_osc(dn, s["v"], s["t"], s["t_final"], 0.01, 0.3, 1000, np.float64)[0][i]) / (2 * eps)
        np.testing.assert_allclose(grads["x"][i], fd_i, rtol=1e-6)


SIM_REFUSALS = [
    (dict(terminated=np.zeros(3, bool)),
     "eagle.simulate: 'terminated' is the Terminated mask: every sample starts live and the loop drives it (it is "
     "returned as result.finished); do not pass it"),
    (dict(v=None), "eagle.simulate: the Mutable 'v' is read before it is written, so it needs an initial value: pass v=..."),
    (dict(v=np.zeros(4)),
     "eagle.simulate: 'v' has 4 samples (shape (4,)) but 'x' has 3; per-sample planes must have the same last axis "
     "(or be one sample's value, broadcast)"),
    (dict(q=1.0), "eagle.simulate: ['q'] are not parameters of the model ({'osc': ['dt', 'c', 't_final', 'terminated', "
                  "'x', 'v', 't']})"),
]


@pytest.mark.parametrize("case", range(len(SIM_REFUSALS)))
def test_simulate_refusals(case):
    change, text = SIM_REFUSALS[case]
    kw = dict(dt=0.01, c=0.3, t_final=np.ones(3), x=np.ones(3), v=np.zeros(3), t=np.zeros(3))
    kw.update(change)
    kw = {k: v for k, v in kw.items() if v is not None}
    x_before = kw["x"].copy()
    with pytest.raises((TypeError, ValueError)) as err:
        eagle.simulate(osc, max_steps=10, **kw)
    assert str(err.value) == text
    np.testing.assert_array_equal(kw["x"], x_before)  # nothing ran


@pytest.mark.parametrize("max_steps, exc, text", [
    (-1, ValueError, "eagle.simulate: max_steps is a number of launches >= 0, got -1"),
    (10.0, TypeError, "eagle.simulate: max_steps is a number of launches (an int >= 0), got float"),
    (True, TypeError, "eagle.simulate: max_steps is a number of launches (an int >= 0), got bool"),
    (None, TypeError, "eagle.simulate: max_steps is a number of launches (an int >= 0), got NoneType"),
])
def test_simulate_refuses_a_budget_that_is_not_a_whole_number_of_launches(max_steps, exc, text):
    x = np.ones(3)
    with pytest.raises(exc) as err:
        eagle.simulate(osc, dt=0.01, c=0.3, t_final=np.ones(3), x=x, v=np.zeros(3), t=np.zeros(3), max_steps=max_steps)
    assert type(err.value) is exc and str(err.value) == text
    assert (x == 1).all()  # nothing ran


def test_events_refine_needs_the_kernels_time_and_events_is_checked():
    # events="refine" itself is tested in tests/test_events.py
    with pytest.raises(ValueError, match="events='refine' needs kernel 'fall' to declare its time plane and step"):
        eagle.simulate(fall, g=9.81, dt=0.01, z=1.0, w=0.0, steps=0.0, max_steps=10, events="refine")
    with pytest.raises(ValueError, match="events is one of"):
        eagle.simulate(fall, g=9.81, dt=0.01, z=1.0, w=0.0, steps=0.0, max_steps=10, events="nope")


def test_a_model_of_two_kernels_and_until():
    @hawk.kernel(steps=1)
    def push(dt: Param, x: Mutable[Scalar], v: Mutable[Scalar]):
        x = x + dt * v  # no mask: every sample, every launch

    @hawk.kernel(steps=1)
    def stop_at(limit: Scalar, x: Scalar, terminated: Terminated):
        terminated = x >= limit

    x = np.zeros(4)
    res = eagle.simulate(push, dt=0.1, x=x, v=np.array([1.0, 2.0, 3.0, 4.0]), limit=np.ones(4), until=stop_at,
                         max_steps=100)
    # until= runs last: the loop stops after the launch in which the slowest sample reached
    # its limit (ten times 0.1 is 0.9999999999999999: 11), and push, which has no mask, moved
    # every sample in each of those launches.
    assert res.done and res.steps == 11
    for i, v in enumerate([1.0, 2.0, 3.0, 4.0]):
        xi = 0.0
        for _ in range(11):
            xi = xi + 0.1 * v
        assert res.x[i] == xi
    with pytest.raises(TypeError, match="a model of several kernels takes its planes by name"):
        eagle.simulate([push, stop_at], 0.1, x=x, v=x, limit=x, max_steps=3)
