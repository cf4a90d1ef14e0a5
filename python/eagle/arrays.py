"""The array operations of records and reverse sweeps, once for the host and the GPU.

``eagle.record`` and ``eagle.diff`` never call NumPy or CuPy directly: they call an
``ArrayModule``, so ONE code path serves both targets. ``for_target('host')`` is
``HostArrays`` (NumPy); ``for_target('cuda')`` is ``DeviceArrays`` over CuPy, imported
lazily (``DeviceArrays(cp)`` takes any module with CuPy's few functions used here, which is
how tests run the device code path on the host).

Start at ``ArrayModule``. On the device every operation is enqueued on the stream made current
by ``on_stream`` (CuPy's ``ExternalStream``): copies are device-to-device, nothing waits for
the GPU except ``to_float`` (the reverse sweep's Param gradients, read once at the end), and
``same`` never compares (it would have to wait), so a record copies a device Table at every
launch.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["ArrayModule", "DeviceArrays", "HostArrays", "for_target"]


class ArrayModule:
    """What records and reverse sweeps do with arrays (module docstring). Arrays made here are
    owned by the caller; ``view`` arrays are the user's memory (read only, never written)."""

    device = False

    def on_stream(self, stream: Any) -> contextlib.AbstractContextManager:
        """A context in which every operation is enqueued on ``stream`` (host: nothing)."""
        return contextlib.nullcontext()

    def view(self, plane: Any) -> Any:
        """The module's array over a plane's memory, without a copy."""
        raise NotImplementedError

    def copy(self, plane: Any) -> Any:
        """An owned copy of a plane's contents."""
        raise NotImplementedError

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        raise NotImplementedError

    def zeros_like(self, a: Any, dtype: Any = None) -> Any:
        raise NotImplementedError

    def assign(self, dst: Any, src: Any) -> None:
        """dst[...] = src (an array of the module, or a number), in place."""
        raise NotImplementedError

    def add_into(self, dst: Any, src: Any) -> None:
        """dst += src, in place."""
        raise NotImplementedError

    def zero_live(self, dst: Any, finished: Any) -> None:
        """dst[..., i] = 0 for every sample i not ``finished`` (a bool per sample: dst's last
        axis), in place."""
        raise NotImplementedError

    def same(self, a: Any, b: Any) -> bool:
        """True when ``a`` and ``b`` hold equal values and that is known without waiting."""
        raise NotImplementedError

    def value(self, value: Any, shape: tuple[int, ...], dtype: Any, who: str) -> Any:
        """A user's value (a seed, a VJP's result: any array with ``__array_interface__``,
        ``__cuda_array_interface__`` or DLPack, or a number) as an array of this module with
        ``shape`` and ``dtype`` (a copy where the dtype differs); ValueError naming ``who`` when
        its size is not that of the shape."""
        raise NotImplementedError

    def to_float(self, a: Any) -> float:
        """a[0] as a Python float (on the device: waits for the stream)."""
        raise NotImplementedError

    def keep_until_done(self, objs: Any) -> None:
        """Keeps ``objs`` (a framework's arrays that enqueued work reads) alive until the work
        enqueued so far on the current stream has run (host: that is already so)."""


def _reshaped(arr: Any, shape: tuple[int, ...], who: str) -> Any:
    if tuple(arr.shape) == tuple(shape):
        return arr
    if int(np.prod(arr.shape, dtype=np.int64)) != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"{who} has shape {tuple(arr.shape)}; the plane has shape {tuple(shape)}")
    return arr.reshape(shape)


class HostArrays(ArrayModule):
    """NumPy. A device array given as a user's value is copied to the host: with its
    ``.get()`` (CuPy), else with ``numpy.asarray`` (a JAX array on a GPU, which is what
    ``jax.vjp`` returns where JAX's default device is a GPU)."""

    device = False

    def view(self, plane: Any) -> np.ndarray:
        return np.asarray(plane)

    def copy(self, plane: Any) -> np.ndarray:
        return np.array(plane, copy=True)

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        return np.zeros(shape, dtype)

    def zeros_like(self, a: Any, dtype: Any = None) -> np.ndarray:
        return np.zeros_like(a, dtype=dtype)

    def assign(self, dst: np.ndarray, src: Any) -> None:
        np.copyto(dst, src, casting="same_kind")

    def add_into(self, dst: np.ndarray, src: Any) -> None:
        np.add(dst, src, out=dst, casting="same_kind")

    def zero_live(self, dst: np.ndarray, finished: Any) -> None:
        dst[..., ~np.asarray(finished, bool)] = 0

    def same(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(a, b))

    def value(self, value: Any, shape: tuple[int, ...], dtype: Any, who: str) -> np.ndarray:
        if hasattr(value, "__cuda_array_interface__") and not hasattr(value, "__array_interface__"):
            if hasattr(value, "get"):  # CuPy, whose __array__ refuses
                value = value.get()
            elif not hasattr(value, "__array__"):
                raise TypeError(
                    f"{who} is a GPU array ({type(value).__name__}) with no way to copy it to the host (.get() or __array__); "
                    "this graph runs on the host: return a NumPy array"
                )
        arr = np.asarray(value)
        return _reshaped(arr, shape, who).astype(dtype, copy=False)

    def to_float(self, a: Any) -> float:
        return float(np.asarray(a).reshape(-1)[0])


