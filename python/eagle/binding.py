"""Binding a compiled kernel to arrays: every check a user's values must pass, with messages
that name the kernel and the plane, done before anything runs (bad input changes nothing),
then one ``raptor_core._core.Bound`` that holds the arrays' pointers by reference.

Start at ``bind``. Layouts (docs/language.md): Scalar ``(N,)``, Vector[k] ``(k, N)``, Terminated
bool ``(N,)``, Table ``(M,)`` or ``(M, k)``, Param a number or a 0-d/1-element array of any
float or integer dtype (read at each launch, as ``float(value)`` reads it), finished_count
uint32 ``(1,)``; integer and bool planes (``Scalar[hawk.int32]`` ...) arrays of exactly their
declared dtype and integer Params an int within that dtype; sums of derived kernels ``(k,)`` / ``(M,)`` / ``(M, k)``. The shapes and
dtypes come from the kernel's interface (``Kernel.interface``, described once in C++:
cpp/runtime/interface.hpp).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from raptor_core import _core

from eagle.errors import ModeError
from eagle.rng import key_words
from hawk.kernel import Kernel

__all__ = ["Bound", "bind", "as_host_array", "check_disjoint", "int_param_number", "param_number"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _native(arr: np.ndarray, who: str, name: str) -> np.ndarray:
    if arr.dtype.byteorder == ">":
        raise ModeError(
            f"{who}: '{name}' is big-endian ({arr.dtype.str}); kernels read native byte order: bind "
            f"arr.astype(arr.dtype.newbyteorder('=')) instead"
        )
    return arr


def as_host_array(value: Any, who: str, name: str) -> np.ndarray:
    """The NumPy view of a host array, without a copy; refuses what would need one."""
    if isinstance(value, np.ndarray):
        return _native(value, who, name)
    if hasattr(value, "__cuda_array_interface__") and not hasattr(value, "__array_interface__"):
        raise ModeError(f"{who}: '{name}' is a GPU array; this plan runs on the host (target 'host'): pass a NumPy array")
    if hasattr(value, "__array_interface__") or hasattr(value, "__array__") or hasattr(value, "__dlpack__"):
        try:
            arr = np.from_dlpack(value) if hasattr(value, "__dlpack__") else np.asarray(value)
        except (TypeError, BufferError, RuntimeError) as err:
            raise TypeError(f"{who}: '{name}' cannot be read as a host array without a copy ({err})") from None
        iface = getattr(value, "__array_interface__", None)
        if iface is not None and arr.__array_interface__["data"][0] != iface["data"][0]:
            raise TypeError(f"{who}: '{name}' would be copied to become an array; bind an array that owns its memory so later writes are seen")
        return _native(arr, who, name)
    raise TypeError(f"{who}: '{name}' must be an array, got {type(value).__name__}")


def param_number(value: Any, dtype: np.dtype, who: str, name: str) -> float:
    """A Param given as one number (a Python or NumPy int or float), as ``float(value)``.
    Refuses, naming the kernel (``who``) and the Param: a bool, a complex number, anything
    else that is not a number, and a finite number beyond the kernel's float (``dtype``)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{who}: Param '{name}' must be a number, got a bool ({value!r}); pass 1.0 or 0.0 if that is what you mean")
    if isinstance(value, (complex, np.complexfloating)):
        raise TypeError(f"{who}: Param '{name}' must be a real number, got a complex number ({value!r}); pass its real part (.real) if that is what you mean")
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{who}: Param '{name}' must be a number or a 0-d/1-element array, got {type(value).__name__}")
    try:
        x = float(value)
        fits = not np.isinf(x) or bool(np.isinf(value))
    except OverflowError:  # an int beyond every double
        x, fits = 0.0, False
    if fits:
        with np.errstate(over="ignore"):
            fits = not np.isfinite(x) or bool(np.isfinite(np.asarray(x, dtype=dtype)))
    if not fits:
        shown = f"an int of about 10**{int(value.bit_length() * 0.30103)}" if isinstance(value, int) else repr(value)
        raise ValueError(
            f"{who}: Param '{name}' = {shown} does not fit the kernel's float ({np.dtype(dtype).name}, largest "
            f"{float(np.finfo(dtype).max):.4g}); pass a number within that range (or float('inf') for an infinite one)"
        )
    return x


