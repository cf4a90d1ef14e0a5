"""eagle on NVIDIA GPUs: the device probe, device arrays, binding checks and launches on streams.

Start at ``bind`` (what ``Plan.bind`` calls for a plan whose ``target`` is ``'cuda'``): it reads
every value as a device array (``view``: ``__cuda_array_interface__`` v2/v3, or DLPack with
``__dlpack_device__() == (2, ordinal)``), runs the host path's checks with the host path's
wording (``eagle.binding``) plus the GPU's own refusals (a host array, planes on two GPUs),
and returns a ``CudaBound``, which holds the arrays by reference.

``probe()`` says whether a CUDA device is usable here and, if not, why (no driver, cuInit's
error, CUDA_VISIBLE_DEVICES hiding every device, zero devices); ``eagle.plan.auto`` uses it.

Launches go on a stream: ``stream=`` (an integer ``CUstream``, or an object with ``.ptr``, as
CuPy's streams, or ``.cuda_stream``, as PyTorch's), else CuPy's current stream when CuPy is
imported, else the legacy default stream (0). ``launch`` never waits for the GPU and returns
None (finished counts go to a bound ``finished_count`` device array). A Table index error is
recorded on the device and raised by the next ``synchronize()``.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from raptor_core import _core

from eagle.binding import Bound, check_disjoint, int_param_number, param_number
from eagle.errors import ModeError
from eagle.rng import key_words

__all__ = ["CudaBound", "DeviceArray", "bind", "current_stream", "find_nvrtc", "probe", "stream_handle", "unusable_reason", "view"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_KDLCUDA = 2  # DLDeviceType kDLCUDA
_KDLCUDA_HOST = 3
_KDLCUDA_MANAGED = 13


def probe() -> dict[str, Any]:
    """``{usable, reason, driver_version, devices: [{ordinal, name, compute_capability, arch}]}``
    of this process's CUDA driver (``_core.cuda_probe``); never raises."""
    return dict(_core.cuda_probe())


def unusable_reason() -> str | None:
    """Why no CUDA device can be used here, or None when one can."""
    p = probe()
    return None if p["usable"] else str(p["reason"])


def find_nvrtc() -> str | None:
    """An NVRTC library for CUDA builds when the loader does not find one by itself: the
    first existing file of ``_core.nvrtc_candidates`` (the CUDA toolkit, then the
    nvidia-cuda-nvrtc wheels in this Python's site-packages, as CuPy looks for them). None when
    $RAPTOR_NVRTC is set, the loader already finds NVRTC, or there is none."""
    import os
    import site

    if os.environ.get("RAPTOR_NVRTC") or _core.nvrtc_version():
        return None
    dirs = list(site.getsitepackages()) + [site.getusersitepackages()] + [p for p in sys.path if p.endswith("site-packages")]
    for path in _core.nvrtc_candidates(list(dict.fromkeys(dirs))):
        if os.path.isfile(path):
            return path
    return None


# ---------------------------------------------------------------- device arrays


@dataclass(frozen=True)
class DeviceArray:
    """A view of GPU memory: no copy, no ownership (``owner`` keeps the memory alive)."""

    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...] | None  # bytes; None: C-contiguous
    readonly: bool
    device: int | None  # ordinal, None when unknown
    owner: Any

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def c_contiguous(self) -> bool:
        if self.strides is None:
            return True
        step = self.dtype.itemsize
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n > 1 and s != step:
                return False
            step *= n
        return True


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DL_CODES = {(0, 32): "int32", (0, 64): "int64", (1, 8): "uint8", (1, 32): "uint32", (2, 32): "float32", (2, 64): "float64", (6, 8): "bool"}

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_device(value: Any) -> tuple[int, int] | None:
    fn = getattr(value, "__dlpack_device__", None)
    if fn is None:
        return None
    kind, ordinal = fn()
    return int(kind), int(ordinal)


