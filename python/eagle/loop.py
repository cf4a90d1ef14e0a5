"""Stepping loops: launch until every sample is done (docs/runtime.md, "Stepping loops").

``until_done([nodes and plans], max_steps=..., **bindings)`` binds every plan to the values
named in ``bindings`` (each plan takes the ones that are its parameters) and returns a
``Runner``. ``runner.run(max_steps=None)`` launches the items in order until every sample
of the Terminated mask is set or the step budget is spent, and can be called again to go
on. The loop is the one stepping loop of ``cpp/runtime/loop.hpp`` (its planner decides what
runs and counts launches): a loop of kernels alone runs entirely in C++ (no Python per step);
foreign nodes are called back from it between launches on the host. A loop of one stepping
kernel (one that draws no random numbers and has no sums over samples) runs up to ``FUSED``
launches' worth of steps in one pass over memory: the kernel
recompiled with 1024 times its steps, told at each pass how many steps the budget has left
(at most 7 single launches, when fewer than ``FUSED_MIN`` are left). Its plans are built
once per process (``fused_plans_of``), so a warm ``until_done`` costs its binds. In such a kernel each of 64 lanes steps one
sample and takes the next as soon as its sample is done (codegen/host_driver.cpp,
``refill_body``); the report counts launches of the original kernel exactly.

The target is taken from the loop's plans (``loop_target``): all host plans run as above; all
CUDA plans run on the GPU as one device graph (``_core.CudaLoop``, runtime/cuda_loop.hpp): a
conditional WHILE node where the driver has one (CUDA >= 12.4), else captured batches of
launches with the stop test on the device and the counter block read between batches. Either
way a run counts launches exactly as the host does (``Report.steps``), ``run(max_steps=k)``
goes on from where the last run stopped, and progress is reported between chunks of
``PROGRESS_CHUNK`` launches. A mix of host and CUDA plans is refused naming them. On a GPU a
node that needs the host each launch is refused (``check_loop``, one rule used on every
platform, so it is tested on the CPU too). ``device_emulation`` runs the device path over
host plans on the CPU (``_core.HostDeviceLoop``: the same plan and counting rule), which is
how it is tested without a GPU.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from raptor_core import _core

from eagle.binding import Bound
from eagle.graph import check_nodes
import eagle.plan
from eagle.plan import Plan
from eagle.runtime import host_runtime
from eagle.stages import StagedBound, expand  # at import: the first until_done paid for it (~2 ms from source)

__all__ = ["Report", "Runner", "until_done", "check_loop", "loop_target", "device_emulation"]

# A loop of one stepping kernel runs up to this many launches' worth of steps per pass over
# memory (the kernel recompiled with that many times its steps): each sample is taken into a
# lane once for up to 1024 steps. With 64, a sample that ran 200 steps was written back and
# taken again 3 times, and 1e5 oscillators stepped until done took 1.3x as long; with 256 the
# performance card's spread 1000 cell (N = 1e5, AVX-512 Xeon) took 12.1 ms (float64) and
# 6.95 ms (float32) against 10.7 ms and 5.9 ms with 1024, its uniform 1000 cell 42.0 and
# 22.1 ms against 40.2 and 20.5 ms (each pass writes every live sample back and takes it
# again). A pass runs what is left of the budget when that is less (the kernel is told how
# many steps: raptor_args::max_steps), from FUSED_MIN launches left; under that, single
# launches (a pass's lanes are refilled every 8 to 32 steps, so a shorter pass would step
# idle lanes).
FUSED = (1024,)
FUSED_MIN = 8
# With progress on, a loop of kernels reports between chunks of this many launches (a loop
# with foreign nodes after every launch), about every PROGRESS_EVERY seconds.
PROGRESS_CHUNK = 64
PROGRESS_EVERY = 1.0


@dataclass(frozen=True)
class Report:
    """What a run did: launches made (``steps``), whether every sample is done, how many
    samples are finished and live, and the wall time."""

    steps: int
    done: bool
    finished: int
    live: int
    elapsed: float

    def __str__(self) -> str:
        state = "done" if self.done else f"{self.live} live"
        return f"{self.steps} steps, {state} ({self.finished} finished) in {self.elapsed:.3f} s"


def check_loop(items: Sequence[tuple[str, Any]], target: str) -> None:
    """Refuses, on a GPU target, nodes that need the host each launch (a stepping loop there
    is one device graph), and any other node that is not a kernel. The same rule is checked on
    every platform."""
    if target != "cuda":
        return
    for name, node in items:
        if isinstance(node, Bound):
            continue
        if getattr(node, "runs_on_host", True):
            raise ValueError(
                f"eagle.until_done: node '{name}' runs on the host each launch, but a stepping loop is one device graph: "
                "run host nodes between graph launches in your own loop (graph.launch, or runner.run(max_steps=k) with "
                "the node outside), or put the whole batch inside jax.jit"
            )
        raise ValueError(f"eagle.until_done: node '{name}' is not a kernel; a stepping loop on the GPU runs CUDA kernels only: "
                         "run the node between runner.run(max_steps=k) calls")


def _item_target(item: Any) -> str | None:
    """'cuda' or 'host' for a plan or bound kernel, None for a foreign node."""
    if isinstance(item, Plan):
        return "cuda" if item.target == "cuda" else "host"
    if isinstance(item, Bound):
        from eagle.cuda import CudaBound

        return "cuda" if isinstance(item, CudaBound) else "host"
    return None


def loop_target(items: Sequence[Any]) -> str:
    """Where a loop of these items runs: 'cuda' when every plan and bound kernel is a CUDA
    one, 'host' when every one is a host one (or there is none). A mix raises ValueError
    naming the plans of each kind."""
    kinds: dict[str, list[str]] = {"host": [], "cuda": []}
    for item in items:
        t = _item_target(item)
        if t is not None:
            kinds[t].append(item.kernel.name if isinstance(item, Plan) else item.name)
    if kinds["host"] and kinds["cuda"]:
        raise ValueError(f"eagle.until_done: the loop mixes host plans {kinds['host']} and CUDA plans {kinds['cuda']}; "
                         "a stepping loop runs on one target: build every plan with the same eagle.plan.auto targets")
    return "cuda" if kinds["cuda"] else "host"


def check_max_steps(max_steps: Any, where: str, optional: bool = True) -> int | None:
    """``max_steps`` as an int (None where `optional` and not given): a number of launches,
    0 or more. Raises TypeError for anything but an int (a bool, a float, None where it is
    required) and ValueError for a negative one, naming `where` (the call the user made)."""
    if max_steps is None and optional:
        return None
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
        raise TypeError(f"{where}: max_steps is a number of launches (an int >= 0), got {type(max_steps).__name__}")
    if max_steps < 0:
        raise ValueError(f"{where}: max_steps is a number of launches >= 0, got {int(max_steps)}")
    return int(max_steps)


class Runner:
    """A bound stepping loop; ``run()`` advances it. ``device`` is the loop on the device
    (``_core.CudaLoop``, or ``_core.HostDeviceLoop`` for ``device_emulation``), None on the
    host."""

    def __init__(self, items: list[tuple[str, Any]], mask: Any, max_steps: int | None, progress: bool | Callable[[int, int], Any],
                 fused: Sequence[Bound] = (), device: Any = None, n: int | None = None, target: str = "host") -> None:
        self.items = items
        self.fused = list(fused)  # the loop's one kernel with each of FUSED times its steps, or []
        self.mask = mask
        self.n = int(mask.size) if n is None else n
        self.max_steps = max_steps  # an int or None: checked by the caller (check_max_steps) before it bound
        self.progress = progress
        self.device = device
        self.target = target  # 'host', 'cuda', or 'emulated' (device_emulation)
        self.steps = 0
        self._kernels_only = all(isinstance(node, Bound) for _, node in items)

    @property
    def live(self) -> int:
        """Samples of the loop's mask not finished yet (on a GPU: counted by the stop test)."""
        if self.device is not None:
            return int(self.device.run(0, self._stream())[2])
        return int(self.mask.size - _core.count_set(self.mask.ctypes.data, self.mask.size))

    def _stream(self) -> int:
        from eagle.cuda import current_stream

        return current_stream() if self.target == "cuda" else 0

    def run(self, max_steps: int | None = None) -> Report:
        """Launches until every sample is done or ``max_steps`` more launches (default: the
        loop's own max_steps, counted from this call) have run."""
        budget = check_max_steps(max_steps, "Runner.run")
        budget = budget if budget is not None else self.max_steps
        if budget is None:
            raise ValueError("eagle.until_done: give max_steps (to until_done or to run) so a loop that never finishes stops")
        t0 = time.perf_counter()
        # Active sets are rebuilt from the mask at each run, so a mask changed between runs is
        # seen (within a run, launches keep them up to date; on a GPU there is none to rebuild).
        for b in [node for _, node in self.items if isinstance(node, Bound)] + self.fused:
            if b.kernel.guard.active_set:
                b.reset_active()
        if self.device is not None:
            done_steps, live = self._run_device(budget, t0)
            self.steps += done_steps
            return report_of(done_steps, live, self.n, time.perf_counter() - t0)
        # The one stepping loop (cpp/runtime/loop.hpp) runs the launches, foreign nodes called
        # back between them; with progress it stops every `chunk` launches to call on_chunk.
        steps = [node._core if isinstance(node, Bound) else node.run for _, node in self.items]
        next_report = t0 + PROGRESS_EVERY

        def on_chunk(launches: int, live: int) -> None:
            nonlocal next_report
            if time.perf_counter() >= next_report:
                next_report = time.perf_counter() + PROGRESS_EVERY
                self._report_progress(self.steps + launches, self.live)

        chunk = 0 if not self.progress else (PROGRESS_CHUNK if self._kernels_only else 1)
        fused = (dict(fused=[b._core for b in self.fused], fused_launches=list(FUSED), unit=self.items[0][1].kernel.steps,
                      fused_min=FUSED_MIN)
                 if self.fused else {})
        done_steps, _, live = _core.run_loop(steps, host_runtime(), self.mask.ctypes.data, self.mask.size, budget,
                                          chunk=chunk, on_chunk=on_chunk if chunk else None, **fused)
        self.steps += done_steps
        # run_loop's live count is exact at its end (counted at its start, kept from the
        # finished counts, recounted after foreign nodes): no second pass over the mask.
        return report_of(done_steps, int(live), self.n, time.perf_counter() - t0)

    def _run_device(self, budget: int, t0: float) -> tuple[int, int]:
        """Runs of the device loop of at most ``budget`` launches in all: one run, or with
        progress one per chunk of PROGRESS_CHUNK launches (each exact, so their sum is).
        Returns (launches, live)."""
        stream = self._stream()
        chunk = PROGRESS_CHUNK if self.progress else budget
        total = 0
        next_report = t0 + PROGRESS_EVERY
        while True:
            k = min(chunk, budget - total)
            launches, done, live = self.device.run(k, stream)
            total += int(launches)
            # As on the host: after every chunk that launched, the last one included.
            if self.progress and launches > 0 and time.perf_counter() >= next_report:
                next_report = time.perf_counter() + PROGRESS_EVERY
                self._report_progress(self.steps + total, int(live))
            if done or total >= budget:
                return total, int(live)

    def _report_progress(self, steps: int, live: int) -> None:
        if callable(self.progress):
            self.progress(steps, live)
        else:
            print(f"eagle.until_done: {steps} steps, {live} of {self.n} samples live", flush=True)