class DeviceArrays(ArrayModule):
    """CuPy (``cp``; default: ``import cupy`` at first use). Planes are read through
    ``__cuda_array_interface__`` (``cp.asarray``, no copy) or DLPack (``cp.from_dlpack``)."""

    device = True

    def __init__(self, cp: Any = None, event: Callable[[], Any] | None = None) -> None:
        self._cp = cp
        self._event = event  # makes an event with record(stream) and done(); default _core.CudaEvent
        self._stream: int | None = None
        self._pending: list[tuple[Any, Any]] = []  # (event, the objects it keeps alive)

    @property
    def cp(self) -> Any:
        if self._cp is None:
            try:
                import cupy
            except ImportError as err:
                from eagle.errors import ModeError

                raise ModeError(
                    f"eagle: records and reverse sweeps of GPU graphs keep their arrays in CuPy, which cannot be imported ({err}); "
                    "install it with the extra that matches your CUDA: pip install 'raptor-eagle[cuda13]' (or [cuda12])"
                ) from None
            self._cp = cupy
        return self._cp

    @contextlib.contextmanager
    def on_stream(self, stream: Any) -> Iterator[None]:
        if stream is None:
            yield
            return
        outer, self._stream = self._stream, int(stream)
        try:
            with self.cp.cuda.ExternalStream(int(stream)):
                yield
        finally:
            self._stream = outer

    def view(self, plane: Any) -> Any:
        cp = self.cp
        if isinstance(plane, cp.ndarray):
            return plane
        if hasattr(plane, "__cuda_array_interface__"):
            return cp.asarray(plane)
        if hasattr(plane, "__dlpack__"):
            return cp.from_dlpack(plane)
        raise TypeError(f"eagle: a {type(plane).__name__} is not a GPU array (__cuda_array_interface__ or DLPack)")

    def copy(self, plane: Any) -> Any:
        return self.view(plane).copy()

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.cp.zeros(shape, dtype)

    def zeros_like(self, a: Any, dtype: Any = None) -> Any:
        return self.cp.zeros_like(a, dtype=dtype)

    def assign(self, dst: Any, src: Any) -> None:
        if isinstance(src, (int, float)):
            dst.fill(src)
        else:
            dst[...] = src

    def add_into(self, dst: Any, src: Any) -> None:
        dst += src

    def zero_live(self, dst: Any, finished: Any) -> None:
        dst[..., ~finished.astype(bool)] = 0

    def same(self, a: Any, b: Any) -> bool:
        return False  # comparing would wait for the GPU; the record copies instead

    def value(self, value: Any, shape: tuple[int, ...], dtype: Any, who: str) -> Any:
        cp = self.cp
        if isinstance(value, cp.ndarray):
            arr = value
        elif hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__") and int(value.__dlpack_device__()[0]) in (2, 13):
            arr = cp.from_dlpack(value)  # DLPack first: the producer orders its work before our stream (JAX)
        elif hasattr(value, "__cuda_array_interface__"):
            arr = cp.asarray(value)
        else:  # host values (NumPy, numbers) are copied to the device
            arr = cp.asarray(np.asarray(value))
        return _reshaped(arr, shape, who).astype(dtype, copy=False)

    def to_float(self, a: Any) -> float:
        return float(a.reshape(-1)[0:1].get()[0])

    def keep_until_done(self, objs: Any) -> None:
        self._pending = [(e, keep) for e, keep in self._pending if not e.done()]
        if self._event is None:
            from raptor_core import _core

            self._event = _core.CudaEvent
        event = self._event()
        event.record(self._stream if self._stream is not None else 0)
        self._pending.append((event, objs))


def for_target(target: str) -> ArrayModule:
    """The array module of a graph's target ('host' or 'cuda')."""
    return DeviceArrays() if target == "cuda" else HostArrays()
