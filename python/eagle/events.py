"""Stops located inside the step: ``events="refine"`` of ``eagle.simulate`` and
``eagle.until_done`` (docs/runtime.md, "One call").

A kernel that declares ``time=`` and ``time_step=`` (``@hawk.kernel(steps=1, time="t",
time_step="dt")``) and whose stop rule has a continuous form (hawk/events.py) can have each
sample stopped AT the crossing of its rule instead of at the end of the step in which it
turned true. The design:

1. The loop runs the kernel's saving form (``hawk.events.saving_kernel``: each step first
   copies the in-out state into ``_event_prev_*`` planes), through the same planner as any
   loop (fused passes on the host, the device graph on a GPU), so a stopped sample keeps the
   state its last step started from. A recorded run (``record=True``) steps the kernel itself
   and takes the start state from the record's copies instead.
2. After the loop (or after each recorded launch), the samples that stopped in it are
   gathered (compact arrays of those samples only) and their last step is re-run with a step
   of ``theta * dt`` by the kernel's event form (the step with ``g`` outputs in place of the
   mask assignment and the step length a per-sample plane), differentiated in the step length
   (its tangent kernel): Newton on theta, safeguarded by bisection on the bracket (0, 1], to
   ``RTOL`` relative. With several components (``and``/``or``) each one that changes its
   truth in the step is located, and the event is the first of those crossings at which the
   rule holds.
3. The refined state is scattered back; the time plane is the kernel's own after the step of
   ``theta * dt``; ``t_stop`` is the event time.

A rule that already holds after a step of zero length (an integer counter, a random draw: it
does not come from a crossing in time) has no crossing to locate: those samples stay at the
end of their step (``on_no_event="step"``) or the call raises naming the rule's line
(``"raise"``). Everything here goes through an array module (NumPy, or CuPy for CUDA plans),
so the GPU path runs this same code; it is tested on the CPU only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import eagle.plan
from eagle.call import _sample_shape
from hawk.events import G_PREFIX, PREV_PREFIX, StopRule, event_kernel, saving_kernel, stop_rule
from hawk.kernel import Kernel

__all__ = ["EventModel", "Refined", "model_of", "check_refine", "RTOL", "MAX_ITER"]

# Newton stops when a step changes theta by less than RTOL[dtype] * theta (or the bracket is
# that narrow); a crossing that bisection closes on without g going to zero is a jump.
RTOL = {"float64": 1e-13, "float32": 2e-6}
JUMP = {"float64": 1e-6, "float32": 1e-2}
MAX_ITER = 200

_MODELS: dict[tuple, "EventModel"] = {}


def xp_of(arr: Any) -> Any:
    """NumPy for host arrays, CuPy for device arrays."""
    if isinstance(arr, np.ndarray):
        return np
    import cupy  # noqa: PLC0415 - only where device arrays are

    return cupy


def check_refine(kernel: Kernel, on_no_event: str, who: str) -> StopRule | None:
    """Refuses a model that events='refine' cannot run (before anything runs) and returns the
    kernel's stop rule; None when the rule has no continuous form and on_no_event='step'."""
    if not any(s.kind == "terminated" for s in kernel.slots):
        raise ValueError(f"{who}: kernel '{kernel.name}' has no Terminated mask, so it has no stop rule to locate")
    if kernel.time is None or kernel.time_step is None:
        raise ValueError(f"{who}: events='refine' needs kernel '{kernel.name}' to declare its time plane and step: "
                         "@hawk.kernel(steps=1, time='t', time_step='dt')")
    if kernel.steps != 1:
        raise ValueError(f"{who}: events='refine' re-runs one step of kernel '{kernel.name}', which makes {kernel.steps} "
                         "steps per launch; declare steps=1")
    if any(s.kind == "random" for s in kernel.slots):
        raise ValueError(f"{who}: events='refine' re-runs the last step of kernel '{kernel.name}' for the samples that "
                         "stopped in it, and a kernel that draws random numbers would draw others; draw them in a kernel "
                         "of their own, or use events='step'")
    rule = stop_rule(kernel)
    if not rule.continuous:
        if on_no_event == "raise":
            raise ValueError(f"{who}: kernel '{kernel.name}': the stop rule at {rule.where} ({rule.text or 'the mask'}) has "
                             f"no continuous form: {rule.why}; its crossing cannot be located inside the step. Pass "
                             "on_no_event='step' to stop such samples at the end of their step, as events='step' does")
        return None
    return rule