def int_param_number(value: Any, dtype: str, who: str, name: str) -> float:
    """An integer (or bool) Param's value: a Python or NumPy int within ``dtype`` ("int32",
    "int64"; int64 within +-2**53, the exact range of the launch's double parameter cell), or a
    bool for a ``Param[hawk.bool_]``. Refuses floats (write int(x) yourself: the kernel would not
    know how to round) naming the kernel (``who``), the Param and the fix."""
    decl = f"Param[hawk.{'bool_' if dtype == 'bool' else dtype}]"
    if dtype == "bool":
        if isinstance(value, (bool, np.bool_)):
            return 1.0 if value else 0.0
        raise TypeError(f"{who}: Param '{name}' is a {decl} and takes True or False, got {value!r}")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"{who}: Param '{name}' is an integer {decl} and takes an int, got {type(value).__name__} {value!r}; "
            f"pass int({name}) (truncating) or round it yourself"
        )
    lo, hi = (-(2**31), 2**31 - 1) if dtype == "int32" else (-(2**53), 2**53)
    if not lo <= int(value) <= hi:
        raise ValueError(f"{who}: Param '{name}' = {int(value)} does not fit a {decl} (range [{lo}, {hi}]); pass an int in that range")
    return float(int(value))


def _element_code(dt: np.dtype) -> str:
    """The element type of a Param array as runtime::param_element spells it (bound.hpp)."""
    return "g" if dt.char == "g" else f"{dt.kind}{dt.itemsize}"


