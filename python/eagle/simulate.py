"""``eagle.simulate``: a stepping model run until every sample is done, in one call.

Start at ``simulate``. It is ``eagle.until_done`` with the set-up done for you:

- ``model`` is a hawk kernel, a list of kernels run in order as one step, or plans (from
  ``eagle.plan.auto``); ``until=`` appends the kernel that finishes the samples, last.
- The rest of the call binds like a call of the kernel (``eagle.call.resolve``): positionally
  in the order of its parameters (a model of one kernel; the mask is skipped), by name, or
  both. A Mutable plane is the state: its initial value (an array of every sample is updated
  in place, a number or one sample's value is broadcast), or nothing for one never read before
  it is written (zeros). The Terminated mask is never passed: every sample starts live, and
  the result's ``finished`` is it. Numbers alone are a batch of one, and the state comes
  back as numbers.
- It returns a ``SimResult``: each state plane as an attribute (and each sum over samples: a
  ``hawk.sum`` / ``mean`` / ``min`` / ``max`` output, allocated when left out, as its last
  launch wrote it, and a scatter target), ``finished``, ``done``,
  ``status`` ("finished" or "max_steps"), ``steps`` (launches of the model, exact: the count
  ``until_done`` reports, not fused batches), ``n``, ``wall_s``, ``report``, ``t_stop`` (with
  ``events="refine"``; else None) and, with ``record=True``, ``record`` for
  ``eagle.diff.reverse(result.record, {"x": seed})``. A recorded run launches the model one
  step at a time through a recorded graph (the record keeps each launch's overwritten planes),
  the others run as ``until_done`` (fused passes, no Python per step).

``events="refine"`` (a model of one kernel declaring ``time=`` and ``time_step=``) stops each
sample at the crossing of its stop rule inside its last step (eagle/events.py); ``t_stop`` is
then the event time of each finished sample (NaN for the others). With ``record=True`` the
record keeps each refinement, and ``eagle.diff.reverse`` includes the event time's
sensitivity (eagle/diff.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from eagle.call import _match, _number, plan_for, resolve
from eagle.events import EventModel, check_refine, event_runner, gather_and_refine, model_of, no_event_error, scatter, xp_of
from eagle.graph import Graph
from eagle.loop import Report, check_max_steps, report_of, until_done
from eagle.plan import Plan
from eagle.nodes import plane_key
from eagle.record import Record
from hawk.kernel import Kernel

__all__ = ["SimResult", "simulate"]

_EVENTS = ("step", "refine")
_ON_NO_EVENT = ("raise", "step")


@dataclass
class SimResult:
    """What ``eagle.simulate`` returns. The state planes are attributes too (``result.x``);
    ``state`` maps their names to them."""

    status: str        # "finished": every sample is done; "max_steps": the budget ran out
    n: int             # samples
    steps: int         # launches of the model (exact)
    done: bool         # every sample finished
    finished: Any      # the Terminated mask (a bool per sample; one bool for a batch of one)
    wall_s: float      # the call's wall time, build of a first call included
    report: Report     # until_done's report of the run
    state: dict[str, Any]
    record: Record | None = None  # with record=True: for eagle.diff.reverse
    t_stop: Any = None            # events="refine": each finished sample's event time (NaN: not finished)

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__.get("state", {})
        if name in state:
            return state[name]
        raise AttributeError(f"SimResult has no attribute {name!r} (state planes: {list(state)})")

    def __repr__(self) -> str:
        return f"SimResult(status={self.status!r}, n={self.n}, steps={self.steps}, state={list(self.state)})"


def _plans(items: Sequence[Any], target: str) -> list[Plan]:
    """The model's items (kernels and plans, checked by simulate) as plans for ``target``."""
    return [item if isinstance(item, Plan) else plan_for(item, target) for item in items]


