"""Running a kernel with stage boundaries (docs/language.md "Stage boundaries";
docs/runtime.md "Staged kernels"): the one launcher every eagle caller goes through.

A staged kernel (``kernel.staged``: a reduction over samples whose value the same body reads,
``f = k * (x - hawk.mean(x))``) is compiled into ``kernel.stages`` (cpp/passes/stages.hpp).
``StagedPlan`` holds one host plan per stage; ``StagedPlan.bind(**values)`` checks the
values against the kernel's own parameters, then binds every stage to them, each reduction's
ParamSum output to a 1-element array (the user's Mutable[Param] array, or one allocated here
for a reduction inside an expression) and every later stage's Param of it to that same array
(a Param bound to an array is read at each launch). ``StagedBound.launch()`` launches the
stages in order, each over every sample: stage s writes its sums before stage s + 1 reads
them. Nothing runs before every stage is bound, so a bad value changes nothing.

Direct calls (eagle/call.py), graphs (``Graph.add``: one node per stage) and stepping loops
(``eagle.until_done``/``eagle.simulate``: the stages are launched one after the other each step,
never fused into a multi-step pass) use the same plans and bindings; ``eagle.diff.reverse``
refuses a record holding stages (``refuse_reverse``). Random draws: every stage's binding gets the same key and launch count,
so a draw two stages make is the same draw.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from eagle.binding import Bound, _first_float_dtype, as_host_array, bind
from eagle.errors import ModeError
from eagle.plan import Plan
from hawk.kernel import Kernel

__all__ = ["StagedPlan", "StagedBound"]


class StagedPlan(Plan):
    """A staged kernel compiled for the host: one plan per stage (``plans``), bound together.
    A Plan (its entries are the last stage's), so eagle's loops and simulate take it."""

    def __init__(self, kernel: Kernel, plans: list[Any], info: dict[str, Any], cache_dir: str | None = None) -> None:
        super().__init__(kernel, "host", plans[-1]._entries, info, cache_dir)
        self.plans = plans

    def entry(self, dtype: Any) -> Any:
        """The last stage's compiled entry for ``dtype`` (the stage that writes the planes)."""
        return self.plans[-1].entry(dtype)

    def digest(self, dtype: Any = "float64") -> str:
        """The content digests of the stages' builds for ``dtype``, joined by '+'."""
        return "+".join(p.digest(dtype) for p in self.plans)

    def bind(self, **values: Any) -> "StagedBound":
        """Binds the kernel's parameters by name (as ``Plan.bind``) across its stages; raises
        TypeError/ValueError/ModeError naming the kernel and plane before anything is bound."""
        return bind_staged(self, values)

    def __repr__(self) -> str:
        return f"<eagle.Plan {self.kernel.name} target={self.target} stages={len(self.plans)}>"


class StagedBound:
    """A staged kernel bound to arrays: ``launch()`` runs its stages in order over every sample.
    ``bounds``: the stages' own bindings; ``arrays``: every array they hold, the hidden sums'
    included."""

    def __init__(self, plan: StagedPlan, bounds: list[Bound], arrays: dict[str, Any], dtype: np.dtype, n: int) -> None:
        self.plan = plan
        self.bounds = bounds
        self.arrays = arrays
        self.dtype = dtype
        self.n = n
        self.rng = bounds[-1].rng

    @property
    def kernel(self) -> Kernel:
        """The staged hawk kernel."""
        return self.plan.kernel

    @property
    def name(self) -> str:
        """The kernel's name."""
        return self.plan.kernel.name

    def launch(self) -> int:
        """One launch of every stage, in order; returns 0 (a staged kernel has no Terminated
        mask). A stage's kernel error raises RuntimeError as an unstaged launch's does."""
        for b in self.bounds:
            b.launch()
        return 0

    def reads(self) -> dict[str, Any]:
        """The planes and tables the stages read, by the kernel's parameter names."""
        public = {s.name for s in self.kernel.slots}
        out: dict[str, Any] = {}
        for b in self.bounds:
            out.update({k: v for k, v in b.reads().items() if k in public})
        return out

    def writes(self) -> dict[str, Any]:
        """The planes and sums the stages write, by the kernel's parameter names."""
        public = {s.name for s in self.kernel.slots}
        out: dict[str, Any] = {}
        for b in self.bounds:
            out.update({k: v for k, v in b.writes().items() if k in public})
        return out

    def params(self) -> dict[str, float]:
        """The user's Params' values as the next launch would read them."""
        public = {s.name for s in self.kernel.slots}
        out: dict[str, float] = {}
        for b in self.bounds:
            out.update({k: v for k, v in b.params().items() if k in public})
        return out

    def set_rng(self, k0: int, k1: int, next_launch: int, stream: Any = None) -> None:
        """Sets every stage's key and launch number (the stages draw the same draws)."""
        for b in self.bounds:
            if b.rng is not None:
                b.set_rng(k0, k1, next_launch, stream)

    def launch_count(self, stream: Any = None) -> int:
        """``launches``."""
        return self.launches

    @property
    def launches(self) -> int:
        """Launches run so far (each runs every stage once)."""
        return self.bounds[-1].launches

    @property
    def live(self) -> int:
        """Samples per launch (a staged kernel has no active set)."""
        return self.n

    def __repr__(self) -> str:
        return f"<eagle.Bound {self.name} n={self.n} {self.dtype.name} stages={len(self.bounds)}>"


def bind_staged(plan: StagedPlan, values: Mapping[str, Any]) -> StagedBound:
    """``StagedPlan.bind`` (module docstring)."""
    kernel = plan.kernel
    who = f"eagle: kernel '{kernel.name}'"
    names = [s.name for s in kernel.slots]
    extra = [k for k in values if k not in names and k != "finished_count"]
    if extra:
        raise TypeError(f"{who}: {extra[0]!r} is not a parameter (parameters: {names})")
    missing = [n for n in names if n not in values]
    if missing:
        raise TypeError(f"{who}: missing value(s) for {missing}")
    dtype, _ = _first_float_dtype(kernel, values, who)
    n: int | None = None
    for s in kernel.slots:
        if s.kind in ("plane", "mutable"):
            arr = as_host_array(values[s.name], who, s.name)
            if arr.ndim >= 1:
                n = int(arr.shape[-1])
                break
    sums: dict[str, Any] = {}  # every link's sum array, by the sum's name
    for link in kernel.stage_links:
        sums[link.sum] = np.zeros((1,), dtype) if link.hidden else values[link.sum]
    bounds: list[Bound] = []
    arrays: dict[str, Any] = {}
    for i, (stage, stage_plan) in enumerate(zip(kernel.stages, plan.plans)):
        given: dict[str, Any] = {}
        for s in stage.slots:
            link = next((l for l in kernel.stage_links if l.param == s.name), None)
            if link is not None:
                given[s.name] = sums[link.sum]  # an earlier stage's sum, read at each launch
            elif s.name in sums:
                given[s.name] = sums[s.name]
            else:
                given[s.name] = values[s.name]
        if i == len(kernel.stages) - 1 and "finished_count" in values:
            given["finished_count"] = values["finished_count"]
        b = bind(stage_plan, given, n_samples=n)
        bounds.append(b)
        arrays.update(b.arrays)
    return StagedBound(plan, bounds, arrays, dtype, n or 0)


def refuse_cuda(kernel: Kernel) -> None:
    """The CUDA target does not run staged kernels yet (pinned in tests/test_stages.py)."""
    raise ModeError(f"eagle: kernel '{kernel.name}' has a stage boundary (line {kernel.stage_links[0].line}); the CUDA "
                    "target does not run staged kernels yet (their stages compile with NVRTC): use targets=('host',)")


def expand(name: str, bound: Any) -> list[tuple[str, Any]]:
    """A node list's entries for ``bound``: its stages' bindings in order (``name:stage1``, ...,
    ``name``) for a staged binding, else ``[(name, bound)]``."""
    if not isinstance(bound, StagedBound):
        return [(name, bound)]
    return [(f"{name}:stage{i + 1}", b) for i, b in enumerate(bound.bounds[:-1])] + [(name, bound.bounds[-1])]


def refuse_reverse(nodes: Any) -> None:
    """eagle.diff.reverse does not differentiate across stage boundaries (pinned in
    tests/test_stages.py)."""
    for name, node in nodes:
        kernel = getattr(node, "kernel", None)
        staged = getattr(kernel, "stage_of", None)
        if staged is not None:
            raise ModeError(f"eagle.diff.reverse: node '{name}' is a stage of kernel '{staged.name}', which has a stage boundary "
                            f"(line {staged.stage_links[0].line}); this reverse sweep does not differentiate across stages: "
                            "differentiate it through eagle.frameworks.jax (jax.grad / jax.vjp), which composes its stages")