def report_of(launches: int, live: int, n: int, elapsed: float) -> Report:
    """The Report of a run that made ``launches`` launches and left ``live`` of ``n`` samples
    live (the host loop's result, or the device's from its counter block)."""
    if not 0 <= live <= n or launches < 0:
        raise ValueError(f"eagle.until_done: a run cannot leave {live} of {n} samples live after {launches} launches")
    return Report(int(launches), live == 0, n - live, live, elapsed)


def _bind_items(items: Sequence[Any], bindings: dict[str, Any]) -> list[tuple[str, Any]]:
    """Binds each plan of ``items`` to the ``bindings`` that are its parameters; bound kernels
    and foreign nodes are taken as they are. Every binding must be used by some plan. A
    staged kernel's binding is its stages' (eagle/stages.py), launched in order each step."""
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise TypeError(f"eagle.until_done: items is a list of plans, bound kernels and foreign nodes, got {type(items).__name__}")
    named: list[tuple[str, Any]] = []
    used: set[str] = set()
    for item in items:
        if isinstance(item, Plan):
            names = {s.name for s in item.kernel.slots}
            values = {k: v for k, v in bindings.items() if k in names}
            if "finished_count" in bindings and any(s.kind == "terminated" for s in item.kernel.slots):
                values["finished_count"] = bindings["finished_count"]
            used |= set(values)
            named.extend(expand(item.kernel.name, item.bind(**values)))  # a staged kernel: its stages
        elif isinstance(item, (Bound, StagedBound)):
            named.extend(expand(item.name, item))
        elif all(hasattr(item, a) for a in ("run", "kind", "reads", "writes")):
            named.append((item.kind, item))
        else:
            raise TypeError(f"eagle.until_done: items are plans, bound kernels and foreign nodes, got {type(item).__name__}")
    unused = [k for k in bindings if k not in used]
    if unused:
        kernels = {item.kernel.name: [s.name for s in item.kernel.slots] for item in items if isinstance(item, Plan)}
        raise TypeError(f"eagle.until_done: {unused} are not parameters of any kernel in the loop (the plans' parameters: {kernels})")
    return named