def _from_dlpack(value: Any, ordinal: int, stream: int | None) -> DeviceArray:
    """Reads a DLPack capsule's tensor (DLManagedTensor: the DLTensor comes first) without
    consuming it: the capsule is kept as the owner, so the producer's memory stays alive."""
    # DLPack names the legacy default stream 1 (0 is not allowed for CUDA).
    dl_stream = None if stream is None else (1 if stream == 0 else stream)
    try:
        capsule = value.__dlpack__(stream=dl_stream) if dl_stream is not None else value.__dlpack__()
    except TypeError:
        capsule = value.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    code = _DL_CODES.get((t.dtype.code, t.dtype.bits))
    if code is None or t.dtype.lanes != 1:
        raise TypeError(f"DLPack dtype code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes")
    dtype = np.dtype(code)
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    strides = tuple(int(t.strides[i]) * dtype.itemsize for i in range(t.ndim)) if t.strides else None
    return DeviceArray(int(t.data or 0) + int(t.byte_offset), shape, dtype, strides, False, ordinal, (value, capsule))


def view(value: Any, stream: int | None = None) -> DeviceArray | None:
    """The device view of ``value``, or None when it is not GPU memory. With ``stream`` (the
    consumer's stream) a DLPack producer is read through DLPack even when it also has the CUDA
    array interface, so that it orders its pending work before that stream (JAX's results)."""
    dl = _dlpack_device(value)
    if stream is not None and dl is not None and dl[0] in (_KDLCUDA, _KDLCUDA_MANAGED) and hasattr(value, "__dlpack__"):
        return _from_dlpack(value, dl[1], stream)
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None:
        dtype = np.dtype(cai["typestr"])
        shape = tuple(int(n) for n in cai["shape"])
        strides = tuple(int(s) for s in cai["strides"]) if cai.get("strides") else None
        ptr, readonly = cai["data"]
        ordinal = dl[1] if dl is not None and dl[0] == _KDLCUDA else None
        if ordinal is None and ptr:
            found = int(_core.cuda_pointer_device(int(ptr)))
            ordinal = found if found >= 0 else None
        return DeviceArray(int(ptr), shape, dtype, strides, bool(readonly), ordinal, value)
    if dl is not None and dl[0] in (_KDLCUDA, _KDLCUDA_MANAGED) and hasattr(value, "__dlpack__"):
        return _from_dlpack(value, dl[1], stream)
    return None


def _is_host(value: Any) -> bool:
    if isinstance(value, np.ndarray) or hasattr(value, "__array_interface__"):
        return True
    dl = _dlpack_device(value)
    return dl is not None and dl[0] in (1, _KDLCUDA_HOST)


def _device_array(value: Any, who: str, name: str) -> DeviceArray:
    arr = view(value)
    if arr is not None:
        if arr.dtype.byteorder == ">":
            raise ModeError(f"{who}: '{name}' is big-endian ({arr.dtype.str}); kernels read native byte order")
        return arr
    if _is_host(value):
        raise ModeError(f"{who}: '{name}' is a host (NumPy) array; this plan runs on the GPU (target 'cuda'): pass cupy.asarray({name})")
    raise TypeError(f"{who}: '{name}' must be a GPU array (__cuda_array_interface__ or DLPack on a CUDA device), got {type(value).__name__}")


# ---------------------------------------------------------------- streams


def stream_handle(stream: Any) -> int:
    """The ``CUstream`` of ``stream``: an integer, CuPy's ``.ptr``, PyTorch's ``.cuda_stream``."""
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        return int(stream)
    for attr in ("ptr", "cuda_stream"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"eagle.cuda: a stream is an integer CUstream or has .ptr (CuPy) or .cuda_stream (PyTorch), got {type(stream).__name__}")


def current_stream() -> int:
    """CuPy's current stream when CuPy is imported, else the legacy default stream (0)."""
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        return int(cupy.cuda.get_current_stream().ptr)
    return 0


# ---------------------------------------------------------------- binding