def simulate(model: Any, *args: Any, max_steps: int, until: Any = None, record: bool = False, events: str = "step",
             on_no_event: str = "raise", progress: Any = False, **planes: Any) -> SimResult:
    """Runs ``model`` on every sample until each one finishes or ``max_steps`` launches ran,
    and returns a ``SimResult`` (module docstring). Raises TypeError/ValueError naming the
    parameter for a call that does not bind; nothing runs then."""
    t0 = time.perf_counter()
    if events not in _EVENTS:
        raise ValueError(f"eagle.simulate: events is one of {_EVENTS}, not {events!r}")
    if on_no_event not in _ON_NO_EVENT:
        raise ValueError(f"eagle.simulate: on_no_event is one of {_ON_NO_EVENT}, not {on_no_event!r}")
    max_steps = check_max_steps(max_steps, "eagle.simulate", optional=False)
    kernels_in = list(model) if isinstance(model, (list, tuple)) else [model]
    if until is not None:
        kernels_in.append(until)
    if not kernels_in:
        raise ValueError("eagle.simulate: the model has no kernel")
    kernels = [k.kernel if isinstance(k, Plan) else k for k in kernels_in]
    for k in kernels:
        if not isinstance(k, Kernel):
            raise TypeError(f"eagle.simulate: the model is hawk kernels or plans, got {type(k).__name__}")
    masks = [s.name for k in kernels for s in k.slots if s.kind == "terminated"]
    if not masks:
        raise ValueError("eagle.simulate: no kernel of the model has a Terminated mask, so nothing says when a sample is "
                         "done; declare one (terminated: Terminated) and set it in the step")
    rule = None
    if events == "refine":
        if len(kernels) != 1:
            raise ValueError(f"eagle.simulate: events='refine' re-runs the step of a model of one kernel (with its stop rule); "
                             f"this model has {len(kernels)}: {[k.name for k in kernels]}")
        rule = check_refine(kernels[0], on_no_event, "eagle.simulate")
    if args:
        if len(kernels) != 1:
            raise TypeError("eagle.simulate: a model of several kernels takes its planes by name (x=..., v=...)")
        given = _match(kernels[0], args, planes, "eagle.simulate", skip=masks)
    else:
        given = dict(planes)
    names = {s.name for k in kernels for s in k.slots}
    unknown = [name for name in given if name not in names]
    if unknown:
        raise TypeError(f"eagle.simulate: {unknown} are not parameters of the model "
                        f"({ {k.name: [s.name for s in k.slots] for k in kernels} })")
    r = resolve(kernels, given, "eagle.simulate", mask="refuse")
    plans = _plans(kernels_in, r.target)
    mask = r.values[masks[0]]
    model = model_of(kernels[0], rule, r.target, plans[0].cache_dir) if rule is not None else None
    if record:
        report, rec = _run_recorded(plans, r.values, max_steps, model, on_no_event)
    else:
        if model is not None:
            runner = event_runner(plans, max_steps, progress, None, on_no_event, r.values, "eagle.simulate")
        else:
            runner = until_done(plans, max_steps=max_steps, progress=progress, **r.values)
        report = runner.run()
        rec = None
    t_stop = None
    if events == "refine":
        t = r.values[kernels[0].time]
        xp = xp_of(mask)
        t_stop = xp.where(mask, t, xp.asarray(np.nan, dtype=t.dtype))
        t_stop = _number(t_stop) if r.one_sample else t_stop
    # The Mutable planes, sums over samples (as the last launch wrote them) and scatter targets, in slot order
    state_slots = [s for k in kernels for s in k.slots if s.kind in ("mutable", "param_sum", "table_sum")]
    state: dict[str, Any] = {}
    for s in state_slots:
        arr = r.values[s.name]
        state.setdefault(s.name, _number(arr) if r.one_sample and s.kind == "mutable" else arr)
    finished = _number(mask) if r.one_sample else mask
    return SimResult(status="finished" if report.done else "max_steps", n=r.n, steps=report.steps, done=report.done,
                     finished=finished if not r.one_sample else bool(finished), wall_s=time.perf_counter() - t0,
                     report=report, state=state, record=rec, t_stop=t_stop)


def _run_recorded(plans: Sequence[Plan], values: dict[str, Any], max_steps: int, model: EventModel | None = None,
                  on_no_event: str = "raise") -> tuple[Report, Record]:
    """The model as a recorded graph, launched one step at a time until every sample is done
    or max_steps launches ran: the same launches, counted the same way, as until_done. With an
    event model, the samples that stop in a launch are refined to their crossing after it
    (their start state is the record's copy), and the record keeps the refinement
    (``record.events``) for the reverse sweep."""
    t0 = time.perf_counter()
    g = Graph()
    for plan in plans:
        names = {s.name for s in plan.kernel.slots}
        g.add(plan.bind(**{k: v for k, v in values.items() if k in names}), name=plan.kernel.name)
    built = g.build(record=True)
    mask_name = next(s.name for p in plans for s in p.kernel.slots if s.kind == "terminated")
    mask = values[mask_name]
    n = int(mask.shape[0])

    def live() -> int:
        return n - int(mask.sum()) if isinstance(mask, np.ndarray) else n - int(mask.sum().get())

    steps, left = 0, live()
    rec = built.record
    while left > 0 and steps < max_steps:
        before = mask.copy() if model is not None else None
        built.launch(1)
        steps += 1
        if model is not None:
            _refine_launch(model, plans[0].kernel.name, values, mask, before, rec, on_no_event)
        left = live()
    if built.record is None:
        raise RuntimeError("eagle.simulate: the recorded graph kept no record")
    return report_of(steps, left, n, time.perf_counter() - t0), built.record


def _refine_launch(model: EventModel, node: str, values: dict[str, Any], mask: Any, before: Any, rec: Record,
                   on_no_event: str) -> None:
    """Refines the samples that stopped in the record's last launch (eagle/events.py) and
    keeps the refinement in ``rec.events[launch]`` for ``eagle.diff.reverse``."""
    xp = xp_of(mask)
    idx = xp.nonzero(xp.logical_and(mask, xp.logical_not(before)))[0]
    if not idx.shape[0]:
        return
    (nl,) = [e for e in rec.launches[-1] if e.node == node]
    start = {s: nl.saved[plane_key(values[s])][..., idx] for s in model.state}
    ref = gather_and_refine(model, values, idx, start)
    missed = int(xp.logical_not(ref.located).sum())
    if missed and on_no_event == "raise":
        raise no_event_error(model, missed, "eagle.simulate")
    scatter(model, values, ref)
    rec.events.setdefault(len(rec.launches) - 1, []).append((node, model, ref))