@dataclass
class EventModel:
    """A kernel's derived kernels for events, built once per kernel, target and cache."""

    kernel: Kernel
    rule: StopRule
    target: str
    cache_dir: str | None
    event: Kernel          # the step with g outputs, its time step a per-sample plane
    tangent: Any           # plan of event.tangent([time_step])
    saving: Kernel         # the step keeping each step's start
    _adjoint: Any = None

    @property
    def state(self) -> list[str]:
        """The in-out state planes (what a step starts from)."""
        return [s.name for s in self.kernel.slots if s.kind == "mutable" and s.inout]

    @property
    def outputs(self) -> list[str]:
        """Every Mutable the step writes (the in-out state and pure outputs)."""
        return [s.name for s in self.kernel.slots if s.kind == "mutable"]

    @property
    def gnames(self) -> list[str]:
        return [f"{G_PREFIX}{i}" for i in range(len(self.rule.components))]

    def adjoint_plan(self) -> Any:
        """The event form's adjoint w.r.t. every float input (built on first use)."""
        if self._adjoint is None:
            wrt = [s.name for s in self.event.slots if s.is_float and (s.kind in ("plane", "param", "table")
                                                                        or (s.kind == "mutable" and s.inout))]
            (self._adjoint,) = eagle.plan.auto([self.event.adjoint(wrt)], targets=(self.target,), cache_dir=self.cache_dir)
        return self._adjoint


def model_of(kernel: Kernel, rule: StopRule, target: str, cache_dir: str | None = None) -> EventModel:
    """The kernel's EventModel for ``target`` (kept for the process)."""
    key = (kernel.digest("float64"), kernel.name, rule.where, rule.text, kernel.time, kernel.time_step, target, cache_dir)
    hit = _MODELS.get(key)
    if hit is None:
        ev = event_kernel(kernel, rule)
        (tan,) = eagle.plan.auto([ev.tangent([kernel.time_step])], targets=(target,), cache_dir=cache_dir)
        hit = _MODELS[key] = EventModel(kernel, rule, target, cache_dir, ev, tan, saving_kernel(kernel))
    return hit


@dataclass
class Refined:
    """The refinement of the samples ``idx`` (compact arrays, one entry per sample of idx)."""

    idx: Any
    theta: Any                        # the fraction of the last step where the rule crossed
    tau: Any                          # theta * dt: the length of the refined step
    located: Any                      # bool: a crossing was found (else the sample stays at its step's end)
    active: Any                       # the component whose crossing is the event (-1: none)
    state: dict[str, Any]             # every Mutable after the refined step
    phi_tau: dict[str, Any]           # d(Mutable)/d(tau) there
    g_tau: Any                        # d(g of the active component)/d(tau) there
    start: dict[str, Any] = field(default_factory=dict)  # the in-out state the step started from


class _Step:
    """Launches of the event form's tangent kernel over the gathered samples."""

    def __init__(self, model: EventModel, xp: Any, dtype: np.dtype, start: dict[str, Any], inputs: dict[str, Any],
                 params: dict[str, Any], tables: dict[str, Any], dt: Any) -> None:
        self.model, self.xp, self.dtype = model, xp, dtype
        self.start, self.inputs, self.params, self.tables, self.dt = start, inputs, params, tables, dt
        self.tk = model.tangent.kernel
        self.ts = model.kernel.time_step

    def run(self, sel: Any, theta: Any) -> dict[str, Any]:
        """One launch for the samples ``sel`` (indices into the gathered arrays) with steps of
        ``theta * dt``; returns every output plane of the tangent kernel (compact)."""
        xp, dtype = self.xp, self.dtype
        m = int(sel.shape[0])
        tau = (theta * self.dt[sel]).astype(dtype)
        values: dict[str, Any] = {}
        for s in self.tk.slots:
            name = s.name
            if name == self.ts:
                values[name] = tau
            elif name == f"{self.ts}_dot":
                values[name] = xp.ones((m,), dtype)
            elif name in self.start:
                values[name] = xp.ascontiguousarray(self.start[name][..., sel])
            elif name in self.inputs:
                values[name] = xp.ascontiguousarray(self.inputs[name][..., sel])
            elif s.kind == "param":
                values[name] = self.params[name]
            elif s.kind == "table":
                values[name] = self.tables[name]
            elif s.kind == "terminated":
                values[name] = xp.zeros((m,), np.bool_)
            elif s.kind in ("plane", "mutable"):  # tangents of other inputs (0), and outputs
                values[name] = xp.zeros(_sample_shape(s) + (m,), dtype if s.is_float else np.dtype(s.dtype))
        bound = self.model.tangent.bind(**values)
        bound.launch()
        return values


