"""``@hawk.kernel`` and ``@hawk.func``: a Python function becomes a compiled kernel.

The decorator reads the function (hawk/source.py) and hands it to the compiler
(``raptor_core._core.lower``) at once, so a kernel outside the language is refused where
it is defined. A ``Kernel`` holds the compiler's IR; derived kernels (``tangent``,
``adjoint``) are ``Kernel`` objects too. Running kernels is eagle's job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from raptor_core import _core

from hawk.source import SourceUnavailable, kernel_spec
from hawk.types import Guard

__all__ = ["Kernel", "Helper", "SlotInfo", "kernel", "func"]

DTYPES = ("float32", "float64")


# The kernel interface's roles (raptor_core._core.Interface, cpp/runtime/interface.hpp) as
# SlotInfo kinds: an in-out Mutable is a "mutable" with inout set, the mask is "terminated".
_KIND_OF_ROLE = {
    "param": "param",
    "plane": "plane",
    "mutable": "mutable",
    "inout": "mutable",
    "mask": "terminated",
    "table": "table",
    "param_sum": "param_sum",
    "table_sum": "table_sum",
    "random": "random",
}


@dataclass(frozen=True)
class SlotInfo:
    """One parameter of a compiled kernel, as the runtime sees it: read from the kernel's
    interface (``Kernel.interface``), which is described once, in C++.

    kind: "param", "plane", "mutable", "terminated", "table", "param_sum", "table_sum" or "random".
    role: the interface's role ("inout" for an in-out Mutable, "mask" for the Terminated plane,
    else the kind).
    inout: an in-out Mutable, or a scatter target (a "table_sum" declared Mutable[Table[...]],
    ``hawk.scatter(t)[i] += v``: its bound values are read and added to; table_of is itself).
    dtype: "float" for the slots that take the build's float dtype, else the slot's own element
    type: "int32", "int64" or "bool" (integer and bool planes, and the mask).
    combine: how a "param_sum" combines its samples: "sum", or "min" / "max" for a
    ``hawk.min`` / ``hawk.max`` output (docs/language.md "Minimum and maximum over samples").
    """

    name: str
    kind: str
    width: int
    is_vector: bool
    inout: bool
    table_of: int
    role: str = ""
    rows: int = 0  # a Matrix[rows, width // rows]; 0: not a matrix
    dtype: str = "float"
    combine: str = "sum"

    @classmethod
    def of(cls, s: Any) -> "SlotInfo":
        """The SlotInfo of one ``_core.SlotInterface``."""
        dtype = "float" if s.dtype in ("float32", "float64") else s.dtype
        inout = s.role == "inout" or (s.role == "table_sum" and s.inout)  # an in-out plane, a scatter target
        return cls(s.name, _KIND_OF_ROLE[s.role], s.width, s.is_vector, inout, s.table_of, s.role, s.rows, dtype, s.combine)

    @property
    def is_float(self) -> bool:
        """Whether it takes the build's float dtype (False for integer and bool planes, the mask)."""
        return self.dtype == "float"

    @property
    def is_input(self) -> bool:
        """Whether a caller supplies it: everything but pure outputs and sums."""
        if self.kind in ("mutable", "table_sum"):  # a scatter target's bound values are an input
            return self.inout
        return self.kind != "param_sum"

    @property
    def is_output(self) -> bool:
        """Whether the kernel writes it: mutable planes, the Terminated mask, and sums."""
        return self.kind in ("mutable", "terminated", "param_sum", "table_sum")

    def annotation(self) -> str:
        """The hawk annotation that declares this parameter, as written in a kernel's signature
        (``"Mutable[Vector[3]]"``, ``"Param[hawk.int32]"``); used in messages."""
        elem = "" if self.dtype == "float" or self.kind == "terminated" else f"hawk.{'bool_' if self.dtype == 'bool' else self.dtype}"
        if self.rows:
            inner = f"Matrix[{self.rows}, {self.width // self.rows}]"
        elif self.is_vector:
            inner = f"Vector[{self.width}, {elem}]" if elem else f"Vector[{self.width}]"
        else:
            inner = f"Scalar[{elem}]" if elem else "Scalar"
        return {
            "param": f"Param[{elem}]" if elem else "Param",
            "plane": inner,
            "mutable": f"Mutable[{inner}]",
            "terminated": "Terminated",
            "table": f"Table[{inner}]",
            "param_sum": "ParamSum",
            "table_sum": f"Mutable[Table[{inner}]]" if self.inout else f"TableSum[{inner}]",
            "random": "Random",
        }[self.kind]