def _loop_mask(named: list[tuple[str, Any]]) -> tuple[Bound, str]:
    """The first kernel with a Terminated mask and the mask's name."""
    for _, node in named:
        if isinstance(node, Bound):
            for s in node.kernel.slots:
                if s.kind == "terminated":
                    return node, s.name
    raise ValueError("eagle.until_done: no kernel in the loop has a Terminated mask, so nothing says when a sample is done")


def until_done(items: Sequence[Any], max_steps: int | None = None, progress: bool | Callable[[int, int], Any] = False,
               target: str | None = None, events: str = "step", on_no_event: str = "raise", **bindings: Any) -> Runner:
    """Binds the plans in ``items`` to ``bindings`` and returns a Runner (module docstring).
    ``progress=True`` prints the step and live count about once a second; a callable gets
    ``(steps, live)`` instead. The loop runs where its plans do (``loop_target``); ``target``
    ('host' or 'cuda'), when given, is checked against them. ``events="refine"`` (a loop of
    one kernel declaring ``time=``/``time_step=``) moves each sample that stops to the crossing
    of its stop rule inside the step: an ``eagle.events.EventRunner`` (eagle/events.py)."""
    max_steps = check_max_steps(max_steps, "eagle.until_done")  # before anything is bound
    if target is not None and target not in ("host", "cuda"):
        raise ValueError(f"eagle.until_done: target is 'host' or 'cuda', not {target!r}")
    if events not in ("step", "refine"):
        raise ValueError(f"eagle.until_done: events is one of ('step', 'refine'), not {events!r}")
    if on_no_event not in ("raise", "step"):
        raise ValueError(f"eagle.until_done: on_no_event is one of ('raise', 'step'), not {on_no_event!r}")
    if events == "refine":
        from eagle.events import event_runner

        return event_runner(items, max_steps, progress, target, on_no_event, bindings)
    planned = loop_target(items)
    named = _bind_items(items, bindings)
    check_loop(named, target or planned)
    if target is not None and target != planned:
        raise ValueError(f"eagle.until_done: target={target!r}, but the loop's plans are {planned} plans; "
                         f"build them with eagle.plan.auto(..., targets=({target!r},))")
    check_loop(named, planned)
    check_nodes(named, "eagle.until_done")
    owner, mask_name = _loop_mask(named)
    if planned == "cuda":
        view = owner.views[mask_name]
        steps = [node._core for _, node in named]
        device = _core.CudaLoop(steps, int(view.ptr), int(view.shape[0]))
        return Runner(named, owner.arrays[mask_name], max_steps, progress, device=device, n=int(view.shape[0]), target="cuda")
    mask = owner.arrays[mask_name]
    fused: list[Bound] = []
    plans = [item for item in items if isinstance(item, Plan)]
    # A kernel drawing random numbers is not fused: launch n draws with fold_in(key, n), which a
    # launch of FUSED times the steps would not (docs/language.md, "Random numbers"). Nor is a
    # kernel with sums over samples (hawk.sum / mean / min / max outputs, scatter targets): a
    # launch's sum is over that launch's live samples, which a pass of many steps does not have.
    if len(named) == 1 and len(plans) == 1 and not plans[0].kernel.sums_over_samples() and not any(
            s.kind == "random" for s in plans[0].kernel.slots):
        plan = plans[0]
        bound = named[0][1]
        fused_plans = fused_plans_of(plan)
        # The unit kernel's own bindings (its arrays, its Params, the same finished_count).
        args = {k: v for k, v in bound.arrays.items() if k != "finished_count"}
        args.update({k: v for k, v in bound.param_values.items() if k not in bound.arrays})
        if "finished_count" in bound.arrays:
            args["finished_count"] = bound.arrays["finished_count"]
        fused = [fp.bind(**args) for fp in fused_plans]
    return Runner(named, mask, max_steps, progress, fused)


