"""Direct calls: ``kernel(*args, **kwargs)`` runs a kernel once over every sample.

Start at ``call``; ``resolve`` is the argument binding that ``eagle.simulate`` shares.

A call binds like a Python call of the kernel's own signature: positionally in the order of
its parameters, by name, or both (a parameter given twice, an unknown name or a missing input
raises TypeError naming the kernel). Then:

- Planes and Mutables take arrays (NumPy on the host, CuPy or any ``__cuda_array_interface__``
  array on a GPU) or numbers. The sample count N is the last axis of the per-sample arrays
  given, which must agree. A number (or one sample's value: a Vector[k] as shape ``(k,)``) is
  broadcast to every sample; when no per-sample array is given the call is one sample and
  its outputs are numbers (one sample's Vector as a ``(k,)`` array).
- A Mutable passed as an array of every sample is updated in place and returned (the same
  object); one left out, or given as a number, is allocated (zeros, or the number) and
  returned. The Terminated mask may be left out: every sample starts live.
- Float planes given as numbers take the dtype of the float arrays given (float64 when there
  are none). An array of another dtype is never converted: ``plan.bind`` refuses an int or
  bool array for a float plane with its own message, and every check it makes applies.
- It returns the written planes in the kernel's order: one array, or a tuple.

A read array that shares memory with an array the call writes (``affine(x, 2.0, 1.0, y=x)``)
is read as it was before the call, as NumPy's ``out=`` does: the call reads a copy of it (on the
host; device arrays that overlap are refused by ``plan.bind``). Two written arrays that overlap
are refused.

Nothing is written when a call fails: binding checks everything before anything runs, and a
kernel that can report an error while it runs (a Table index out of range, an integer
division by zero) runs on copies of the caller's arrays, copied back only when it succeeded.

The plan (host or CUDA build) is made on the first call for each target and kept with the
kernel for the process (``plan_for``).
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

import eagle.plan
from eagle.arrays import ArrayModule, for_target
from hawk.kernel import Kernel, SlotInfo

__all__ = ["call", "resolve", "Resolved", "plan_for", "target_of"]

# Per kernel object, per target: its plan (the kernel's build in both dtypes).
_PLANS: "weakref.WeakKeyDictionary[Kernel, dict[str, Any]]" = weakref.WeakKeyDictionary()

_PER_SAMPLE = ("plane", "mutable", "terminated")
# IR operations that can report an error while a kernel runs (cpp/runtime/abi.h RAPTOR_ERR_*).
_FAILING_OPS = re.compile(r"= (load_table|floordiv|mod|to_int) ")


def plan_for(kernel: Kernel, target: str = "host") -> Any:
    """The kernel's plan for ``target`` ('host' or 'cuda'), built on the first request and kept
    for the process."""
    plans = _PLANS.setdefault(kernel, {})
    if target not in plans:
        (plans[target],) = eagle.plan.auto([kernel], targets=(target,))
    return plans[target]


# Per kernel object: whether it can report an error while it runs (read from its IR once).
_MAY_FAIL: "weakref.WeakKeyDictionary[Kernel, bool]" = weakref.WeakKeyDictionary()


def _may_fail(kernel: Kernel) -> bool:
    hit = _MAY_FAIL.get(kernel)
    if hit is None:
        hit = _MAY_FAIL[kernel] = _FAILING_OPS.search(kernel.ir) is not None or any(
            s.kind == "table_sum" and s.inout for s in kernel.slots)  # a scatter's index
    return hit


def _is_device(value: Any) -> bool:
    return hasattr(value, "__cuda_array_interface__") and not isinstance(value, np.ndarray)


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.number, np.bool_)) or (isinstance(value, np.ndarray) and value.ndim == 0)


def target_of(values: Mapping[str, Any]) -> str:
    """'cuda' when any value is a device array, else 'host'."""
    return "cuda" if any(_is_device(v) for v in values.values()) else "host"


def _sample_shape(s: SlotInfo) -> tuple[int, ...]:
    """The shape of one sample's value of a per-sample slot (without the sample axis)."""
    if s.kind == "terminated" or (not s.is_vector and not s.rows):
        return ()
    if s.rows:
        return (s.rows, s.width // s.rows)
    return (s.width,)


@dataclass
class Resolved:
    """A call's values by parameter name, ready for ``plan.bind``."""

    values: dict[str, Any]
    n: int
    one_sample: bool  # no per-sample array was given: N = 1 and results are numbers
    dtype: np.dtype
    target: str
    allocated: set[str] = field(default_factory=set)  # made here (not the caller's arrays)


def _match(kernel: Kernel, args: Sequence[Any], kwargs: Mapping[str, Any], who: str, skip: Sequence[str]) -> dict[str, Any]:
    """Python's call binding over the kernel's parameters (those in ``skip`` not positional)."""
    names = [s.name for s in kernel.slots  # sums are results; a scatter target's values are given
             if s.kind not in ("param_sum", "table_sum") or (s.kind == "table_sum" and s.inout)]
    positional = [n for n in names if n not in skip]
    if len(args) > len(positional):
        raise TypeError(f"{who}: takes {len(positional)} positional argument{'s' if len(positional) != 1 else ''} "
                        f"({', '.join(positional)}), got {len(args)}")
    given = dict(zip(positional, args))
    for name, value in kwargs.items():
        if name not in names and name not in {s.name for s in kernel.slots}:
            raise TypeError(f"{who}: {name!r} is not a parameter (parameters: {names})")
        if name in given:
            raise TypeError(f"{who}: got multiple values for argument {name!r}")
        given[name] = value
    return given


def resolve(kernels: Sequence[Kernel], given: Mapping[str, Any], who: str, *, mask: str = "allocate",
            xp: ArrayModule | None = None) -> Resolved:
    """Values for every parameter of ``kernels`` (planes shared by name): arrays kept, numbers
    and one-sample values broadcast to N, Mutables and the mask left out allocated. ``mask``:
    'allocate' (a mask not given is allocated), or 'refuse' (the mask is never passed:
    ``eagle.simulate``). Raises TypeError/ValueError naming ``who`` and the parameter."""
    slots: dict[str, SlotInfo] = {}
    table_of: dict[str, str] = {}  # a Table's sum (cotangent) -> that Table, in the kernel that has it
    for k in kernels:
        for s in k.slots:
            slots.setdefault(s.name, s)
            if s.kind == "table_sum":
                table_of.setdefault(s.name, k.slots[s.table_of].name)
    target = target_of(given)
    xp = xp or for_target(target)
    # N from the per-sample arrays given, which must agree.
    n: int | None = None
    first = ""
    for name, value in given.items():
        s = slots[name]
        if s.kind not in _PER_SAMPLE or _is_number(value):
            continue
        shape = tuple(getattr(value, "shape", ()))
        if len(shape) == len(_sample_shape(s)):
            continue  # one sample's value
        if not shape:
            continue
        if n is not None and shape[-1] != n:
            raise ValueError(f"{who}: '{name}' has {shape[-1]} samples (shape {shape}) but '{first}' has {n}; "
                             "per-sample planes must have the same last axis (or be one sample's value, broadcast)")
        n, first = int(shape[-1]), name
    one_sample = n is None
    n = 1 if n is None else n
    # The float dtype: the first float array given, else float64.
    dtype = np.dtype(np.float64)
    for name, value in given.items():
        dt = getattr(value, "dtype", None)
        if dt is not None and not _is_number(value) and slots[name].is_float and np.dtype(dt).kind == "f":
            dtype = np.dtype(dt)
            break
    values: dict[str, Any] = {}
    allocated: set[str] = set()
    sums = []
    for name, s in slots.items():
        if not s.is_input and s.kind in ("param_sum", "table_sum"):
            sums.append(s)  # after the Tables, which size a Table's sum
            continue
        if s.kind == "terminated" and mask == "refuse" and name in given:
            raise TypeError(f"{who}: '{name}' is the Terminated mask: every sample starts live and the loop drives it "
                            "(it is returned as result.finished); do not pass it")
        if name not in given:
            if s.kind == "terminated":
                values[name] = xp.zeros((n,), np.bool_)
            elif s.kind == "mutable" and not s.inout:
                values[name] = xp.zeros(_sample_shape(s) + (n,), dtype if s.is_float else np.dtype(s.dtype))
            elif s.kind == "mutable":
                raise TypeError(f"{who}: the Mutable '{name}' is read before it is written, so it needs an initial value: "
                                f"pass {name}=...")
            else:
                raise TypeError(f"{who}: missing a value for '{name}' ({s.annotation()})")
            allocated.add(name)
            continue
        value = given[name]
        if s.kind in _PER_SAMPLE and (_is_number(value) or len(getattr(value, "shape", ())) == len(_sample_shape(s))):
            values[name] = _broadcast(s, value, n, dtype, xp, who)
            allocated.add(name)
        else:
            values[name] = value
    # Sums over samples (hawk.sum / mean / min / max into a Mutable[Param], derived kernels'
    # Param and Table cotangents): the array given is written, as a Mutable's is; one left out
    # is allocated (zeros: a launch overwrites it).
    for s in sums:
        if s.name in given:
            values[s.name] = given[s.name]
            continue
        if s.kind == "param_sum":
            shape: tuple[int, ...] = (s.width,)
        else:
            m = int(getattr(values.get(table_of[s.name]), "shape", (0,))[0])
            shape = (m,) if not s.is_vector else (m, s.width)
        values[s.name] = xp.zeros(shape, dtype)
        allocated.add(s.name)
    return Resolved(values, n, one_sample, dtype, target, allocated)


def _broadcast(s: SlotInfo, value: Any, n: int, dtype: np.dtype, xp: ArrayModule, who: str) -> Any:
    """A plane of n samples, each ``value`` (a number, or one sample's value). A float plane
    takes numbers (ints included) and float arrays; a bool is refused for it, as is an
    integer or bool array (``plan.bind`` refuses those arrays for every sample too)."""
    shape = _sample_shape(s)
    elem = dtype if s.is_float else np.dtype(np.bool_ if s.kind == "terminated" else s.dtype)
    one = np.asarray(value.get() if _is_device(value) and hasattr(value, "get") else value)
    if one.shape != shape:
        raise ValueError(f"{who}: '{s.name}' is one sample's value of shape {one.shape}; {s.annotation()} takes {shape}")
    if s.is_float and (one.dtype.kind == "b" or (one.ndim > 0 and one.dtype.kind != "f")):
        raise TypeError(f"{who}: plane '{s.name}' is {s.annotation()} and takes float values, got {one.dtype}; "
                        f"pass floats (an integer or bool array is never reinterpreted)")
    if not s.is_float and one.dtype.kind == "f" and s.kind != "terminated":
        raise TypeError(f"{who}: plane '{s.name}' is {s.annotation()} and takes {elem} values, got {one.dtype}")
    arr = xp.zeros(shape + (n,), elem)
    xp.assign(arr, one.astype(elem).reshape(shape + (1,)))
    return arr


def _outputs(kernel: Kernel) -> list[SlotInfo]:
    return [s for s in kernel.slots if s.kind in ("mutable", "param_sum", "table_sum")]


def _number(arr: Any) -> Any:
    """One sample's value of a per-sample result: a NumPy scalar, or a (k,) / (r, c) array."""
    host = arr.get() if hasattr(arr, "get") and not isinstance(arr, np.ndarray) else np.asarray(arr)
    one = host[..., 0]
    return one[()] if one.ndim == 0 else one.copy()


def _read_before_written(kernel: Kernel, values: dict[str, Any]) -> None:
    """NumPy's rule for ``out=``, on the host: a read array (a plane, a Table, a Param's array)
    that shares memory with an array the call writes is replaced by a copy of it, so the call
    reads every input as it was before the call. Two written arrays that overlap are left to
    ``plan.bind``, which refuses them by name (as it refuses any overlap with a written array:
    a binding outlives one launch; docs/runtime.md)."""
    written = [values[s.name] for s in kernel.slots if s.is_output and isinstance(values.get(s.name), np.ndarray)]
    for s in kernel.slots:
        value = values.get(s.name)
        if s.is_output or not isinstance(value, np.ndarray):
            continue
        if any(np.may_share_memory(value, w) for w in written):
            values[s.name] = value.copy()


def call(kernel: Kernel, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """``kernel(*args, **kwargs)`` (module docstring)."""
    who = f"hawk kernel '{kernel.name}'"
    given = _match(kernel, args, kwargs, who, skip=())
    r = resolve([kernel], given, who)
    plan = plan_for(kernel, r.target)
    values = dict(r.values)
    xp = for_target(r.target)
    # A kernel that can fail while it runs writes into copies, copied back once it succeeded.
    copies: dict[str, Any] = {}
    if _may_fail(kernel):
        for s in kernel.slots:
            if s.is_output and s.name in given and s.name not in r.allocated:
                copies[s.name] = values[s.name]
                values[s.name] = xp.copy(values[s.name])
    if r.target == "host":
        _read_before_written(kernel, values)
    bound = plan.bind(**values)
    bound.launch()
    if r.target == "cuda":
        bound.synchronize()  # a kernel's error is reported here, before anything is copied back
    if copies:
        for name, theirs in copies.items():
            xp.assign(theirs, values[name])
            values[name] = theirs
    outs = []
    for s in _outputs(kernel):
        arr = values[s.name]
        outs.append(_number(arr) if r.one_sample and s.kind == "mutable" else arr)
    return outs[0] if len(outs) == 1 else tuple(outs)
