"""Taking other libraries' arrays without a copy (docs/runtime.md, "Interop").

``import_buffer(obj)`` accepts anything that exposes DLPack (``__dlpack__``), the NumPy
``__array_interface__`` or the ``__cuda_array_interface__``, and returns a view of the same
memory: a NumPy array for host memory, a ``DeviceBuffer`` description for GPU memory (from
the CUDA array interface, or DLPack on a CUDA device, e.g. a JAX or PyTorch GPU array). It
never copies: an array that is not C-contiguous, or whose dtype a kernel cannot use, is
refused with an error instead of a silent copy that would hide later writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DeviceBuffer", "import_buffer"]

# What a plane, mask, table or counter can be.
_USABLE = {np.dtype(t) for t in (np.float32, np.float64, np.bool_, np.uint32, np.int64)}


@dataclass(frozen=True)
class DeviceBuffer:
    """GPU memory described by ``__cuda_array_interface__`` or a CUDA DLPack tensor (no copy,
    no ownership: ``owner`` keeps the exporting object, and for DLPack its capsule, alive)."""

    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    owner: Any


def _check(shape: tuple[int, ...], strides: tuple[int, ...] | None, dtype: np.dtype, what: str) -> None:
    if dtype.byteorder == ">":
        raise TypeError(f"eagle.interop.import_buffer: {what} is big-endian ({dtype.str}); kernels read native byte order")
    if dtype not in _USABLE:
        raise TypeError(f"eagle.interop.import_buffer: {what} has dtype {dtype}; planes are float32 or float64 (masks bool, counters uint32)")
    if strides is not None:
        expect = []
        step = dtype.itemsize
        for n in reversed(shape):
            expect.append(step)
            step *= n
        expect = tuple(reversed(expect))
        if any(s != e for s, e, n in zip(strides, expect, shape) if n > 1):
            raise ValueError(
                f"eagle.interop.import_buffer: {what} is not C-contiguous (strides {strides}, shape {shape}); "
                "a copy would hide later writes, so make it contiguous yourself and import that array"
            )


def import_buffer(obj: Any) -> np.ndarray | DeviceBuffer:
    """A zero-copy view of ``obj``'s memory (see the module docstring)."""
    what = type(obj).__name__
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        dtype = np.dtype(cai["typestr"])
        shape = tuple(cai["shape"])
        _check(shape, tuple(cai["strides"]) if cai.get("strides") else None, dtype, what)
        return DeviceBuffer(int(cai["data"][0]), shape, dtype, obj)
    dl = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else None
    if dl is not None and int(dl[0]) in (2, 13) and hasattr(obj, "__dlpack__"):  # kDLCUDA, managed
        from eagle import cuda

        try:
            v = cuda.view(obj)
        except (TypeError, ValueError, BufferError) as err:
            raise TypeError(f"eagle.interop.import_buffer: {what} is a CUDA DLPack tensor eagle cannot read ({err})") from None
        _check(v.shape, v.strides, v.dtype, what)
        return DeviceBuffer(v.ptr, v.shape, v.dtype, v.owner)
    if isinstance(obj, np.ndarray):
        arr = obj
    elif hasattr(obj, "__array_interface__"):
        iface = obj.__array_interface__
        arr = np.asarray(obj)
        if arr.__array_interface__["data"][0] != iface["data"][0]:
            raise ValueError(f"eagle.interop.import_buffer: reading {what} would copy it")
    elif hasattr(obj, "__dlpack__"):
        try:
            arr = np.from_dlpack(obj)
        except (BufferError, RuntimeError, TypeError) as err:
            raise ValueError(f"eagle.interop.import_buffer: {what} cannot be viewed on the host without a copy ({err})") from None
    else:
        raise TypeError(f"eagle.interop.import_buffer: {what} exposes neither DLPack, __array_interface__ nor __cuda_array_interface__")
    _check(arr.shape, arr.strides, arr.dtype, what)
    return arr