def refine(model: EventModel, xp: Any, dtype: np.dtype, idx: Any, start: dict[str, Any], inputs: dict[str, Any],
           params: dict[str, Any], tables: dict[str, Any], dt: Any) -> Refined:
    """Locates the crossing in the last step of the samples ``idx`` (module docstring, 2).
    ``start``: the in-out state each started its last step from, ``inputs``: their input
    planes, ``dt``: their step lengths (compact arrays); ``params``/``tables`` as bound."""
    rule = model.rule
    name = np.dtype(dtype).name
    rtol, jump = RTOL[name], JUMP[name]
    step = _Step(model, xp, dtype, start, inputs, params, tables, dt)
    m = int(idx.shape[0])
    every = xp.arange(m)
    gn = model.gnames
    at0 = step.run(every, xp.zeros((m,), dtype))
    at1 = step.run(every, xp.ones((m,), dtype))
    g0 = [at0[g] for g in gn]
    g1 = [at1[g] for g in gn]
    t0 = [rule.truth(i, g) for i, g in enumerate(g0)]
    t1 = [rule.truth(i, g) for i, g in enumerate(g1)]
    at_start = rule.holds(t0, xp)  # holds after a step of zero length: not a crossing in time
    inf = xp.full((m,), np.inf, dtype)
    thetas = []
    for i in range(len(gn)):
        cand = xp.logical_and(t0[i] != t1[i], xp.logical_not(at_start))
        th = inf.copy()
        sel = xp.nonzero(cand)[0]
        if sel.shape[0]:
            th[sel] = _root(step, sel, i, g0[i][sel], g1[i][sel], rtol, jump, dtype, xp)
        thetas.append(th)
    # The event: the first located crossing at which the rule holds (its component on its
    # far side of zero).
    theta = xp.ones((m,), dtype)
    active = xp.full((m,), -1, np.int64)
    if len(gn) == 1:  # one comparison: its crossing turns the rule (false at 0, true at 1)
        found = xp.isfinite(thetas[0])
        theta = xp.where(found, thetas[0], 1.0).astype(dtype)
        active = xp.where(found, 0, -1).astype(np.int64)
    elif gn:
        stack = xp.stack(thetas)  # (components, m)
        order = xp.argsort(stack, axis=0)
        open_ = xp.ones((m,), bool)
        for k in range(len(gn)):
            comp = order[k]
            th_k = xp.take_along_axis(stack, comp[None, :], axis=0)[0]
            sel = xp.nonzero(xp.logical_and(open_, xp.isfinite(th_k)))[0]
            if not sel.shape[0]:
                break
            out = step.run(sel, th_k[sel])
            truths = [rule.truth(i, out[g]) for i, g in enumerate(gn)]
            for i in range(len(gn)):  # the crossing component counts as crossed
                here = comp[sel] == i
                truths[i] = xp.where(here, t1[i][sel], truths[i])
            ok = rule.holds(truths, xp)
            hit = sel[ok]
            theta[hit] = th_k[hit]
            active[hit] = comp[hit]
            open_[hit] = False
    located = active >= 0
    final = step.run(every, theta)
    state = {o: final[o] for o in model.outputs}
    phi = {o: final[f"{o}_dot"] for o in model.outputs if f"{o}_dot" in final}
    g_tau = xp.zeros((m,), dtype)
    for i, g in enumerate(gn):
        g_tau = xp.where(active == i, final[f"{g}_dot"], g_tau)
    return Refined(idx, theta, (theta * dt).astype(dtype), located, active, state, phi, g_tau, start)