@dataclass
class Layout:
    """What ``_core.CudaBound.make`` takes, after every check (device addresses)."""

    n: int
    dtype: np.dtype
    device: int
    ins: list[int]
    outs: list[int]
    params: list[float]
    param_ptrs: list[int]
    sizes: list[int]
    mask: int
    finished: int
    arrays: dict[str, DeviceArray]
    param_values: dict[str, Any]
    rng: tuple[int, int] | None = None  # a Random parameter's key words


def _param(value: Any, dtype: np.dtype, who: str, name: str) -> tuple[float, DeviceArray | None]:
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
        return param_number(value, dtype, who, name), None  # the host's rule for numbers
    arr = view(value)
    if arr is None:
        if _is_host(value):
            raise ModeError(
                f"{who}: Param '{name}' is a host (NumPy) array; on the GPU a Param is a number (fixed at bind) "
                f"or a 1-element device array (read at each launch): pass float({name}) or cupy.asarray({name})"
            )
        raise TypeError(f"{who}: Param '{name}' must be a number or a 1-element device array, got {type(value).__name__}")
    if int(np.prod(arr.shape, dtype=np.int64)) != 1:
        raise ValueError(f"{who}: Param '{name}' is one value for all samples; got an array of shape {arr.shape}")
    if arr.dtype != dtype:
        raise ModeError(
            f"{who}: Param '{name}' is {arr.dtype}; on the GPU a Param array has the launch's dtype ({dtype}): "
            f"bind a {dtype} device array (such as {name}.astype('{dtype}'), then write to that one) or a number"
        )
    if arr.ptr % arr.dtype.itemsize:
        raise ValueError(f"{who}: Param '{name}' is not aligned to its {arr.dtype.itemsize}-byte elements")
    return 0.0, arr