class Kernel:
    """A compiled hawk kernel: its signature, IR and emitted code, and its derivatives.

    Made by ``@hawk.kernel`` or derived with ``tangent`` / ``adjoint``. Run it with
    ``eagle.plan.auto([kernel])`` or ``eagle.frameworks.jax.function(kernel)``.
    """

    def __init__(self, core: Any, guard: Guard | None = None, origin: str = "", spec: dict[str, Any] | None = None,
                 time: str | None = None, time_step: str | None = None) -> None:
        self._core = core
        self.time = time            # the time plane (a float in-out Mutable Scalar), or None
        self.time_step = time_step  # the step's length (a float Param or Scalar plane), or None
        self._spec = spec  # the definition (hawk/source.py), for trace; None for derived kernels
        self.guard = guard or Guard()
        self._origin = origin
        self._interfaces: dict[str, Any] = {}
        layout = _core.kernel_interface(core, "float64", False)  # no digest: that is hashing the IR
        # A kernel with a stage boundary (docs/language.md "Stage boundaries") runs as stages;
        # its own parameters are the user's: the stages' links (hidden sums, the Params the
        # later stages read them as) are not among them.
        self.stage_links: tuple[StageLink, ...] = tuple(StageLink(*l) for l in core.stage_links()) if core.staged else ()
        hidden = {l.param for l in self.stage_links} | {l.sum for l in self.stage_links if l.hidden}
        self.slots: tuple[SlotInfo, ...] = tuple(SlotInfo.of(s) for s in layout.slots if s.name not in hidden)
        self._stages: tuple["Kernel", ...] | None = None
        self.stage_of: "Kernel | None" = None  # a stage's staged kernel (Kernel.stages)

    # --- what it is
    @property
    def name(self) -> str:
        """The kernel's name: its Python function's name (derived kernels add a suffix)."""
        return self._core.name

    @property
    def steps(self) -> int:
        """Steps per launch of a stepping kernel (``@hawk.kernel(steps=k)``); 0 for a map."""
        return self._core.steps

    @property
    def file(self) -> str:
        """The source file the kernel was defined in (error messages name it, with the line)."""
        return self._core.file

    @property
    def ir(self) -> str:
        """The optimized IR, one value per line."""
        return self._core.ir()

    def digest(self, dtype: str = "float64") -> str:
        """The SHA-256 of the kernel's IR and dtype: its name in caches and in the JAX bridge."""
        return self.interface(dtype).digest

    def interface(self, dtype: Any = "float64") -> Any:
        """The kernel's interface built for ``dtype`` (a ``raptor_core._core.Interface``): per
        slot its role, width, dtype and place among the JAX operands and results, the shape
        rule (``expected_shape(slot, n, table_sizes)``) and the aliases. eagle's binding checks
        and the JAX bridge read it; it is described once, in C++ (cpp/runtime/interface.hpp)."""
        hit = self._interfaces.get(dtype)  # keyed by what callers pass: a str or np.dtype
        if hit is None:
            name = _dtype(dtype)
            hit = self._interfaces.get(name) or _core.kernel_interface(self._core, name)
            self._interfaces[name] = self._interfaces[dtype] = hit
        return hit

    def cpp(self, dtype: str = "float64") -> str:
        """The C++ translation unit the host build compiles for this kernel."""
        return self._core.cpp(_dtype(dtype))

    def cuda(self, dtype: str = "float64") -> str:
        """The CUDA C++ translation unit of this kernel (for NVRTC; see runtime/abi_cuda.h).
        eagle does not launch it yet: the CUDA target is not built."""
        return self._core.cuda(_dtype(dtype))

    def slot(self, name: str) -> SlotInfo:
        """The :class:`SlotInfo` of the parameter ``name``; KeyError naming the kernel if it has
        none."""
        for s in self.slots:
            if s.name == name:
                return s
        raise KeyError(f"kernel '{self.name}' has no parameter '{name}'")

    @property
    def inputs(self) -> list[str]:
        """The names of the parameters a caller supplies, in signature order."""
        return [s.name for s in self.slots if s.is_input]

    @property
    def outputs(self) -> list[str]:
        """The names of the parameters the kernel writes, in signature order."""
        return [s.name for s in self.slots if s.is_output]

    def with_steps(self, steps: int) -> "Kernel":
        """The same kernel running ``steps`` steps per launch (a sample still stops as soon as
        it is terminated). eagle's stepping loops use it to run many steps per pass over memory. Refused (ModeError)
        for a staged kernel and for one with sums over samples (``sums_over_samples``), as
        ``@hawk.kernel(steps=...)`` refuses them: a sum is over one launch's live samples. Each
        step is what one launch of this kernel does, derived kernels included
        (cpp/passes/steps.hpp)."""
        self.refuse_staged("Kernel.with_steps", "run it one step per launch")
        sums = self.sums_over_samples()
        if sums:
            from eagle.errors import ModeError

            raise ModeError(f"Kernel.with_steps: kernel '{self.name}' has sums over samples ({', '.join(repr(s) for s in sums)}: "
                            "hawk.sum / mean / min / max outputs or scatter targets), which a kernel of more than one step "
                            "cannot have (each launch sums over its own live samples); run it one step per launch")
        return Kernel(self._core.with_steps(int(steps)), self.guard, f"{self.name} with steps={steps}", self._spec,
                      self.time, self.time_step)

    def sums_over_samples(self) -> list[str]:
        """The parameters that sum (or fold) over the samples of a launch: ``Mutable[Param]``
        outputs of ``hawk.sum`` / ``mean`` / ``min`` / ``max``, scatter targets, and a derived
        kernel's Param and Table cotangents. A kernel with any runs one step per launch."""
        return [s.name for s in self.slots if s.kind in ("param_sum", "table_sum")]

    # --- stage boundaries
    @property
    def staged(self) -> bool:
        """Whether the kernel has a stage boundary (a reduction over samples whose value the
        body reads, as in ``x - hawk.mean(x)``): it then runs as ``stages``, in order."""
        return bool(self.stage_links)

    @property
    def stages(self) -> tuple["Kernel", ...]:
        """The kernels a staged kernel runs as, in order (cpp/passes/stages.hpp): each earlier
        stage computes reductions into ParamSum slots (``stage_links``: the user's
        Mutable[Param] or a hidden one), which later stages read as Params. () for a kernel
        without a stage boundary."""
        if self._stages is None:
            self._stages = tuple(Kernel(c, self.guard, f"stage {i + 1} of {self.name}")
                                 for i, c in enumerate(self._core.stages()))
            for st in self._stages:
                st.stage_of = self
        return self._stages

    def refuse_staged(self, what: str, instead: str) -> None:
        """Raises ModeError when the kernel is staged: ``what`` does not run stage boundaries
        (the message names the kernel, the reduction's line and ``instead``)."""
        if self.staged:
            from eagle.errors import ModeError

            raise ModeError(staged_message(self, what, instead))

    # --- derivatives
    def tangent(self, wrt: Sequence[str], with_primal: bool = True) -> "Kernel":
        """The forward-mode kernel: primal inputs plus ``<w>_dot`` for each ``w`` in wrt;
        outputs ``<m>_dot`` for each output (and the primal outputs when with_primal)."""
        self.refuse_staged("Kernel.tangent", _DIFF_INSTEAD)
        return Kernel(self._core.tangent(list(_names(wrt)), bool(with_primal)), None, f"tangent of {self.name}")

    def adjoint(self, wrt: Sequence[str]) -> "Kernel":
        """The reverse-mode kernel: primal inputs plus ``<m>_bar`` for each output; returns
        ``<w>_bar`` for each ``w`` in wrt (sums over samples for Params and Tables)."""
        self.refuse_staged("Kernel.adjoint", _DIFF_INSTEAD)
        return Kernel(self._core.adjoint(list(_names(wrt))), None, f"adjoint of {self.name}")

    def winner(self) -> "Kernel":
        """The winner kernel of a kernel with ``hawk.min`` / ``hawk.max`` outputs: this kernel's
        inputs plus, per such output ``s``, its result as a Param ``s``; returns ``s_win``, the
        global sample index (a float) of the sample whose value the result is (the lowest among
        ties). The tangent and adjoint kernels take it as their Param ``s_win``
        (docs/derivatives.md "Minimum and maximum over samples")."""
        return Kernel(self._core.winner(), None, f"winner of {self.name}")

    def linearize(self, wrt: Sequence[str]) -> tuple["Kernel", "Kernel"]:
        """The forward-mode kernel split as JAX linearizes (cpp/ad/linearize.hpp):
        ``(primal, linear)``. ``primal`` takes this kernel's inputs and gives its outputs plus
        residual planes (``res0``, ``res1``, ... : values the tangents need); ``linear`` takes
        the inputs, the residuals and ``<w>_dot`` for each ``w`` in wrt and gives the tangent
        outputs of ``tangent(wrt, with_primal=False)``, linear in the ``_dot`` inputs, without
        recomputing the primal."""
        self.refuse_staged("Kernel.linearize", _DIFF_INSTEAD)
        primal, linear = self._core.linearize(list(_names(wrt)))
        return (Kernel(primal, None, f"linearized primal of {self.name}"),
                Kernel(linear, None, f"linearized tangent of {self.name}"))

    def without_unread_inputs(self) -> "Kernel":
        """The same kernel without the Param, plane and Table inputs it never reads.

        Derived kernels take every input of the kernel they came from, though their math may
        need fewer (an adjoint of a tangent kernel never reads the tangents). The JAX bridge
        calls derived kernels trimmed this way, so a scan saves and slices only what they read.
        Every other slot (outputs, the mask, in-out planes) is kept, in the same order."""
        return Kernel(self._core.without_unread_inputs(), self.guard, self._origin, None, self.time, self.time_step)

    def trace(self, samples: Sequence[int], **inputs: Any) -> dict[str, Any]:
        """Every named local's value at the end of each step, for the chosen samples:
        ``{name: array (steps, len(samples))}`` (``(steps, len(samples), k)`` for vectors),
        computed by the reference interpreter from the inputs ``plan.bind`` would take. See
        hawk/trace.py and docs/language.md ("Seeing inside a kernel")."""
        from hawk.trace import trace

        self.refuse_staged("Kernel.trace", "trace a kernel without the boundary, the reduced value passed as a Param")
        return trace(self, self._spec, samples, inputs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the kernel once over every sample of the arrays given, binding them like a call
        of the kernel's own signature, and returns the planes it writes (one array, or a
        tuple): see ``eagle.call``. The build is made on the first call and kept."""
        from eagle.call import call

        return call(self, args, kwargs)

    def __repr__(self) -> str:
        params = ", ".join(f"{s.name}: {s.annotation()}" for s in self.slots)
        extra = f", steps={self.steps}" if self.steps != 1 else ""
        extra += ", active_set=True" if self.guard.active_set else ""
        return f"<hawk.Kernel {self.name}({params}){extra}>"


_DIFF_INSTEAD = ("differentiate it through the JAX bridge (eagle.frameworks.jax.function(kernel)), which composes "
                 "its stages, or split it into kernels by hand")


@dataclass(frozen=True)
class StageLink:
    """One stage boundary of a staged kernel: stage ``stage`` (0-based) writes the reduction
    into ParamSum ``sum`` (a user's Mutable[Param], or a hidden slot when ``hidden``: a
    reduction inside an expression); later stages read it as Param ``param``. ``line``: the
    reduction's line in the kernel's file."""

    sum: str
    param: str
    hidden: bool
    line: int
    stage: int


def staged_message(k: "Kernel", what: str, instead: str) -> str:
    """The refusal of ``what`` for a staged kernel (pinned in tests/test_stages.py)."""
    line = k.stage_links[0].line if k.stage_links else 0
    return (f"{what}: kernel '{k.name}' has a stage boundary (the reduction at {k.file}:{line} is read in the same "
            f"body, so it runs as {len(k.stages)} stages, each over every sample); {what} does not run stage "
            f"boundaries: {instead}")


def _names(wrt: Sequence[str] | str) -> Sequence[str]:
    return (wrt,) if isinstance(wrt, str) else tuple(wrt)


def _dtype(dtype: Any) -> str:
    import numpy as np

    name = np.dtype(dtype).name
    if name not in DTYPES:
        raise ValueError(f"a kernel is built for float32 or float64, not {name}")
    return name


class Helper:
    """A ``@hawk.func`` helper: inlined into the kernels that call it.

    ``@helper.defjvp`` gives it its own derivative, with ``jax.custom_jvp``'s convention
    (docs/language.md "Custom derivatives")."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.jvp_rule: Callable[..., Any] | None = None
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def defjvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Sets the helper's derivative rule, ``rule(primals, tangents) -> (primal_out,
        tangent_out)`` with tangent_out linear in the tangents, as ``jax.custom_jvp.defjvp``.
        Tangent kernels use it and adjoint kernels transpose it; a second derivative
        differentiates the rule. Kernels defined after this call see it. Returns ``rule``."""
        if not callable(rule):
            raise TypeError(f"{self.__name__}.defjvp takes a function (primals, tangents) -> (primal_out, tangent_out)")
        self.jvp_rule = rule.fn if isinstance(rule, Helper) else rule  # a @hawk.func rule: its function
        return rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"hawk helper '{self.__name__}' can only be called inside a kernel or another helper")

    def __repr__(self) -> str:
        return f"<hawk.func {self.__name__}>"


def func(fn: Callable[..., Any]) -> Helper:
    """Marks a helper function that kernels (and other helpers) may call. It is inlined;
    its parameters take whatever types the call passes, and it ends with ``return value``."""
    return Helper(fn)


def kernel(fn: Callable[..., Any] | None = None, *, steps: int = 1, guard: Guard | None = None, time: str | None = None,
           time_step: str | None = None) -> Any:
    """Compiles a Python function into a hawk kernel (docs/language.md).

    ``@hawk.kernel`` makes a map (one pass per sample); ``@hawk.kernel(steps=k)`` a stepping
    kernel whose launches advance each sample k steps; ``guard=Guard(active_set=True)`` asks
    eagle to launch only over live samples. ``time="t", time_step="dt"`` name the kernel's time
    plane (a float in-out ``Mutable[Scalar]``) and the length of its step (a float Param or
    Scalar plane), which ``eagle.simulate(..., events="refine")`` needs to locate a stop
    inside a step (hawk/events.py). Raises ``hawk.KernelError`` for anything outside
    the language, naming the kernel, file, line and what is allowed instead.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"hawk.kernel: steps must be a positive int, got {steps!r}")
    if guard is not None and not isinstance(guard, Guard):
        raise TypeError(f"hawk.kernel: guard must be a hawk.Guard, got {type(guard).__name__}")
    for what, value in (("time", time), ("time_step", time_step)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"hawk.kernel: {what} names a parameter (a str), got {value!r}")

    def build(f: Callable[..., Any]) -> Kernel:
        try:
            spec = kernel_spec(f, steps, bool(guard and guard.active_set))
        except SourceUnavailable as err:
            raise _core.KernelError(str(err)) from None
        k = Kernel(_core.lower(spec), guard, "", spec, time, time_step)
        _check_time(k)
        return k

    if fn is not None:
        return build(fn)
    return build


def _check_time(k: Kernel) -> None:
    """Refuses ``time``/``time_step`` names that are not a float in-out Mutable Scalar and a
    float Param or Scalar plane of the kernel."""
    names = {s.name: s for s in k.slots}
    if k.time is not None:
        s = names.get(k.time)
        if s is None or s.kind != "mutable" or not s.inout or not s.is_float or s.is_vector:
            raise _core.KernelError(
                f"hawk kernel '{k.name}': time={k.time!r} names the time plane, a float Mutable[Scalar] the step reads "
                f"and advances (t = t + dt); " + (f"'{k.time}' is {s.annotation()}" if s is not None else
                                                  f"the kernel has no parameter '{k.time}'"))
    if k.time_step is not None:
        s = names.get(k.time_step)
        if s is None or s.kind not in ("param", "plane") or not s.is_float or s.is_vector:
            raise _core.KernelError(
                f"hawk kernel '{k.name}': time_step={k.time_step!r} names the step's length, a float Param or Scalar; "
                + (f"'{k.time_step}' is {s.annotation()}" if s is not None else f"the kernel has no parameter '{k.time_step}'"))
