"""eagle.until_done over the one C++ stepping loop (cpp/runtime/loop.hpp), from Python.

The loop's launch counts against a count computed here from each sample's own finishing step
(a ``tick`` kernel counts steps up to a per-sample limit): a loop of one kernel (fused: 64
launches' worth of steps per pass) and the same loop with a foreign node (plain launches)
agree with it and with each other, for stepping kernels too; runs in pieces, progress between
chunks, foreign nodes that change the mask or raise, kernel errors, a second mask that is not
the loop's, and active sets. A kernel with sums over samples steps one launch at a time, each
sum over that launch's live samples, as NumPy's plain loop has them; a tangent kernel (forward
sensitivities) steps fused as its plain loop does. The page tests of loops are in tests/test_graphs.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import eagle.loop
import hawk
from eagle.graph import opaque
from eagle.errors import ModeError
from hawk import Guard, Mutable, Scalar, Table, Terminated
from raptor_core import _core

from conftest import plan_kernels
from stepping_kernels import np_tally, osc, tally


@hawk.kernel(steps=1)
def tick(limit: Scalar, terminated: Terminated, t: Mutable[Scalar]):
    t = t + 1.0
    terminated = t >= limit


@hawk.kernel(steps=3)
def tick3(limit: Scalar, terminated: Terminated, t: Mutable[Scalar]):
    t = t + 1.0
    terminated = t >= limit


@hawk.kernel(steps=1, guard=Guard(active_set=True))
def tick_active(limit: Scalar, terminated: Terminated, t: Mutable[Scalar]):
    t = t + 1.0
    terminated = t >= limit


@hawk.kernel(steps=1)
def tock(limit2: Scalar, done2: Terminated, u: Mutable[Scalar]):
    u = u + 1.0
    done2 = u >= limit2


@hawk.kernel(steps=1)
def look(i: Scalar, w: Table[Scalar], terminated: Terminated, y: Mutable[Scalar]):
    y = y + w.at(i)
    terminated = y > 100.0


osc_tangent = osc.tangent(["x", "v"])


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels([tick, tick3, tick_active, tock, look, tally, osc_tangent], module_cache_dir)


def limits(n: int, seed: int, most: int = 400) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, most + 1, n).astype(np.float64)


def expected(limit: np.ndarray, unit: int, budget: int) -> tuple[int, np.ndarray]:
    """Launches a plain loop makes (the launch in which the last sample finishes, or the
    budget) and each sample's t after them."""
    needed = int(np.max(np.ceil(limit / unit))) if limit.size else 0
    launches = min(needed, max(budget, 0))
    return launches, np.minimum(limit, launches * unit)


class NoOp:
    """A foreign node that does nothing but count its calls (and can act on its k-th call)."""

    kind = "test_node"
    reads: dict = {}
    writes: dict = {}
    runs_on_host = True

    def __init__(self, action=None, at: int = -1) -> None:
        self.calls = 0
        self.action, self.at = action, at

    def run(self) -> None:
        self.calls += 1
        if self.calls == self.at:
            self.action()


@pytest.mark.parametrize("name,unit", [("tick", 1), ("tick3", 3), ("tick_active", 1)])
@pytest.mark.parametrize("budget", [0, 1, 37, 64, 100, 150, 1000])
def test_fused_and_plain_loops_count_like_the_schedule(plans, name, unit, budget):
    limit = limits(500, seed=budget)
    want_steps, want_t = expected(limit, unit, budget)
    results = []
    for with_node in (False, True):
        t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)
        items = ([NoOp()] if with_node else []) + [plans[name]]
        runner = eagle.until_done(items, max_steps=budget, limit=limit, terminated=mask, t=t)
        assert (not runner.fused) == with_node
        report = runner.run()
        assert report.steps == want_steps, (with_node, report)
        np.testing.assert_array_equal(t, want_t)
        np.testing.assert_array_equal(mask, limit <= want_steps * unit)
        assert report.live == int((~mask).sum()) and report.done == bool(mask.all())
        if with_node:
            assert items[0].calls == want_steps
        results.append((report.steps, t.copy(), mask.copy()))
    assert results[0][0] == results[1][0]