def _param_value(value: Any, dtype: np.dtype, who: str, name: str) -> tuple[float, tuple[int, str] | None, Any]:
    """(value now, a by-reference source (address, element type) or None, the object to keep
    alive). A number is read now; an array of any float or integer dtype at each launch, as
    float(value) reads it (then rounded to the kernel's dtype, as a number is)."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
        return param_number(value, dtype, who, name), None, None
    if isinstance(value, (list, tuple)):
        raise TypeError(f"{who}: Param '{name}' must be a number or a 0-d/1-element array, got a {type(value).__name__}; pass {name}[0] or np.asarray({name})")
    arr = as_host_array(value, who, name)
    if arr.size != 1:
        raise ValueError(f"{who}: Param '{name}' is one value for all samples; got an array of shape {arr.shape}")
    if arr.dtype.kind not in "fiu":
        fix = f"pass {name}.real" if arr.dtype.kind == "c" else f"pass {name}.astype(np.float64)"
        raise ModeError(
            f"{who}: Param '{name}' is a {arr.dtype} array, which a kernel cannot read as a real number; {fix} "
            "(an array of any float or integer dtype is read at each launch)"
        )
    return float(arr.reshape(())), (arr.ctypes.data, _element_code(arr.dtype)), arr


def check_disjoint(who: str, spans: list[tuple[str, int, int, bool]]) -> None:
    """Refuses a binding where an array the kernel writes overlaps another bound array in
    memory. ``spans``: (name, first byte's address, bytes, written) of every array bound (a
    Param's array read at launches counts as read). Two read arrays may overlap (the same
    array bound as two planes is fine); a written one may not overlap anything else: the
    samples of one launch run in any order, on any thread, and the stepping loops keep a
    sample's values in lanes between its steps, so such a launch would give results that
    depend on the thread count and on how its steps are fused. Raises ValueError naming both."""
    end = -1
    for first, stop in sorted((start, start + nbytes) for _, start, nbytes, _ in spans if nbytes > 0):
        if first < end:
            break  # two arrays overlap: which ones, and does the kernel write one?
        end = stop
    else:
        return  # the usual case: every array has memory of its own
    clashes = [(i, j) for i, (_, a0, an, aw) in enumerate(spans) for j, (_, b0, bn, bw) in enumerate(spans)
               if i < j and (aw or bw) and an > 0 and bn > 0 and a0 < b0 + bn and b0 < a0 + an]
    if clashes:
        i, j = clashes[0]
        (a, _, _, a_written), (b, _, _, _) = spans[i], spans[j]
        raise ValueError(
            f"{who}: '{a}' and '{b}' overlap in memory, and the kernel writes '{a if a_written else b}'; a plane "
            "the kernel writes needs memory of its own (a launch's samples run in any order, on any thread): "
            "bind a copy to one of them (its .copy()); to update an array in place, make it a Mutable and bind it once"
        )


class Bound:
    """A kernel bound to arrays by reference: ``launch()`` runs it over the arrays' current
    contents. Made by ``plan.bind(...)``."""

    def __init__(self, plan: Any, core: Any, dtype: np.dtype, n: int, arrays: dict[str, Any], param_values: dict[str, Any],
                 rng: tuple[int, int] | None = None) -> None:
        self.plan = plan
        self.rng = rng  # the Random key's words (launch n draws with fold_in(key, n)), or None
        self._core = core
        self.dtype = dtype
        self.n = n
        self.arrays = arrays  # keeps every bound buffer alive while the binding exists
        self.param_values = param_values  # numbers, or the arrays read at each launch

    @property
    def kernel(self) -> Kernel:
        """The hawk kernel of the bound plan."""
        return self.plan.kernel

    @property
    def name(self) -> str:
        """The bound kernel's name."""
        return self.plan.kernel.name

    def launch(self) -> int:
        """One launch over every live sample; returns how many samples it finished. A kernel
        error (a Table index out of range) raises RuntimeError naming the kernel and table."""
        from eagle.runtime import host_runtime

        return self._core.launch(host_runtime())

    def reset_active(self) -> None:
        """For Guard(active_set=True) kernels: rebuild the live-sample index map from the mask
        (call it after changing the mask yourself)."""
        self._core.reset_active()

    def reads(self) -> dict[str, Any]:
        """The planes and tables this launch reads (in-out Mutables and the mask included)."""
        out = {}
        for s in self.kernel.slots:
            if s.kind in ("plane", "table", "terminated") or (s.kind in ("mutable", "table_sum") and s.inout):
                out[s.name] = self.arrays[s.name]
        return out

    def writes(self) -> dict[str, Any]:
        """The planes this launch writes (Mutables, the mask, sums)."""
        return {s.name: self.arrays[s.name] for s in self.kernel.slots if s.kind in ("mutable", "terminated", "param_sum", "table_sum")}

    def params(self) -> dict[str, float | int]:
        """The Params' values as the next launch would read them: floats, and ints for
        integer Params (``Param[hawk.int32]``, ``Param[hawk.int64]``: exact)."""
        out: dict[str, float | int] = {}
        for s in self.kernel.slots:
            if s.kind == "param":
                v = self.param_values[s.name]
                v = np.asarray(v).reshape(()) if isinstance(v, np.ndarray) else v
                out[s.name] = float(v) if s.dtype == "float" else int(v)
        return out

    def set_rng(self, k0: int, k1: int, next_launch: int, stream: Any = None) -> None:
        """A Random kernel's key words and the number of its next launch (launch n draws with
        fold_in(key, n)); ``stream`` is for the GPU's binding and unused here."""
        self._core.set_rng(k0, k1, next_launch)

    def launch_count(self, stream: Any = None) -> int:
        """``launches``, after the work enqueued on ``stream`` (the GPU's binding; unused here)."""
        return self.launches

    @property
    def launches(self) -> int:
        """Launches run so far: the next launch is launch n = launches (its draws use
        fold_in(key, n); docs/language.md, "Random numbers")."""
        return int(self._core.launches)

    @property
    def live(self) -> int:
        """Samples in the active set (n for kernels without one)."""
        return self._core.live

    def __repr__(self) -> str:
        return f"<eagle.Bound {self.name} n={self.n} {self.dtype.name}>"


