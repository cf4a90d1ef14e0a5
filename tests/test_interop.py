"""``eagle.interop.import_buffer`` (docs/runtime.md): any DLPack, ``__array_interface__`` or
``__cuda_array_interface__`` array, without a copy; refusals instead of silent copies."""

from __future__ import annotations

import numpy as np
import pytest

from eagle.interop import DeviceBuffer, import_buffer


class ArrayInterfaceOnly:
    """Exposes host memory through ``__array_interface__`` and nothing else."""

    def __init__(self, base: np.ndarray) -> None:
        self.base = base
        self.__array_interface__ = dict(base.__array_interface__)


class DLPackOnly:
    """Exposes host memory through DLPack and nothing else."""

    def __init__(self, base: np.ndarray) -> None:
        self.base = base

    def __dlpack__(self, **kwargs):
        return self.base.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.base.__dlpack_device__()


class FakeCuda:
    """A GPU array as CuPy, Numba or PyTorch describe one (nothing is dereferenced)."""

    def __init__(self, ptr: int, shape, typestr: str = "<f8", strides=None) -> None:
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.bool_, np.uint32])
def test_numpy_array_is_the_same_memory(dtype):
    a = np.zeros((3, 5), dtype)
    b = import_buffer(a)
    assert isinstance(b, np.ndarray) and np.shares_memory(a, b)
    assert b.shape == a.shape and b.dtype == a.dtype
    b[1, 2] = 1
    assert a[1, 2] == 1


def test_array_interface_only():
    base = np.arange(6.0)
    obj = ArrayInterfaceOnly(base)
    assert not hasattr(obj, "__dlpack__")
    b = import_buffer(obj)
    assert isinstance(b, np.ndarray) and np.shares_memory(b, base)
    assert b.__array_interface__["data"][0] == base.ctypes.data
    b[0] = 42.0
    assert base[0] == 42.0


def test_dlpack_only():
    base = np.linspace(0, 1, 7, dtype=np.float32)
    b = import_buffer(DLPackOnly(base))
    assert np.shares_memory(b, base) and b.dtype == np.float32 and b.shape == (7,)


def test_jax_array_through_dlpack_without_copy():
    """A JAX CPU array is viewed in place: same address. JAX arrays are immutable, so the view
    NumPy makes of it is read-only (bind it to a read plane, or copy it into an array of your own
    for a plane a kernel writes)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    a = jnp.linspace(0.0, 1.0, 16)
    if jax.default_backend() != "cpu":
        pytest.skip("a GPU JAX array is device memory: the host view is the CPU-only case")
    b = import_buffer(a)
    assert isinstance(b, np.ndarray)
    assert b.__array_interface__["data"][0] == a.unsafe_buffer_pointer()
    assert not b.flags.writeable
    np.testing.assert_array_equal(b, np.asarray(a))


def test_cuda_array_interface():
    obj = FakeCuda(0x7F0000001000, (3, 256))
    buf = import_buffer(obj)
    assert isinstance(buf, DeviceBuffer)
    assert buf.ptr == 0x7F0000001000 and buf.shape == (3, 256) and buf.dtype == np.float64
    assert buf.owner is obj  # kept alive through the description
    # explicit C-contiguous strides are fine too
    buf32 = import_buffer(FakeCuda(4096, (2, 8), "<f4", strides=(32, 4)))
    assert buf32.dtype == np.float32 and buf32.shape == (2, 8) and buf32.ptr == 4096


def test_cuda_array_interface_wins_over_others():
    """An object with both interfaces (CuPy-like) is device memory: never read on the host."""

    class Both(FakeCuda):
        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be called")

    buf = import_buffer(Both(8192, (4,)))
    assert isinstance(buf, DeviceBuffer) and buf.ptr == 8192


@pytest.mark.parametrize("make", [
    lambda: np.zeros(10)[::2],
    lambda: np.zeros((4, 3), order="F"),
    lambda: np.zeros((4, 3))[:, :2],
    lambda: np.broadcast_to(np.zeros(3), (4, 3)),
    lambda: ArrayInterfaceOnly(np.zeros(10)[::3]),
    lambda: DLPackOnly(np.zeros((5, 4)).T),
])
def test_non_contiguous_is_refused(make):
    with pytest.raises(ValueError, match="C-contiguous"):
        import_buffer(make())


def test_non_contiguous_device_array_is_refused():
    with pytest.raises(ValueError, match="C-contiguous"):
        import_buffer(FakeCuda(4096, (2, 8), "<f8", strides=(8, 16)))


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64, np.int8, np.int16, np.float16, np.uint8])
def test_wrong_dtype_is_refused(dtype):
    with pytest.raises(TypeError) as err:
        import_buffer(np.zeros(4, dtype))
    assert str(np.dtype(dtype)) in str(err.value)


def test_wrong_dtype_device_array_is_refused():
    with pytest.raises(TypeError, match="int8"):
        import_buffer(FakeCuda(4096, (4,), "|i1"))
    with pytest.raises(TypeError, match="complex128"):
        import_buffer(FakeCuda(4096, (4,), "<c16"))


@pytest.mark.parametrize("obj", [object(), [1.0, 2.0], 3.0, "abc", {"data": 1}])
def test_no_protocol_is_refused(obj):
    with pytest.raises(TypeError, match="neither DLPack"):
        import_buffer(obj)