def _root(step: _Step, sel: Any, comp: int, glo: Any, ghi: Any, rtol: float, jump: float, dtype: Any, xp: Any) -> Any:
    """theta in (0, 1] where component ``comp``'s g crosses zero, for the samples ``sel``
    (g is glo at 0 and ghi at 1, of different truth): Newton on dg/dtheta = dt * dg/dtau from
    the tangent kernel, a bisection step whenever Newton leaves the bracket. inf where the
    crossing is a jump (g does not go to zero)."""
    g = f"{G_PREFIX}{comp}"
    gdot = f"{g}_dot"
    m = int(sel.shape[0])
    lo = xp.zeros((m,), dtype)
    hi = xp.ones((m,), dtype)
    side_lo = step.model.rule.truth(comp, glo)
    scale = xp.maximum(xp.abs(glo), xp.abs(ghi))
    denom = glo - ghi
    theta = xp.where(denom != 0, glo / xp.where(denom != 0, denom, 1), 0.5).astype(dtype)  # the secant's guess
    theta = xp.clip(theta, 0.0, 1.0)
    theta = xp.where(xp.logical_or(theta <= 0, theta >= 1), 0.5, theta).astype(dtype)
    live = xp.ones((m,), bool)
    result = theta.copy()
    for _ in range(MAX_ITER):
        w = xp.nonzero(live)[0]
        if not w.shape[0]:
            break
        out = step.run(sel[w], theta[w])
        gv, gd = out[g], out[gdot] * step.dt[sel[w]]
        same = step.model.rule.truth(comp, gv) == side_lo[w]
        lo[w] = xp.where(same, theta[w], lo[w])
        hi[w] = xp.where(same, hi[w], theta[w])
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = theta[w] - gv / gd
        inside = xp.logical_and(xp.isfinite(newton), xp.logical_and(newton >= lo[w], newton <= hi[w]))
        nxt = xp.where(inside, newton, 0.5 * (lo[w] + hi[w])).astype(dtype)
        done = xp.logical_or(xp.abs(nxt - theta[w]) <= rtol * xp.abs(nxt), hi[w] - lo[w] <= rtol * hi[w])
        zero = gv == 0  # on the root: theta itself (Newton's step is 0, the bracket test would bisect)
        result[w] = xp.where(zero, theta[w], nxt)
        theta[w] = nxt
        live[w] = xp.logical_not(xp.logical_or(done, zero))
    # A crossing that the bracket closed on without g going to zero is a jump, not a root.
    out = step.run(sel, result)
    ok = xp.abs(out[g]) <= jump * scale
    return xp.where(ok, result, np.inf).astype(dtype)


# ------------------------------------------------------------------------------------------
# The loop: until_done(..., events="refine") and simulate's run without a record.


def _saving_plan(model: EventModel) -> Any:
    plan = getattr(model, "_saving_plan", None)
    if plan is None:
        (plan,) = eagle.plan.auto([model.saving], targets=(model.target,), cache_dir=model.cache_dir)
        model._saving_plan = plan  # type: ignore[attr-defined]
    return plan


def _param_value(v: Any) -> float:
    return float(np.asarray(v.get() if hasattr(v, "get") else v).reshape(()))


def gather_and_refine(model: EventModel, values: dict[str, Any], idx: Any, start: dict[str, Any]) -> Refined:
    """Refines the samples ``idx`` of a loop bound to ``values`` whose last step started from
    ``start`` (compact in-out state of those samples)."""
    k = model.kernel
    mask = values[next(s.name for s in k.slots if s.kind == "terminated")]
    xp = xp_of(mask)
    dtype = np.dtype(values[k.time].dtype)
    inputs = {s.name: values[s.name][..., idx] for s in k.slots if s.kind == "plane"}
    params = {s.name: values[s.name] for s in k.slots if s.kind == "param"}
    tables = {s.name: values[s.name] for s in k.slots if s.kind == "table"}
    ts = k.slot(k.time_step)
    m = int(idx.shape[0])
    dt = inputs[ts.name] if ts.kind == "plane" else xp.full((m,), _param_value(values[ts.name]), dtype)
    return refine(model, xp, dtype, idx, start, inputs, params, tables, dt)


def no_event_error(model: EventModel, n: int, who: str) -> ValueError:
    r = model.rule
    return ValueError(f"{who}: kernel '{r.kernel}': the stop rule at {r.where} ({r.text}) held for {n} samples without a "
                      "crossing inside their last step to locate (it held after a step of zero length, or g jumped across "
                      "zero: a counter or a random draw?); they were left at the end of that step. Pass on_no_event='step' "
                      "to accept that")


def scatter(model: EventModel, values: dict[str, Any], ref: Refined) -> None:
    """Writes the refined state of the located samples into the loop's arrays."""
    xp = xp_of(ref.idx)
    sel = xp.nonzero(ref.located)[0]
    to = ref.idx[sel]
    for o in model.outputs:
        values[o][..., to] = ref.state[o][..., sel]


