"""Stepping loops: launch until every sample is done (SPEC §2).

``until_done([nodes and plans], max_steps=..., **bindings)`` binds every plan to the values
named in ``bindings`` (each plan takes the ones that are its parameters) and returns a
``Runner``. ``runner.run(max_steps=None)`` launches the items in order until every sample
of the Terminated mask is set or the step budget is spent, and can be called again to go
on. The loop is the one stepping loop of ``cpp/runtime/loop.hpp`` (its planner decides what
runs and counts launches): a loop of kernels alone runs entirely in C++ (no Python per step);
foreign nodes are called back from it between launches on the host. A loop of one stepping kernel runs ``FUSED`` launches' worth
of steps in one pass over memory (the kernel recompiled with that many more steps, each
sample's state kept in registers and each sample stopping as soon as it is done); the
report counts launches of the original kernel exactly.

On a GPU a stepping loop is one device graph, so a node that needs the host each launch is
refused there. The rule is one function, ``check_loop``, used on every platform, so it is
tested on the CPU too.
"""

from __future__ import annotations

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

__all__ = ["Report", "Runner", "until_done", "check_loop"]

# A loop of one stepping kernel runs this many launches' worth of steps per pass over memory,
# keeping each sample's state in registers in between (the kernel recompiled with more steps).
FUSED = 64
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
    is one device graph). The same rule is checked on every platform."""
    if target != "cuda":
        return
    for name, node in items:
        if not isinstance(node, Bound) and getattr(node, "runs_on_host", True):
            raise ValueError(
                f"eagle.until_done: node '{name}' runs on the host each launch, but a stepping loop is one device graph: "
                "run host nodes between graph launches in your own loop (graph.launch, or runner.run(max_steps=k) with "
                "the node outside), or put the whole batch inside jax.jit"
            )


class Runner:
    """A bound stepping loop; ``run()`` advances it."""

    def __init__(self, items: list[tuple[str, Any]], mask: np.ndarray, max_steps: int | None, progress: bool | Callable[[int, int], Any], fused: Bound | None = None) -> None:
        self.items = items
        self.fused = fused  # the loop's one kernel with FUSED times its steps, or None
        self.mask = mask
        self.max_steps = max_steps
        self.progress = progress
        self.steps = 0
        self._kernels_only = all(isinstance(node, Bound) for _, node in items)

    @property
    def live(self) -> int:
        return int(self.mask.size - _core.count_set(self.mask.ctypes.data, self.mask.size))

    def run(self, max_steps: int | None = None) -> Report:
        """Launches until every sample is done or ``max_steps`` more launches (default: the
        loop's own max_steps, counted from this call) have run."""
        budget = max_steps if max_steps is not None else self.max_steps
        if budget is None:
            raise ValueError("eagle.until_done: give max_steps (to until_done or to run) so a loop that never finishes stops")
        t0 = time.perf_counter()
        # Active sets are rebuilt from the mask at each run, so a mask changed between runs is
        # seen (within a run, launches keep them up to date).
        for b in [node for _, node in self.items if isinstance(node, Bound)] + ([self.fused] if self.fused else []):
            if b.kernel.guard.active_set:
                b.reset_active()
        # The one stepping loop (cpp/runtime/loop.hpp) runs the launches, foreign nodes called
        # back between them; with progress it stops every `chunk` launches to call on_chunk.
        steps = [node._core if isinstance(node, Bound) else node.run for _, node in self.items]
        next_report = t0 + PROGRESS_EVERY

        def on_chunk(launches: int, live: int) -> None:
            nonlocal next_report
            if time.perf_counter() >= next_report:
                next_report = time.perf_counter() + PROGRESS_EVERY
                self._report_progress(self.steps + launches)

        chunk = 0 if not self.progress else (PROGRESS_CHUNK if self._kernels_only else 1)
        fused = dict(fused=self.fused._core, fused_launches=FUSED, unit=self.items[0][1].kernel.steps) if self.fused else {}
        done_steps, _, _ = _core.run_loop(steps, host_runtime(), self.mask.ctypes.data, self.mask.size, max(int(budget), 0),
                                          chunk=chunk, on_chunk=on_chunk if chunk else None, **fused)
        self.steps += done_steps
        live = self.live
        n = self.mask.size
        return Report(done_steps, live == 0, n - live, live, time.perf_counter() - t0)

    def _report_progress(self, steps: int) -> None:
        live = self.live
        if callable(self.progress):
            self.progress(steps, live)
        else:
            print(f"eagle.until_done: {steps} steps, {live} of {self.mask.size} samples live", flush=True)


def until_done(items: Sequence[Any], max_steps: int | None = None, progress: bool | Callable[[int, int], Any] = False, target: str = "host", **bindings: Any) -> Runner:
    """Binds the plans in ``items`` to ``bindings`` and returns a Runner (module docstring).
    ``progress=True`` prints the step and live count about once a second; a callable gets
    ``(steps, live)`` instead."""
    named: list[tuple[str, Any]] = []
    used: set[str] = set()
    for item in items:
        if isinstance(item, Plan):
            names = {s.name for s in item.kernel.slots}
            values = {k: v for k, v in bindings.items() if k in names}
            if "finished_count" in bindings and any(s.kind == "terminated" for s in item.kernel.slots):
                values["finished_count"] = bindings["finished_count"]
            used |= set(values)
            named.append((item.kernel.name, item.bind(**values)))
        elif isinstance(item, Bound):
            named.append((item.name, item))
        elif all(hasattr(item, a) for a in ("run", "kind", "reads", "writes")):
            named.append((item.kind, item))
        else:
            raise TypeError(f"eagle.until_done: items are plans, bound kernels and foreign nodes, got {type(item).__name__}")
    unused = [k for k in bindings if k not in used]
    if unused:
        raise TypeError(f"eagle.until_done: {unused} are not parameters of any kernel in the loop")
    check_loop(named, target)
    check_nodes(named, "eagle.until_done")
    masks = [node.arrays[s.name] for _, node in named if isinstance(node, Bound) for s in node.kernel.slots if s.kind == "terminated"]
    if not masks:
        raise ValueError("eagle.until_done: no kernel in the loop has a Terminated mask, so nothing says when a sample is done")
    fused = None
    plans = [item for item in items if isinstance(item, Plan)]
    if len(named) == 1 and len(plans) == 1:
        plan = plans[0]
        (fused_plan,) = eagle.plan.auto([plan.kernel.with_steps(plan.kernel.steps * FUSED)], cache_dir=plan.cache_dir)
        bound = named[0][1]
        fused = fused_plan.bind(**{k: v for k, v in bound.arrays.items() if k != "finished_count"},
                                **{k: v for k, v in bound.param_values.items() if k not in bound.arrays},
                                **({"finished_count": bound.arrays["finished_count"]} if "finished_count" in bound.arrays else {}))
    return Runner(named, masks[0], max_steps, progress, fused)