# The fused variants of stepping kernels this process has built, keyed like the on-disk cache
# (the kernel's IR digest, its steps, the cache directory, the compiler and its flags), so that
# a warm until_done costs a bind, not a rebuild (a cache hit of plan.auto hashes the emitted
# source and loads the library: ~10 ms a call). fused_plans_of() fills it; clear_fused_plans()
# empties it.
_FUSED_PLANS: dict[tuple[Any, ...], list[Plan]] = {}


def _fused_key(plan: Plan) -> tuple[Any, ...]:
    cache = plan.cache_dir if plan.cache_dir is not None else os.environ.get("RAPTOR_CACHE_DIR", "")
    return (plan.kernel.digest("float64"), plan.kernel.steps, FUSED, plan.target, str(cache),
            os.environ.get("RAPTOR_CXX", ""), os.environ.get("RAPTOR_CXXFLAGS", ""))


def fused_plans_of(plan: Plan) -> list[Plan]:
    """Host plans of ``plan``'s kernel with each of FUSED times its steps: built (or found in
    the on-disk cache) on the first call for a kernel, kept for the process after that."""
    key = _fused_key(plan)
    hit = _FUSED_PLANS.get(key)
    if hit is None:
        kernels = [plan.kernel.with_steps(plan.kernel.steps * k) for k in FUSED]
        hit = eagle.plan.auto(kernels, cache_dir=plan.cache_dir)
        _FUSED_PLANS[key] = hit
    return hit