def test_runs_in_pieces_add_up(plans):
    limit = limits(300, seed=1, most=500)
    total, want_t = expected(limit, 3, 10**6)
    t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)
    runner = eagle.until_done([plans["tick3"]], limit=limit, terminated=mask, t=t)
    pieces = []
    while True:
        r = runner.run(max_steps=70)
        pieces.append(r.steps)
        if r.done:
            break
    assert all(p == 70 for p in pieces[:-1]) and 0 < pieces[-1] <= 70
    assert sum(pieces) == runner.steps == total
    np.testing.assert_array_equal(t, want_t)
    assert runner.run(max_steps=70).steps == 0  # nothing live: no launch


class FakeClock:
    """Stands in for eagle.loop's ``time`` module: each reading is one second later."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now


def test_progress_between_fused_chunks(plans, monkeypatch):
    limit = limits(200, seed=2, most=300)
    limit[0] = 300.0  # the last sample finishes in launch 300
    monkeypatch.setattr(eagle.loop, "time", FakeClock())
    calls = []
    t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)
    report = eagle.until_done([plans["tick"]], max_steps=1000, progress=lambda s, lv: calls.append((s, lv)),
                              limit=limit, terminated=mask, t=t).run()
    assert report.steps == 300 and report.done
    want = [(s, int((limit > s).sum())) for s in (64, 128, 192, 256, 300)]
    assert calls == want


def test_a_foreign_node_that_finishes_the_mask_stops_the_loop(plans):
    limit = np.full(50, 1000.0)
    t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)
    node = NoOp(action=lambda: mask.fill(True), at=5)
    report = eagle.until_done([plans["tick"], node], max_steps=100, limit=limit, terminated=mask, t=t).run()
    assert report.steps == 5 and report.done and report.finished == 50
    np.testing.assert_array_equal(t, 5.0)


def test_a_foreign_node_error_comes_through(plans):
    limit = np.full(10, 1000.0)
    t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)

    def fail():
        raise ZeroDivisionError("node failed on purpose")

    runner = eagle.until_done([plans["tick"], NoOp(action=fail, at=3)], max_steps=100, limit=limit, terminated=mask, t=t)
    with pytest.raises(ZeroDivisionError, match="on purpose"):
        runner.run()
    np.testing.assert_array_equal(t, 3.0)  # the third launch of tick ran before the node


def test_a_kernel_error_names_the_kernel(plans):
    n = 8
    i = np.zeros(n)
    i[5] = 12.0
    mask = np.zeros(n, bool)
    runner = eagle.until_done([plans["look"]], max_steps=10, i=i, w=np.ones(4), terminated=mask, y=np.zeros(n))
    with pytest.raises(RuntimeError, match="kernel 'look'.*'w' index 12"):
        runner.run()


def test_a_second_mask_is_not_the_loops(plans):
    """Samples finished in another kernel's mask do not make the loop's mask less live."""
    n = 64
    limit = limits(n, seed=3, most=50)
    t, mask = np.zeros(n), np.zeros(n, bool)
    u, done2 = np.zeros(n), np.zeros(n, bool)
    report = eagle.until_done([plans["tick"], plans["tock"]], max_steps=1000, limit=limit, terminated=mask, t=t,
                              limit2=np.ones(n), done2=done2, u=u).run()
    assert report.steps == int(limit.max()) and report.done and mask.all()
    assert done2.all() and (u == 1.0).all()


def test_budgets_are_whole_numbers_of_launches_checked_before_anything_runs(plans):
    """A negative budget is refused (ValueError), a float or bool one too (TypeError), by
    until_done before it binds and by run before it launches; 0 runs nothing; numpy ints pass."""
    limit = np.full(4, 3.0)
    t, mask = np.zeros(4), np.zeros(4, bool)
    with pytest.raises(ValueError, match=r"^eagle\.until_done: max_steps is a number of launches >= 0, got -3$"):
        eagle.until_done([plans["tick"]], max_steps=-3, limit=limit, terminated=mask, t=t)
    with pytest.raises(TypeError, match=r"^eagle\.until_done: max_steps is a number of launches \(an int >= 0\), got float$"):
        eagle.until_done([plans["tick"]], max_steps=2.0, limit=limit, terminated=mask, t=t)
    with pytest.raises(TypeError, match="got bool"):
        eagle.loop.device_emulation([plans["tick"]], max_steps=True, limit=limit, terminated=mask, t=t)
    runner = eagle.until_done([plans["tick"]], limit=limit, terminated=mask, t=t)
    with pytest.raises(ValueError, match=r"^Runner\.run: max_steps is a number of launches >= 0, got -3$"):
        runner.run(max_steps=-3)
    with pytest.raises(TypeError, match=r"^Runner\.run: max_steps is a number of launches \(an int >= 0\), got float$"):
        runner.run(max_steps=1.5)
    assert runner.steps == 0 and (t == 0).all() and not mask.any()
    r = runner.run(max_steps=0)
    assert r.steps == 0 and not r.done and (t == 0).all()
    r = runner.run(max_steps=np.int64(2))
    assert r.steps == 2 and (t == 2).all() and not r.done


def test_core_loop_refuses_steps_that_are_neither_kernels_nor_callables():
    mask = np.zeros(3, np.uint8)
    with pytest.raises(TypeError, match="bound kernels or callables"):
        _core.run_loop([3], _core.shared_runtime(), mask.ctypes.data, 3, 10)
    assert _core.count_set(np.array([1, 0, 2, 0], np.uint8).ctypes.data, 4) == 2


def test_opaque_nodes_in_the_loop_see_each_launch(plans):
    n = 16
    limit = np.full(n, 6.0)
    t, mask = np.zeros(n), np.zeros(n, bool)
    seen = []
    node = opaque(lambda x: (seen.append(float(x[0])), x * 0.0)[1], reads={"x": t}, writes={"z": np.zeros(n)})
    report = eagle.until_done([plans["tick"], node], max_steps=100, limit=limit, terminated=mask, t=t).run()
    assert report.steps == 6 and seen == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


# ------------------------------------------------------------------------------------------------
# The device path of until_done on the CPU (eagle.loop.device_emulation: the device plan of
# runtime/loop.hpp with the stop test's counting rule over host kernels), target selection and
# the refusals. The same loop on a GPU is tests/test_gpu.py's.


@pytest.mark.parametrize("variant", ["while", "batched"])
@pytest.mark.parametrize("name,unit", [("tick", 1), ("tick3", 3), ("tick_active", 1)])
@pytest.mark.parametrize("budget", [0, 1, 37, 300, 1000])
def test_the_device_plan_counts_and_computes_as_the_host(plans, variant, name, unit, budget):
    limit = limits(500, seed=budget + 7)
    want_steps, want_t = expected(limit, unit, budget)
    t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)
    runner = eagle.loop.device_emulation([plans[name]], variant=variant, max_steps=budget, limit=limit, terminated=mask, t=t)
    assert runner.target == "emulated" and runner.device.variant == variant
    report = runner.run()
    assert (report.steps, report.done, report.live) == (want_steps, bool(mask.all()), int((~mask).sum()))
    assert report.finished == int(mask.sum())
    np.testing.assert_array_equal(t, want_t)  # batches past the stop changed nothing
    np.testing.assert_array_equal(mask, limit <= want_steps * unit)
    made = runner.device.launches_made
    if variant == "while":
        assert made == want_steps  # a WHILE node never overshoots
    else:
        assert want_steps <= made <= max(2 * want_steps, want_steps + 1)


@pytest.mark.parametrize("variant", ["while", "batched"])
def test_device_runs_in_pieces_and_progress_as_on_the_host(plans, variant, monkeypatch):
    limit = limits(300, seed=3, most=500)
    limit[0] = 500.0
    total, want_t = expected(limit, 1, 10**6)
    t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)
    runner = eagle.loop.device_emulation([plans["tick"]], variant=variant, limit=limit, terminated=mask, t=t)
    with pytest.raises(ValueError, match="give max_steps"):
        runner.run()
    pieces = []
    while not (r := runner.run(max_steps=70)).done:
        pieces.append(r.steps)
    pieces.append(r.steps)
    assert all(p == 70 for p in pieces[:-1]) and sum(pieces) == runner.steps == total == 500
    np.testing.assert_array_equal(t, want_t)
    assert runner.run(max_steps=70).steps == 0 and runner.live == 0
    # progress: the host's calls (64-launch chunks, about once a second)
    monkeypatch.setattr(eagle.loop, "time", FakeClock())
    calls: dict[str, list] = {}
    for how in ("host", "device"):
        t2, mask2 = np.zeros_like(limit), np.zeros(limit.size, bool)
        seen = calls[how] = []
        args = dict(max_steps=1000, progress=lambda s, lv, seen=seen: seen.append((s, lv)), limit=limit, terminated=mask2, t=t2)
        run = eagle.until_done([plans["tick"]], **args) if how == "host" else eagle.loop.device_emulation([plans["tick"]], variant=variant, **args)
        assert run.run().steps == 500
    assert calls["device"] == calls["host"] == [(s, int((limit > s).sum())) for s in (*range(64, 500, 64), 500)]


def test_device_loops_refuse_host_nodes_with_the_pages_message(plans):
    limit = limits(20, seed=4)
    t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)
    with pytest.raises(ValueError, match="node 'test_node' runs on the host each launch, but a stepping loop is one device graph"):
        eagle.loop.device_emulation([NoOp(), plans["tick"]], limit=limit, terminated=mask, t=t)

    class StreamNode(NoOp):
        runs_on_host = False

    with pytest.raises(ValueError, match="node 'test_node' is not a kernel; a stepping loop on the GPU runs CUDA kernels only"):
        eagle.loop.device_emulation([StreamNode(), plans["tick"]], limit=limit, terminated=mask, t=t)
    assert not t.any() and not mask.any()  # nothing ran


def test_the_target_comes_from_the_plans(plans):
    host = plans["tick"]
    gpu = eagle.plan.Plan(tick, "cuda", {}, {})  # never bound: the mix is refused first
    assert eagle.loop.loop_target([host, NoOp()]) == "host"
    assert eagle.loop.loop_target([gpu, NoOp()]) == "cuda"
    assert eagle.loop.loop_target([NoOp()]) == "host"
    with pytest.raises(ValueError, match=r"mixes host plans \['tick'\] and CUDA plans \['tick'\]"):
        eagle.loop.loop_target([host, gpu])
    limit = limits(10, seed=5)
    t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)
    with pytest.raises(ValueError, match="mixes host plans"):
        eagle.until_done([host, gpu], max_steps=3, limit=limit, terminated=mask, t=t)
    with pytest.raises(ValueError, match=r"target='cuda', but the loop's plans are host plans"):
        eagle.until_done([host], max_steps=3, target="cuda", limit=limit, terminated=mask, t=t)
    with pytest.raises(ValueError, match="target is 'host' or 'cuda'"):
        eagle.until_done([host], max_steps=3, target="gpu", limit=limit, terminated=mask, t=t)
    with pytest.raises(ValueError, match="runs host plans"):
        eagle.loop.device_emulation([gpu], limit=limit, terminated=mask, t=t)
    assert eagle.until_done([host], max_steps=3, target="host", limit=limit, terminated=mask, t=t).run().steps == 3


def test_reports_from_a_run():
    r = eagle.loop.report_of(12, 3, 10, 0.5)
    assert (r.steps, r.done, r.finished, r.live) == (12, False, 7, 3)
    assert eagle.loop.report_of(4, 0, 10, 0.1).done
    for bad in ((1, 11, 10), (1, -1, 10), (-1, 0, 10)):
        with pytest.raises(ValueError, match="cannot leave"):
            eagle.loop.report_of(*bad, 0.0)


def test_the_while_variant_needs_cuda_12_4():
    assert _core.device_loop_variant(12040, True) == "while"
    assert _core.device_loop_variant(12030, True) == "batched"
    assert _core.device_loop_variant(13000, False) == "batched"


def test_a_device_loop_overshoots_only_when_every_step_is_a_no_op_once_done(plans):
    """A kernel with another mask (tock's) is not a no-op once the loop's samples are done, so
    its batches are single launches and it runs exactly as often as on the host."""
    limit, limit2 = limits(40, seed=6, most=50), np.full(40, 1000.0)
    t, u, mask, mask2 = np.zeros(40), np.zeros(40), np.zeros(40, bool), np.zeros(40, bool)
    runner = eagle.loop.device_emulation([plans["tick"], plans["tock"]], max_steps=1000, limit=limit, terminated=mask, t=t,
                                         limit2=limit2, done2=mask2, u=u)
    report = runner.run()
    assert report.steps == runner.device.launches_made == int(limit.max())
    np.testing.assert_array_equal(u, limit.max())


def test_a_binding_no_plan_takes_is_refused_naming_the_plans(plans):
    limit = limits(5, seed=8)
    with pytest.raises(TypeError, match=r"\['limt'\] are not parameters of any kernel in the loop \(the plans' parameters: \{'tick': \['limit', 'terminated', 't'\]\}\)"):
        eagle.until_done([plans["tick"]], max_steps=3, limt=limit, limit=limit, terminated=np.zeros(5, bool), t=np.zeros(5))


def test_until_done_over_cuda_plans_drives_the_device_loop(plans, monkeypatch):
    """The CUDA branch of until_done on the CPU. Stand-ins for what needs a driver: a CUDA plan
    whose bind gives an eagle.cuda.CudaBound over host memory, and _core.CudaLoop replaced by
    the device plan on the CPU (HostDeviceLoop), which records what until_done hands it (the
    steps, the mask's address and n). The Report comes from the loop's result."""
    import eagle.cuda
    from eagle.runtime import host_runtime

    def on_gpu(bound):
        fake = object.__new__(eagle.cuda.CudaBound)
        fake.__dict__.update(bound.__dict__)
        fake.device = 0
        fake.views = {k: eagle.cuda.DeviceArray(a.ctypes.data, a.shape, a.dtype, None, False, 0, a)
                      for k, a in bound.arrays.items() if isinstance(a, np.ndarray)}
        return fake

    gpu = eagle.plan.Plan(tick, "cuda", {}, {})
    monkeypatch.setattr(gpu, "bind", lambda **values: on_gpu(plans["tick"].bind(**values)))
    made = []

    def cuda_loop(steps, mask, n):
        made.append((len(steps), mask, n))
        return _core.HostDeviceLoop(steps, host_runtime(), mask, n, variant="while")

    monkeypatch.setattr(_core, "CudaLoop", cuda_loop, raising=False)
    limit = limits(200, seed=9)
    total, want_t = expected(limit, 1, 10**6)
    t, mask = np.zeros_like(limit), np.zeros(limit.size, bool)
    runner = eagle.until_done([gpu], max_steps=50, limit=limit, terminated=mask, t=t)
    assert runner.target == "cuda" and not runner.fused
    assert made == [(1, mask.ctypes.data, 200)]
    first = runner.run()
    assert (first.steps, first.done, first.live) == (50, False, int((limit > 50).sum()))
    rest = runner.run(max_steps=10**6)
    assert rest.steps == total - 50 and rest.done and rest.finished == 200 and runner.steps == total
    np.testing.assert_array_equal(t, want_t)
    with pytest.raises(ValueError, match="runs on the host each launch"):
        eagle.until_done([NoOp(), gpu], max_steps=5, limit=limit, terminated=mask, t=t)


def test_kernels_with_sums_over_samples_run_one_launch_at_a_time(plans):
    """A launch's hawk.sum / hawk.max is over that launch's live samples and a scatter adds once
    per launch: a pass of many steps has neither, so until_done does not fuse such a kernel
    (it ran 1024-step passes that summed every step's samples, 20x the plain loop's sum), and
    Kernel.with_steps refuses it as @hawk.kernel(steps=...) does. Whole runs and runs in
    pieces against NumPy's plain loop, bit for bit (every value an integer or a half)."""
    rng = np.random.default_rng(21)
    limit = rng.integers(1, 61, 300).astype(np.float64)
    done0 = rng.random(300) < 0.2
    for pieces in ((37,), (9, 20, 1000), (1000,)):
        t, total, top, hist = np.zeros(300), np.zeros(1), np.zeros(1), np.zeros(60)
        mask = done0.copy()
        runner = eagle.until_done([plans["tally"]], limit=limit, terminated=mask, t=t, total=total, top=top, hist=hist)
        assert not runner.fused
        steps = sum(runner.run(max_steps=b).steps for b in pieces)
        want, want_mask, launches = np_tally(limit, sum(pieces), done0, 60)
        assert steps == launches and launches == (37 if pieces == (37,) else 60)
        np.testing.assert_array_equal(mask, want_mask)
        for name, got in dict(t=t, total=total, top=top, hist=hist).items():
            np.testing.assert_array_equal(got, want[name], err_msg=f"{name} after {pieces}")
    with pytest.raises(ModeError) as err:
        tally.with_steps(1024)
    assert str(err.value) == (
        "Kernel.with_steps: kernel 'tally' has sums over samples ('total', 'top', 'hist': hawk.sum / mean / min / max "
        "outputs or scatter targets), which a kernel of more than one step cannot have (each launch sums over its own "
        "live samples); run it one step per launch")
    assert tally.sums_over_samples() == ["total", "top", "hist"] and tick.sums_over_samples() == []


def test_a_tangent_kernel_steps_fused_as_its_plain_loop(plans):
    """Forward sensitivities along a trajectory: osc's tangent kernel (with its primal)
    stepped by until_done in fused passes, against NumPy's loop of the same operations, bit
    for bit. A derived kernel reads its in-out state with load_plane (ad/unroll.hpp), which a
    pass of many steps read as the launch's first value at every step: t never advanced, no
    sample finished and x_dot was off by 0.46 after 100 steps (passes/steps.hpp now makes
    those reads the step's state)."""
    rng = np.random.default_rng(8)
    n, dt = 300, 0.01
    x0, tf = rng.uniform(-1.0, 1.0, n), rng.uniform(0.05, 2.0, n)
    for pieces in ((500,), (9, 40, 451)):
        a = dict(x=x0.copy(), v=np.zeros(n), t=np.zeros(n), x_dot=np.ones(n), v_dot=np.zeros(n), t_dot=np.zeros(n),
                 terminated=np.zeros(n, bool))
        runner = eagle.until_done([plans["osc_tangent"]], dt=dt, t_final=tf, **a)
        assert runner.fused
        steps = sum(runner.run(max_steps=b).steps for b in pieces)
        x, v, t, xd, vd = x0.copy(), np.zeros(n), np.zeros(n), np.ones(n), np.zeros(n)
        done, launches = np.zeros(n, bool), 0
        while launches < 500 and not done.all():
            live = ~done
            vn, vdn = v - dt * x, vd - dt * xd
            x, xd = np.where(live, x + dt * v, x), np.where(live, xd + dt * vd, xd)
            v, vd = np.where(live, vn, v), np.where(live, vdn, vd)
            t = np.where(live, t + dt, t)
            done |= live & (t >= tf)
            launches += 1
        assert steps == launches and a["terminated"].all()
        for name, want in dict(x=x, v=v, t=t, x_dot=xd, v_dot=vd).items():
            np.testing.assert_array_equal(a[name], want, err_msg=f"{name} after runs of {pieces}")
        np.testing.assert_allclose(a["x_dot"], np.cos(a["t"]), atol=0.01)  # d x(t) / d x0 of x'' = -x