def layout(kernel: Any, values: Mapping[str, Any]) -> Layout:
    """Every check of a CUDA binding (module docstring); raises naming the kernel and plane."""
    who = f"eagle: kernel '{kernel.name}'"
    names = {s.name for s in kernel.slots}
    extra = [k for k in values if k not in names and k != "finished_count"]
    if extra:
        raise TypeError(f"{who}: {extra[0]!r} is not a parameter (parameters: {[s.name for s in kernel.slots]})")
    missing = [s.name for s in kernel.slots if s.name not in values]
    if missing:
        raise TypeError(f"{who}: missing value(s) for {missing}")

    arrays: dict[str, DeviceArray] = {}
    rng: tuple[int, int] | None = None
    for s in kernel.slots:
        if s.kind == "random":  # a seed or a key, read on the host (eagle.rng)
            rng = key_words(values[s.name], who, s.name)
        elif s.kind != "param":
            arrays[s.name] = _device_array(values[s.name], who, s.name)
    if "finished_count" in values:
        arrays["finished_count"] = _device_array(values["finished_count"], who, "finished_count")

    on = [(name, a.device) for name, a in arrays.items() if a.device is not None]
    for name, dev in on[1:]:
        if dev != on[0][1]:
            raise ValueError(f"{who}: '{name}' is on GPU {dev} but '{on[0][0]}' is on GPU {on[0][1]}; every array of a launch must be on one GPU")
    device = on[0][1] if on else 0

    dtype, first = np.dtype(np.float64), ""
    for s in kernel.slots:
        if s.kind in ("plane", "mutable", "table", "param_sum", "table_sum") and s.is_float:
            dt = arrays[s.name].dtype
            if dt not in _FLOATS:
                raise ModeError(f"{who}: plane '{s.name}' is {dt}, which is not supported; a kernel runs float32 or float64 planes")
            dtype, first = dt, s.name
            break

    n: int | None = None
    for s in kernel.slots:
        if s.kind in ("plane", "mutable", "terminated") and arrays[s.name].shape:
            n = int(arrays[s.name].shape[-1])
            break
    ns = len(kernel.slots)
    ins, outs, sizes = [0] * ns, [0] * ns, [0] * ns
    params, param_ptrs = [0.0] * ns, [0] * ns
    param_values: dict[str, Any] = {}
    seen_tables: set[int] = set()
    mask = 0
    spans: list[tuple[str, int, int, bool]] = []  # every array bound: check_disjoint
    iface = kernel.interface(dtype)
    for i, (s, si) in enumerate(zip(kernel.slots, iface.slots)):
        if s.kind == "random":  # the launch's key block is the binding's own (runtime/cuda_bound.hpp)
            continue
        if s.kind == "param":
            # An integer Param: a number here, or a device array of exactly its dtype.
            pdtype = dtype if s.is_float else np.dtype(s.dtype)
            if not s.is_float and isinstance(values[s.name], (bool, int, float, complex, np.generic)):
                params[i], src = int_param_number(values[s.name], s.dtype, who, s.name), None
            else:
                params[i], src = _param(values[s.name], pdtype, who, s.name)
            if src is not None:
                param_ptrs[i] = src.ptr
                arrays[s.name] = src
                spans.append((s.name, src.ptr, src.nbytes, False))
            param_values[s.name] = src if src is not None else params[i]
            continue
        arr = arrays[s.name]
        if arr.dtype.name != si.dtype:
            if s.kind != "terminated" and not s.is_float:
                raise ModeError(
                    f"{who}: plane '{s.name}' is declared {s.annotation()} and takes {si.dtype} arrays, got {arr.dtype}; "
                    f"pass {s.name}.astype('{si.dtype}') (integer and bool planes keep their declared dtype in every build)"
                )
            if s.kind == "terminated":
                raise ModeError(f"{who}: the Terminated mask '{s.name}' must be a bool array, got {arr.dtype}")
            if arr.dtype not in _FLOATS:
                raise ModeError(f"{who}: plane '{s.name}' is {arr.dtype}, which is not supported; a kernel runs float32 or float64 planes")
            raise ModeError(f"{who}: mixed floating dtypes in one launch (plane '{s.name}' is {arr.dtype}, the first plane '{first}' is {dtype}); bind every plane in one float dtype")
        if s.kind in ("table", "table_sum"):  # as eagle.binding sizes them
            m = int(arr.shape[0]) if arr.shape else -1
            if s.kind == "table":
                seen_tables.add(i)
                sizes[i] = m
            elif s.table_of in seen_tables:
                m = sizes[s.table_of]
            else:
                sizes[s.table_of] = m
            if s.kind == "table_sum":
                sizes[i] = m
        want = tuple(iface.expected_shape(i, n if n is not None else -1, sizes))
        if arr.shape != want:
            shown = want[:-1] + (None,) if si.sized_by_n and n is None else want
            what = {"table": "Table", "table_sum": "sum output", "param_sum": "sum output"}.get(s.kind, "plane")
            raise ValueError(f"{who}: {what} '{s.name}' must have shape {shown}" + (f" for n={n}" if s.kind in ("plane", "mutable", "terminated") else "") + f", got {arr.shape}")
        if not arr.c_contiguous:
            raise ValueError(f"{who}: '{s.name}' is not C-contiguous; pass cupy.ascontiguousarray(...) and bind that array (a copy would hide later writes)")
        if arr.ptr % arr.dtype.itemsize:
            raise ValueError(f"{who}: '{s.name}' is not aligned to its {arr.dtype.itemsize}-byte elements")
        written = s.kind in ("mutable", "terminated", "param_sum", "table_sum")
        if written and arr.readonly:
            raise ValueError(f"{who}: '{s.name}' is written by the kernel but the array is read-only")
        spans.append((s.name, arr.ptr, arr.nbytes, written))
        if s.kind == "terminated":
            mask = arr.ptr
        elif s.kind in ("plane", "table"):
            ins[i] = arr.ptr
        elif s.kind == "mutable" or (s.kind == "table_sum" and s.inout):  # (a scatter target: in place)
            outs[i] = arr.ptr
            if s.inout:
                ins[i] = arr.ptr
        else:
            outs[i] = arr.ptr

    finished = 0
    if "finished_count" in arrays:
        fc = arrays["finished_count"]
        if fc.dtype != np.uint32 or fc.shape != (1,):
            raise ValueError(f"{who}: finished_count must be a uint32 array of shape (1,), got {fc.dtype} {fc.shape}")
        if fc.readonly:
            raise ValueError(f"{who}: finished_count is read-only")
        finished = fc.ptr
        spans.append(("finished_count", fc.ptr, fc.nbytes, True))
    check_disjoint(who, spans)
    if kernel.guard.active_set and not mask:
        raise ValueError(f"{who}: Guard(active_set=True) needs a Terminated parameter to know which samples are live")
    return Layout(n or 0, dtype, device, ins, outs, params, param_ptrs, sizes, mask, finished, arrays, param_values, rng)


