"""A staged hawk kernel as a JAX function (docs/jax.md "Staged kernels"): the composition of
its stages' own JAX functions (cpp/passes/stages.hpp; eagle/stages.py runs the same stages on
eagle's launcher).

Stage s is an ordinary kernel, called through ``function(stage, ...)`` on either lowering;
each reduction it writes is a 0-d result (under sharding, summed over the shards by that
call's own rule), which the later stages take as the Param that reads it. Derivatives need
nothing of their own: a later stage's cotangent of that Param flows into the earlier stage's
sum, whose adjoint broadcasts it to every sample, so grad, jvp, vmap and higher orders
compose as for any JAX program.
"""

from __future__ import annotations

from typing import Any, Sequence

from eagle.errors import ModeError
from hawk.kernel import Kernel

__all__ = ["StagedKernelFunction"]


class StagedKernelFunction:
    """A staged hawk kernel as a JAX-callable function: ``inputs`` -> ``outputs`` as the
    kernel's own signature gives them (its hidden links are neither). Made by
    ``eagle.frameworks.jax.function``."""

    def __init__(self, kernel: Kernel, wrt: Sequence[str], lowering: str, make: Any) -> None:
        self.kernel = kernel
        self.lowering = lowering
        names = [s[0] for s in kernel._core.slots()]  # the interface indexes every slot, links included
        public = {s.name for s in kernel.slots}
        iface = kernel.interface()
        self.inputs = [names[i] for i in iface.operands if names[i] in public]
        self.outputs = [names[i] for i in iface.results if names[i] in public]
        wrt = (wrt,) if isinstance(wrt, str) else tuple(wrt)
        for w in wrt:
            if w not in self.inputs:
                raise ValueError(f"eagle.frameworks.jax.function: {kernel.name}: wrt names {w!r}, which is not an input (inputs: {self.inputs})")
        self.wrt = list(wrt)
        self._links = {l.param: l.sum for l in kernel.stage_links}
        self._stages = []
        for i, stage in enumerate(kernel.stages):
            if stage.interface().n_operand_slot < 0:
                raise ModeError(
                    f"eagle.frameworks.jax.function: {kernel.name}: stage {i + 1} of its {len(kernel.stages)} stages reads "
                    "no plane, so a call cannot take its sample count from it; give the reduction a per-sample input")
            ins = [s.name for s in stage.slots if s.is_input]
            fn = make(stage, [w for w in ins if w in wrt or w in self._links], lowering)
            self._stages.append(fn)
        self.__name__ = kernel.name
        self.__doc__ = f"The staged hawk kernel {kernel.name} as a JAX function: {self.inputs} -> {self.outputs}."

    def __repr__(self) -> str:
        extra = "" if self.lowering == "auto" else f", lowering={self.lowering!r}"
        return (f"KernelFunction({self.kernel.name!r}, inputs={self.inputs}, outputs={self.outputs}, wrt={self.wrt}, "
                f"stages={len(self._stages)}{extra})")

    def _arguments(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        name = self.kernel.name
        if len(args) > len(self.inputs):
            raise TypeError(f"{name}: takes {len(self.inputs)} inputs ({self.inputs}), got {len(args)}")
        values = dict(zip(self.inputs, args))
        for k, v in kwargs.items():
            if k not in self.inputs:
                raise TypeError(f"{name}: {k!r} is not an input (inputs: {self.inputs})")
            if k in values:
                raise TypeError(f"{name}: input {k!r} given twice")
            values[k] = v
        missing = [k for k in self.inputs if k not in values]
        if missing:
            raise TypeError(f"{name}: missing input(s) {missing}")
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        values = self._arguments(args, kwargs)
        results: dict[str, Any] = {}
        for fn in self._stages:
            ins = {k: results[self._links[k]] if k in self._links else values[k] for k in fn.inputs}
            outs = fn(**ins)
            outs = outs if isinstance(outs, tuple) else (outs,)
            results.update(zip(fn.outputs, outs))
        out = [results[k] for k in self.outputs]
        return out[0] if len(out) == 1 else tuple(out)