class EventRunner:
    """``until_done(..., events="refine")``: the kernel's saving form run by an ordinary Runner
    (``inner``), and after each ``run`` the samples that stopped in it refined to their
    crossing. ``t_stop`` holds each stopped sample's event time (NaN while it is live)."""

    def __init__(self, inner: Any, model: EventModel, values: dict[str, Any], on_no_event: str, who: str) -> None:
        self.inner, self.model, self.values, self.on_no_event, self.who = inner, model, values, on_no_event, who
        # The caller's mask array (NumPy or CuPy), not the runner's view of it.
        self.mask = values.get(next(s.name for s in model.kernel.slots if s.kind == "terminated"), inner.mask)
        xp = xp_of(self.mask)
        self.t_stop = xp.full(self.mask.shape, np.nan, values[model.kernel.time].dtype)
        self.refined: list[Refined] = []

    @property
    def steps(self) -> int:
        return self.inner.steps

    @property
    def live(self) -> int:
        return self.inner.live

    @property
    def n(self) -> int:
        return self.inner.n

    def run(self, max_steps: int | None = None) -> Any:
        """Runs the loop (``Runner.run``), then moves each sample that stopped in it to its
        crossing (module docstring). Raises ValueError (on_no_event='raise') when a stop had no
        crossing to locate; those samples are left at the end of their step."""
        xp = xp_of(self.mask)
        before = self.mask.copy()
        report = self.inner.run(max_steps)
        idx = xp.nonzero(xp.logical_and(self.mask, xp.logical_not(before)))[0]
        if idx.shape[0]:
            start = {s: self.values[PREV_PREFIX + s][..., idx] for s in self.model.state}
            ref = gather_and_refine(self.model, self.values, idx, start)
            scatter(self.model, self.values, ref)
            self.t_stop[idx] = self.values[self.model.kernel.time][idx]
            self.refined.append(ref)
            missed = int((~ref.located).sum()) if xp is np else int(xp.logical_not(ref.located).sum().get())
            if missed and self.on_no_event == "raise":
                raise no_event_error(self.model, missed, self.who)
        return report


def event_runner(items: Any, max_steps: int | None, progress: Any, target: str | None, on_no_event: str,
                 bindings: dict[str, Any], who: str = "eagle.until_done") -> Any:
    """``until_done(items, events="refine", ...)``: an EventRunner, or a plain Runner when the
    rule has no continuous form and on_no_event='step'."""
    from eagle.loop import until_done
    from eagle.plan import Plan

    items = list(items)
    if len(items) != 1 or not isinstance(items[0], Plan):
        raise ValueError(f"{who}: events='refine' runs a loop of one stepping kernel's plan (its step is re-run to locate "
                         f"a stop); got {len(items)} items")
    plan = items[0]
    rule = check_refine(plan.kernel, on_no_event, who)
    if rule is None:
        return until_done(items, max_steps=max_steps, progress=progress, target=target, **bindings)
    model = model_of(plan.kernel, rule, plan.target, plan.cache_dir)
    missing = [s for s in model.state if s not in bindings]
    if missing:
        raise TypeError(f"{who}: events='refine' needs the state planes {missing} bound")
    values = dict(bindings)
    for s in model.state:
        xp = xp_of(values[s]) if not isinstance(values[s], (int, float)) else np
        values[PREV_PREFIX + s] = xp.zeros_like(values[s])
    inner = until_done([_saving_plan(model)], max_steps=max_steps, progress=progress, target=target, **values)
    return EventRunner(inner, model, values, on_no_event, who)


# ------------------------------------------------------------------------------------------
# The reverse sweep through a refined step (eagle.diff.reverse on a record of
# eagle.simulate(..., events="refine", record=True)).
#
# A sample that stopped in launch L left it at s* = Phi(s, tau, p), where tau (the refined
# step's length) solves G(s, tau, p) = 0 for the event's component. By the implicit function
# theorem d tau = -(G_s ds + G_p dp) / G_tau, so for a cotangent s*_bar
#     s_bar = Phi_s^T s*_bar + lambda G_s,   p_bar = Phi_p^T s*_bar + lambda G_p,
#     lambda = -(Phi_tau . s*_bar) / G_tau,
# which is ONE launch of the event form's adjoint at (s, tau, p) with the cotangent s*_bar on
# its state outputs and lambda on the event component's g (Phi_tau and G_tau come from the
# forward refinement's tangent launch). The step length dt does not enter: tau is fixed by the
# crossing alone. The normal adjoint of launch L runs with those samples' cotangents zeroed.