def _first_float_dtype(kernel: Kernel, values: Mapping[str, Any], who: str) -> tuple[np.dtype, str]:
    for s in kernel.slots:
        if s.kind in ("plane", "mutable", "table", "param_sum", "table_sum") and s.is_float and s.name in values:
            v = values[s.name]
            dt = getattr(v, "dtype", None)
            if dt is not None:
                dt = np.dtype(dt)
                if isinstance(v, np.ndarray):
                    _native(v, who, s.name)
                if dt in _FLOATS:
                    return dt, s.name
                raise ModeError(f"{who}: plane '{s.name}' is {dt}, which is not supported; a kernel runs float32 or float64 planes")
    return np.dtype(np.float64), ""


def bind(plan: Any, values: Mapping[str, Any], zero_finished: bool = False, n_samples: int | None = None) -> Bound:
    """Checks ``values`` against ``plan.kernel`` and binds them (see the module docstring).
    ``n_samples``: the sample count when the kernel has no plane to read it from (a stage of
    a staged kernel, eagle/stages.py)."""
    kernel: Kernel = plan.kernel
    who = f"eagle: kernel '{kernel.name}'"
    names = {s.name for s in kernel.slots}
    extra = [k for k in values if k not in names and k != "finished_count"]
    if extra:
        raise TypeError(f"{who}: {extra[0]!r} is not a parameter (parameters: {[s.name for s in kernel.slots]})")
    missing = [s.name for s in kernel.slots if s.name not in values]
    if missing:
        raise TypeError(f"{who}: missing value(s) for {missing}")

    dtype, first = _first_float_dtype(kernel, values, who)
    iface = kernel.interface(dtype)
    arrays: dict[str, Any] = {}
    n: int | None = None
    ns = len(kernel.slots)
    ins, outs = [0] * ns, [0] * ns
    params, sizes = [0.0] * ns, [0] * ns
    seen_tables: set[int] = set()
    sources: list[tuple[int, int, str]] = []
    mask_ptr = 0
    rng: tuple[int, int] | None = None
    spans: list[tuple[str, int, int, bool]] = []  # every array bound: check_disjoint

    # Sample count from the first plane or mask.
    for s in kernel.slots:
        if s.kind in ("plane", "mutable", "terminated"):
            arr = as_host_array(values[s.name], who, s.name)
            if arr.ndim >= 1:
                n = int(arr.shape[-1])
                break
    if n is None and n_samples is not None:
        n = int(n_samples)
    for i, (s, si) in enumerate(zip(kernel.slots, iface.slots)):
        value = values[s.name]
        if s.kind == "random":
            rng = key_words(value, who, s.name)
            continue
        if s.kind == "param" and not s.is_float:
            if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iu" and s.dtype != "bool":
                # An integer array: checked now, read at each launch like a float Param's array.
                int_param_number(value.reshape(()).item(), s.dtype, who, s.name)
                params[i], src, keep = _param_value(value, dtype, who, s.name)
                sources.append((i, src[0], src[1]))
                arrays[s.name] = keep
                spans.append((s.name, src[0], keep.nbytes, False))
                continue
            if isinstance(value, np.ndarray) and value.size == 1:
                value = value.reshape(()).item()
            params[i] = int_param_number(value, s.dtype, who, s.name)
            continue
        if s.kind == "param":
            params[i], src, keep = _param_value(value, dtype, who, s.name)
            if src is not None:
                sources.append((i, src[0], src[1]))
                arrays[s.name] = keep
                spans.append((s.name, src[0], keep.nbytes, False))
            continue
        arr = as_host_array(value, who, s.name)
        if arr.dtype.name != si.dtype:
            if s.kind != "terminated" and not s.is_float:
                raise ModeError(
                    f"{who}: plane '{s.name}' is declared {s.annotation()} and takes {si.dtype} arrays, got {arr.dtype}; "
                    f"pass {s.name}.astype(np.{'bool_' if si.dtype == 'bool' else si.dtype}) (integer and bool planes keep "
                    "their declared dtype in float32 and float64 builds)"
                )
            if s.kind == "terminated":
                raise ModeError(f"{who}: the Terminated mask '{s.name}' must be a bool array, got {arr.dtype}")
            if arr.dtype not in _FLOATS:
                raise ModeError(f"{who}: plane '{s.name}' is {arr.dtype}, which is not supported; a kernel runs float32 or float64 planes")
            raise ModeError(f"{who}: mixed floating dtypes in one launch (plane '{s.name}' is {arr.dtype}, the first plane '{first}' is {dtype}); bind every plane in one float dtype")
        if s.kind in ("table", "table_sum"):
            m = int(arr.shape[0]) if arr.ndim >= 1 else -1
            if s.kind == "table":
                seen_tables.add(i)
                sizes[i] = m
            elif s.table_of in seen_tables:
                m = sizes[s.table_of]
            else:  # a sum before its table: sized by its own array until the table is seen
                sizes[s.table_of] = m
            if s.kind == "table_sum":
                sizes[i] = m
        want = iface.expected_shape(i, n if n is not None else -1, sizes)
        if arr.shape != want:
            shown = want[:-1] + (None,) if si.sized_by_n and n is None else want
            what = {"table": "Table", "table_sum": "sum output", "param_sum": "sum output"}.get(s.kind, "plane")
            raise ValueError(f"{who}: {what} '{s.name}' must have shape {shown}" + (f" for n={n}" if s.kind in ("plane", "mutable", "terminated") else "") + f", got {arr.shape}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"{who}: '{s.name}' is not C-contiguous; pass np.ascontiguousarray(...) and bind that array (a copy would hide later writes)")
        if arr.ctypes.data % arr.dtype.itemsize:
            raise ValueError(f"{who}: '{s.name}' is not aligned to its {arr.dtype.itemsize}-byte elements")
        written = s.kind in ("mutable", "terminated", "param_sum", "table_sum")
        if written and not arr.flags.writeable:
            raise ValueError(f"{who}: '{s.name}' is written by the kernel but the array is read-only")
        arrays[s.name] = arr
        ptr = arr.ctypes.data
        spans.append((s.name, ptr, arr.nbytes, written))
        if s.kind == "terminated":
            mask_ptr = ptr
        elif s.kind in ("plane", "table"):
            ins[i] = ptr
        elif s.kind == "mutable" or (s.kind == "table_sum" and s.inout):
            outs[i] = ptr  # a scatter target (Mutable[Table]): its values plus the launch's adds
            if s.inout:
                ins[i] = ptr
        else:
            outs[i] = ptr

    finished_ptr = 0
    if "finished_count" in values:
        fc = as_host_array(values["finished_count"], who, "finished_count")
        if fc.dtype != np.uint32 or fc.shape != (1,):
            raise ValueError(f"{who}: finished_count must be a uint32 array of shape (1,), got {fc.dtype} {fc.shape}")
        if not fc.flags.writeable:
            raise ValueError(f"{who}: finished_count is read-only")
        arrays["finished_count"] = fc
        finished_ptr = fc.ctypes.data
        spans.append(("finished_count", finished_ptr, fc.nbytes, True))
    if kernel.guard.active_set and not mask_ptr:
        raise ValueError(f"{who}: Guard(active_set=True) needs a Terminated parameter to know which samples are live")

    check_disjoint(who, spans)
    entry = plan.entry(dtype)
    core = _core.Bound.make(entry, n or 0, ins, outs, params, sizes, sources, mask_ptr, mask_ptr, finished_ptr, zero_finished)
    if rng is not None:
        core.set_rng(*rng)
    param_values = {s.name: arrays.get(s.name, values[s.name]) for s in kernel.slots if s.kind == "param"}
    return Bound(plan, core, dtype, n or 0, arrays, param_values, rng)