class CudaBound(Bound):
    """A kernel bound to device arrays by reference, launched on a stream (module docstring).
    On the GPU an active set is the mask itself: every sample's thread runs and a finished one
    keeps its values, so ``reset_active`` has nothing to rebuild."""

    def __init__(self, plan: Any, core: Any, lay: Layout, values: Mapping[str, Any]) -> None:
        # ``arrays`` are the user's objects (what graphs, records and reverse sweeps see as the
        # planes); ``views`` keep what each was read through alive (a DLPack capsule).
        super().__init__(plan, core, lay.dtype, lay.n, {k: values[k] for k in lay.arrays}, lay.param_values, lay.rng)
        self.device = lay.device
        self.views = lay.arrays  # name -> DeviceArray (pointers, shapes, owners)

    def launch(self, stream: Any = None) -> None:  # type: ignore[override]
        """Enqueues one launch on ``stream`` (default: ``current_stream()``); never waits."""
        self._core.launch(current_stream() if stream is None else stream_handle(stream))

    def synchronize(self, stream: Any = None) -> None:
        """Waits for the stream; raises RuntimeError for a Table index error of any launch
        since the last synchronize (naming the kernel, table, index and sample)."""
        self._core.synchronize(current_stream() if stream is None else stream_handle(stream))

    def set_rng(self, k0: int, k1: int, next_launch: int, stream: Any = None) -> None:
        """A Random kernel's key words and the number of its next launch (launch n draws with
        fold_in(key, n)), set after the launches already enqueued on ``stream``."""
        self._core.set_rng(k0, k1, next_launch, current_stream() if stream is None else stream_handle(stream))

    def launch_count(self, stream: Any = None) -> int:
        """Launches so far of a Random kernel (the next is launch n), read from the device
        after the work enqueued on ``stream`` (default: ``current_stream()``): graphs and
        device loops count there. 0 for a kernel without a Random parameter."""
        return int(self._core.launches(current_stream() if stream is None else stream_handle(stream)))

    @property
    def launches(self) -> int:
        """``launch_count()`` on the current stream."""
        return self.launch_count()

    def reset_active(self) -> None:
        """Nothing to rebuild on the GPU (see the class docstring)."""

    def params(self) -> dict[str, float]:
        """The Params bound as numbers (device-array Params are read on the device)."""
        return {k: v for k, v in self.param_values.items() if isinstance(v, float)}

    @property
    def live(self) -> int:
        raise NotImplementedError("eagle: on the GPU the live count is not kept on the host; count the mask with cupy (terminated.size - terminated.sum())")

    def __repr__(self) -> str:
        return f"<eagle.CudaBound {self.name} n={self.n} {self.dtype.name} gpu={self.device}>"


def bind(plan: Any, values: Mapping[str, Any], zero_finished: bool = False) -> CudaBound:
    """Checks ``values`` against ``plan.kernel`` (a CUDA plan) and binds them by reference."""
    lay = layout(plan.kernel, values)
    entry = plan.entry(lay.dtype)
    core = _core.CudaBound.make(entry, lay.n, lay.ins, lay.outs, lay.params, lay.param_ptrs, lay.sizes, lay.mask, lay.mask, lay.finished, zero_finished, lay.device)
    if lay.rng is not None:
        core.set_rng(lay.rng[0], lay.rng[1], 0, 0)  # nothing is enqueued yet
    return CudaBound(plan, core, lay, values)