def reverse_before(sw: Any, node: Any, model: EventModel, ref: Refined) -> dict[str, Any] | None:
    """Takes the cotangents of the located samples' outputs out of the sweep (zeroed there, so
    the launch's own adjoint gives them nothing) and returns what ``reverse_after`` needs."""
    from eagle.nodes import plane_key

    xp = xp_of(ref.idx)
    sel = xp.nonzero(ref.located)[0]
    if not sel.shape[0]:
        return None
    to = ref.idx[sel]
    m = int(sel.shape[0])
    sbar: dict[str, Any] = {}
    tau_bar = xp.zeros((m,), "float64")
    for o in model.outputs:
        c = sw.ct_of(plane_key(node.arrays[o]))
        sbar[o] = c[..., to].copy()
        c[..., to] = 0
        if o in ref.phi_tau:
            tau_bar = tau_bar + (sbar[o] * ref.phi_tau[o][..., sel]).reshape(-1, m).sum(axis=0)
    lam = -tau_bar / ref.g_tau[sel]
    return dict(sel=sel, to=to, sbar=sbar, lam=lam)


def reverse_after(sw: Any, name: str, node: Any, nl: Any, model: EventModel, ref: Refined, pre: dict[str, Any] | None) -> None:
    """Adds the located samples' cotangents through the refined step (the comment above) into
    the sweep: one launch of the event form's adjoint over those samples."""
    from eagle.nodes import plane_key

    if pre is None:
        return
    xp = xp_of(ref.idx)
    plan = model.adjoint_plan()
    adj = plan.kernel
    k = model.kernel
    sel, to, sbar, lam = pre["sel"], pre["to"], pre["sbar"], pre["lam"]
    m = int(sel.shape[0])
    dtype = node.dtype
    slots = {s.name: s for s in k.slots}
    values: dict[str, Any] = {}
    after: list[tuple[str, str, Any]] = []
    gnames = model.gnames
    for s, (role, primal) in zip(adj.slots, adj._core.slot_roles()):
        src = slots.get(primal)
        if role == "p":
            if primal == k.time_step:
                values[s.name] = xp.ascontiguousarray(ref.tau[sel])
            elif src is not None and src.kind == "param":
                values[s.name] = nl.params[primal]
            elif src is not None and src.kind == "table":
                values[s.name] = nl.tables[primal]
            elif src is not None and src.kind == "terminated":
                values[s.name] = xp.zeros((m,), np.bool_)
            elif src is not None:  # the state as the launch started, input planes
                values[s.name] = xp.ascontiguousarray(sw.state[plane_key(node.arrays[primal])][..., to])
            else:
                values[s.name] = xp.zeros(_sample_shape(s) + (m,), dtype)
        elif primal in gnames:
            i = gnames.index(primal)
            values[s.name] = xp.where(ref.active[sel] == i, lam, 0.0).astype(dtype)
        elif s.kind == "plane" or (s.kind == "mutable" and s.inout):  # an output's cotangent
            arr = values[s.name] = xp.ascontiguousarray(sbar[primal]).astype(dtype)
            if s.kind == "mutable":
                after.append(("plane", primal, arr))
        elif s.kind == "mutable":
            arr = values[s.name] = xp.zeros(_sample_shape(s) + (m,), dtype)
            if primal != k.time_step:  # tau is fixed by the crossing: dt gets nothing here
                after.append(("plane", primal, arr))
        elif s.kind == "param_sum":
            arr = values[s.name] = xp.zeros((s.width,), dtype)
            if primal != k.time_step:
                after.append(("param", primal, arr))
        elif s.kind == "table_sum":
            arr = values[s.name] = xp.zeros_like(sw.state[plane_key(node.arrays[primal])])
            after.append(("table", primal, arr))
    bound = plan.bind(**values)
    bound.launch()
    if hasattr(bound, "synchronize"):
        bound.synchronize()
    for kind, primal, arr in after:
        if kind == "param":
            key = f"{name}.{primal}"
            acc = sw.params.get(key)
            if acc is None:
                acc = sw.params[key] = sw.xp.zeros((1,), "float64")
            sw.xp.add_into(acc, arr[0:1])
        elif kind == "table":
            sw.xp.add_into(sw.ct_of(plane_key(node.arrays[primal])), arr)
        else:
            c = sw.ct_of(plane_key(node.arrays[primal]))
            c[..., to] += arr