def clear_fused_plans() -> None:
    """Forgets the fused plans kept by ``fused_plans_of`` (the next until_done builds or loads
    them again)."""
    _FUSED_PLANS.clear()


def device_emulation(items: Sequence[Any], variant: str = "batched", max_steps: int | None = None,
                     progress: bool | Callable[[int, int], Any] = False, **bindings: Any) -> Runner:
    """The GPU path of ``until_done`` over host plans, on the CPU: the same refusals, the device
    plan of runtime/loop.hpp (``variant`` 'while' or 'batched') with the device's counting
    rule, the launches a GPU makes (``runner.device.launches_made``) and the Report made as on
    a GPU. For tests where no GPU is."""
    max_steps = check_max_steps(max_steps, "eagle.loop.device_emulation")
    if loop_target(items) != "host":
        raise ValueError("eagle.loop.device_emulation: runs host plans (on a GPU, call until_done)")
    named = _bind_items(items, bindings)
    check_loop(named, "cuda")
    check_nodes(named, "eagle.until_done")
    owner, mask_name = _loop_mask(named)
    mask = owner.arrays[mask_name]
    device = _core.HostDeviceLoop([node._core for _, node in named], host_runtime(), mask.ctypes.data, mask.size, variant=variant)
    return Runner(named, mask, max_steps, progress, device=device, target="emulated")
