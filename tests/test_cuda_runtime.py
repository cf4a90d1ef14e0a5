"""eagle's CUDA target, the parts that need no GPU: the device probe and plan.auto's choice of
target, CUDA plans built by NVRTC, every check and refusal of binding device arrays (fake
``__cuda_array_interface__`` and DLPack objects over integer pointers), and the segments a
graph is cut into. What needs a GPU is in tests/test_gpu.py."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import eagle
import eagle.cuda
import eagle.interop
import eagle.plan
import hawk
from eagle.graph import segments
from hawk import Mutable, Param, Random, Scalar, Table, Terminated, Vector
from raptor_core import _core


@hawk.kernel
def axpy(a: Param, x: Scalar, y: Mutable[Scalar]):
    y = a * x + y


@hawk.kernel(steps=2)
def stepper(dt: Param, w: Table[Scalar], v: Vector[3], terminated: Terminated, x: Mutable[Scalar]):
    x = x + dt * w.at(0) + v[0]
    terminated = x > 10.0


class FakeDevice:
    """GPU memory as CuPy shows it: ``__cuda_array_interface__`` over an integer pointer (never
    dereferenced here), optionally ``__dlpack_device__``."""

    _next = 1 << 20

    def __init__(self, shape, dtype=np.float64, ptr=None, strides=None, readonly=False, version=3, device=None):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        if ptr is None:
            ptr = FakeDevice._next
            FakeDevice._next += 1 << 16
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": self.dtype.str, "data": (ptr, readonly), "strides": strides, "version": version}
        if device is not None:
            self.__dlpack_device__ = lambda: (2, device)

    @property
    def ptr(self) -> int:
        return self.__cuda_array_interface__["data"][0]


class FakeDLPack:
    """A CUDA tensor exposed only through DLPack: a real capsule holding a DLTensor."""

    def __init__(self, shape, dtype, ptr, device):
        self.shape = tuple(shape)
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        code, bits = {"float64": (2, 64), "float32": (2, 32), "bool": (6, 8), "uint32": (1, 32), "int32": (0, 32)}[np.dtype(dtype).name]
        self._t = eagle.cuda._DLTensor(ptr, eagle.cuda._DLDevice(2, device), len(shape), eagle.cuda._DLDataType(code, bits, 1), self._shape, None, 0)
        self._device = device
        self.streams = []  # the consumer streams __dlpack__ was called with

    def __dlpack_device__(self):
        return (2, self._device)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._t), b"dltensor", None)


def usable_probe(arch="sm_90"):
    return {"usable": True, "reason": "", "driver_version": 13000, "devices": [{"ordinal": 0, "name": "Fake H200", "compute_capability": (9, 0), "arch": arch}]}


@pytest.fixture
def gpu_probe(monkeypatch):
    monkeypatch.setattr(eagle.cuda, "probe", usable_probe)


@pytest.fixture
def cuda_plans(gpu_probe, tmp_path):
    """Plans for a fake sm_90 device: NVRTC builds here without a GPU."""
    if not _core.nvrtc_version():
        pytest.skip("NVRTC not found")
    return eagle.plan.auto([axpy, stepper], targets=("cuda",), cache_dir=tmp_path)


# ---------------------------------------------------------------- probe and targets


def test_real_probe_says_no_driver_here():
    p = eagle.cuda.probe()
    if p["usable"]:
        pytest.skip("a CUDA device is usable here")
    assert "no CUDA driver" in p["reason"] and "libcuda.so.1" in p["reason"]
    assert p["devices"] == []
    assert eagle.cuda.unusable_reason() == p["reason"]


def test_cuda_alone_raises_the_probes_reason(tmp_path):
    if eagle.cuda.probe()["usable"]:
        pytest.skip("a CUDA device is usable here")
    with pytest.raises(eagle.ModeError) as err:
        eagle.plan.auto([axpy], targets=("cuda",), cache_dir=tmp_path)
    assert eagle.cuda.probe()["reason"] in str(err.value)
    assert "not available yet" not in str(err.value)


@pytest.mark.parametrize(
    "reason",
    [
        "no CUDA driver: libcuda.so.1 could not be loaded (libcuda.so.1: cannot open shared object file)",
        "cuInit failed: operation not supported (CUresult 801)",
        "CUDA_VISIBLE_DEVICES='' hides every CUDA device; unset it or name a device that exists",
        "the CUDA driver sees no device",
    ],
)
def test_each_reason_reaches_the_user(monkeypatch, tmp_path, reason):
    monkeypatch.setattr(eagle.cuda, "probe", lambda: {"usable": False, "reason": reason, "driver_version": 0, "devices": []})
    with pytest.raises(eagle.ModeError, match="no usable target") as err:
        eagle.plan.auto([axpy], targets=("cuda",), cache_dir=tmp_path)
    assert reason in str(err.value)


def test_cuda_then_host_falls_back_to_the_host(monkeypatch, tmp_path):
    monkeypatch.setattr(eagle.cuda, "probe", lambda: {"usable": False, "reason": "the CUDA driver sees no device", "driver_version": 0, "devices": []})
    (plan,) = eagle.plan.auto([axpy], targets=("cuda", "host"), cache_dir=tmp_path)
    assert plan.target == "host"
    x, y = np.arange(4.0), np.ones(4)
    plan.bind(a=2.0, x=x, y=y).launch()
    np.testing.assert_array_equal(y, 2.0 * np.arange(4.0) + 1.0)


def test_unknown_target_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        eagle.plan.auto([axpy], targets=("tpu",), cache_dir=tmp_path)


# ---------------------------------------------------------------- CUDA plans


def test_cuda_plans_are_built_with_nvrtc(cuda_plans):
    a, s = cuda_plans
    assert a.target == s.target == "cuda"
    # Built for the device's arch as a cubin (this NVRTC knows sm_90), or PTX with the reason.
    assert (a.info["arch"], a.info["format"]) == ("sm_90", "cubin") or (a.info["format"] == "ptx" and a.info["fallback"])
    assert a.info["nvrtc_version"] == _core.nvrtc_version()
    assert a.info["device_arch"] == "sm_90"
    # The CUDA build is registered under the same digest as the kernel's host build.
    (host,) = eagle.plan.auto([axpy], cache_dir=a.cache_dir)
    assert a.digest("float32") == host.digest("float32") and a.digest() == host.digest()
    assert a.entry(np.float32).dtype_size == 4


def test_nvrtc_is_looked_for_in_the_nvidia_wheels(monkeypatch, tmp_path):
    lib = tmp_path / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnvrtc.so.13").write_bytes(b"")
    assert any(c == str(lib / "libnvrtc.so.13") for c in _core.nvrtc_candidates([str(tmp_path)]))
    monkeypatch.delenv("RAPTOR_NVRTC", raising=False)
    monkeypatch.setattr(_core, "nvrtc_version", lambda: "")  # as if the loader found none
    monkeypatch.setattr(_core, "nvrtc_candidates", lambda dirs: [str(tmp_path / "missing.so"), str(lib / "libnvrtc.so.13")])
    assert eagle.cuda.find_nvrtc() == str(lib / "libnvrtc.so.13")
    monkeypatch.setenv("RAPTOR_NVRTC", "/somewhere/libnvrtc.so")
    assert eagle.cuda.find_nvrtc() is None


# ---------------------------------------------------------------- binding device arrays


def bind_error(plan, **values):
    """Binds and returns the exception: a check's refusal, or (every check passed) the
    RuntimeError of a machine without a CUDA driver."""
    with pytest.raises(Exception) as err:
        plan.bind(**values)
    return err.value


def test_a_good_binding_passes_every_check(cuda_plans):
    a, _ = cuda_plans
    err = bind_error(a, a=2.0, x=FakeDevice((8,)), y=FakeDevice((8,)))
    assert isinstance(err, RuntimeError) and "no CUDA driver" in str(err)


def test_layout_holds_device_pointers_by_slot(cuda_plans):
    _, s = cuda_plans
    w, v, m, x = FakeDevice((5,)), FakeDevice((3, 16)), FakeDevice((16,), np.bool_), FakeDevice((16,))
    fc = FakeDevice((1,), np.uint32)
    dt = FakeDevice((1,))
    lay = eagle.cuda.layout(s.kernel, dict(dt=dt, w=w, v=v, terminated=m, x=x, finished_count=fc))
    names = [sl.name for sl in s.kernel.slots]
    i = {n: names.index(n) for n in names}
    assert lay.n == 16 and lay.dtype == np.float64
    assert lay.param_ptrs[i["dt"]] == dt.ptr and lay.ins[i["w"]] == w.ptr and lay.sizes[i["w"]] == 5
    assert lay.ins[i["v"]] == v.ptr and lay.mask == m.ptr and lay.finished == fc.ptr
    assert lay.outs[i["x"]] == x.ptr and lay.ins[i["x"]] == x.ptr  # in-out Mutable
    lay2 = eagle.cuda.layout(s.kernel, dict(dt=0.5, w=w, v=v, terminated=m, x=x))
    assert lay2.params[i["dt"]] == 0.5 and lay2.param_ptrs[i["dt"]] == 0 and lay2.finished == 0


@hawk.kernel
def jitter(s: Param, rng: Random, x: Mutable[Scalar]):
    x = x + s * rng.normal()


def test_a_random_kernel_binds_on_the_gpu_with_a_seed_or_a_key(gpu_probe, tmp_path):
    """A CUDA plan of a Random kernel takes the key as the host's bind does (an int seed, a
    typed key, raw words); the key block is the binding's own, so no device pointer is passed
    for the slot. What happens on a GPU (the key step before each launch) is in test_gpu.py
    and, emulated, in the C++ test CudaEmulated.RandomKeyStepGivesLaunchNTheHostsKey."""
    if not _core.nvrtc_version():
        pytest.skip("NVRTC not found")
    import jax

    (plan,) = eagle.plan.auto([jitter], targets=("cuda",), cache_dir=tmp_path)
    rs = [sl.name for sl in jitter.slots].index("rng")
    x = FakeDevice((64,))
    want = tuple(int(w) for w in np.asarray(jax.random.key_data(jax.random.key(5))))
    for seed in (5, jax.random.key(5), np.asarray(want, np.uint32)):
        lay = eagle.cuda.layout(plan.kernel, dict(s=0.5, rng=seed, x=x))
        assert lay.rng == want and lay.ins[rs] == 0 and lay.outs[rs] == 0 and "rng" not in lay.arrays
    # Every check passed: binding stops only at the missing driver.
    err = bind_error(plan, s=0.5, rng=5, x=x)
    assert isinstance(err, RuntimeError) and "no CUDA driver" in str(err)
    with pytest.raises(TypeError, match="Random 'rng' takes an int seed or a key, got a bool"):
        eagle.cuda.layout(plan.kernel, dict(s=0.5, rng=True, x=x))
    with pytest.raises(TypeError, match="missing value"):
        eagle.cuda.layout(plan.kernel, dict(s=0.5, x=x))


def test_cai_version_2_and_explicit_c_strides_are_accepted(cuda_plans):
    a, _ = cuda_plans
    err = bind_error(a, a=1.0, x=FakeDevice((8,), version=2), y=FakeDevice((8,), strides=(8,)))
    assert isinstance(err, RuntimeError) and "no CUDA driver" in str(err)


def test_device_planes_next_to_each_other_bind(cuda_plans):
    """Only overlapping device memory is refused: y starting at x's last byte + 1 binds."""
    a, _ = cuda_plans
    err = bind_error(a, a=2.0, x=FakeDevice((8,), ptr=0xF00000), y=FakeDevice((8,), ptr=0xF00040))
    assert isinstance(err, RuntimeError) and "no CUDA driver" in str(err)


def test_dlpack_only_device_arrays_are_read_by_reference(cuda_plans):
    a, _ = cuda_plans
    x = FakeDLPack((8,), np.float64, 0x700000, 0)
    y = FakeDLPack((8,), np.float64, 0x800000, 0)
    lay = eagle.cuda.layout(a.kernel, dict(a=1.0, x=x, y=y))
    names = [s.name for s in a.kernel.slots]
    assert lay.ins[names.index("x")] == 0x700000 and lay.outs[names.index("y")] == 0x800000
    assert lay.device == 0 and lay.arrays["x"].shape == (8,)


@pytest.mark.parametrize(
    "values, error, text",
    [
        (dict(x=np.zeros(8), y=FakeDevice((8,))), eagle.ModeError, "'x' is a host (NumPy) array; this plan runs on the GPU (target 'cuda'): pass cupy.asarray(x)"),
        (dict(x=FakeDevice((8,)), y=FakeDevice((9,))), ValueError, "plane 'y' must have shape (8,) for n=8, got (9,)"),
        (dict(x=FakeDevice((8,), np.int32), y=FakeDevice((8,))), eagle.ModeError, "plane 'x' is int32, which is not supported"),
        (dict(x=FakeDevice((8,), np.float32), y=FakeDevice((8,))), eagle.ModeError, "mixed floating dtypes in one launch (plane 'y' is float64, the first plane 'x' is float32)"),
        (dict(x=FakeDevice((8,), strides=(16,)), y=FakeDevice((8,))), ValueError, "'x' is not C-contiguous; pass cupy.ascontiguousarray"),
        (dict(x=FakeDevice((8,), ptr=(1 << 24) + 4), y=FakeDevice((8,))), ValueError, "'x' is not aligned to its 8-byte elements"),
        (dict(x=FakeDevice((8,)), y=FakeDevice((8,), readonly=True)), ValueError, "'y' is written by the kernel but the array is read-only"),
        (dict(x=FakeDevice((8,), device=0), y=FakeDevice((8,), device=1)), ValueError, "'y' is on GPU 1 but 'x' is on GPU 0"),
        (dict(x=FakeDevice((8,)), y=FakeDevice((8,)), z=FakeDevice((8,))), TypeError, "'z' is not a parameter"),
        (dict(x=[1.0] * 8, y=FakeDevice((8,))), TypeError, "'x' must be a GPU array"),
        (dict(x=FakeDevice((8,)), y=FakeDevice((8,)), finished_count=FakeDevice((1,), np.int64)), ValueError, "finished_count must be a uint32 array of shape (1,)"),
        (dict(x=FakeDevice((8,)), y=FakeDevice((8,)), finished_count=FakeDevice((1,), np.uint32, readonly=True)), ValueError, "finished_count is read-only"),
        (dict(x=FakeDevice((8,), ptr=0xE00000), y=FakeDevice((8,), ptr=0xE00000)), ValueError, "'x' and 'y' overlap in memory, and the kernel writes 'y'"),
        (dict(x=FakeDevice((8,), ptr=0xE00000), y=FakeDevice((8,), ptr=0xE00038)), ValueError, "'x' and 'y' overlap in memory, and the kernel writes 'y'"),
        (dict(a=FakeDevice((1,), ptr=0xE00010), x=FakeDevice((8,)), y=FakeDevice((8,), ptr=0xE00000)), ValueError, "'a' and 'y' overlap in memory, and the kernel writes 'y'"),
        (dict(x=FakeDevice((8,)), y=FakeDevice((8,), ptr=0xE00000), finished_count=FakeDevice((1,), np.uint32, ptr=0xE0003C)), ValueError, "'y' and 'finished_count' overlap in memory"),
    ],
)
def test_plane_refusals_name_the_plane_and_the_fix(cuda_plans, values, error, text):
    a, _ = cuda_plans
    err = bind_error(a, a=values.pop("a", 1.0), **values)
    assert isinstance(err, error), err
    assert text in str(err)
    assert str(err).startswith("eagle: kernel 'axpy'")


def test_a_consumer_stream_reads_through_dlpack():
    x = FakeDLPack((4,), np.float64, 0xB00000, 0)
    x.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f8", "data": (0xB00000, False), "strides": None, "version": 3}
    assert eagle.cuda.view(x).ptr == 0xB00000 and x.streams == []  # CAI: no DLPack call
    assert eagle.cuda.view(x, stream=0).ptr == 0xB00000 and x.streams == [1]  # legacy default: 1
    eagle.cuda.view(x, stream=12345)
    assert x.streams == [1, 12345]


def test_interop_imports_a_cuda_dlpack_tensor_without_a_copy():
    x = FakeDLPack((3, 5), np.float32, 0xC00000, 1)
    buf = eagle.interop.import_buffer(x)
    assert isinstance(buf, eagle.interop.DeviceBuffer)
    assert (buf.ptr, buf.shape, buf.dtype) == (0xC00000, (3, 5), np.dtype(np.float32))
    with pytest.raises(TypeError, match="has dtype int32"):
        eagle.interop.import_buffer(FakeDLPack((4,), np.int32, 0xD00000, 0))


def test_planes_on_two_gpus_found_through_dlpack_only(cuda_plans):
    a, _ = cuda_plans
    err = bind_error(a, a=1.0, x=FakeDLPack((8,), np.float64, 0x900000, 0), y=FakeDLPack((8,), np.float64, 0xA00000, 3))
    assert isinstance(err, ValueError) and "'y' is on GPU 3 but 'x' is on GPU 0" in str(err)


@pytest.mark.parametrize(
    "param, error, text",
    [
        (np.ones(1), eagle.ModeError, "Param 'a' is a host (NumPy) array; on the GPU a Param is a number"),
        (FakeDevice((2,)), ValueError, "Param 'a' is one value for all samples; got an array of shape (2,)"),
        (FakeDevice((1,), np.float32), eagle.ModeError, "Param 'a' is float32; on the GPU a Param array has the launch's dtype (float64)"),
        (True, TypeError, "Param 'a' must be a number, got a bool"),
    ],
)
def test_param_refusals(cuda_plans, param, error, text):
    a, _ = cuda_plans
    err = bind_error(a, a=param, x=FakeDevice((8,)), y=FakeDevice((8,)))
    assert isinstance(err, error), err
    assert text in str(err)


def test_a_device_param_passes(cuda_plans):
    a, _ = cuda_plans
    err = bind_error(a, a=FakeDevice((1,)), x=FakeDevice((8,)), y=FakeDevice((8,)))
    assert isinstance(err, RuntimeError) and "no CUDA driver" in str(err)


def test_mask_and_table_checks_on_the_device(cuda_plans):
    _, s = cuda_plans
    good = dict(dt=0.1, w=FakeDevice((5,)), v=FakeDevice((3, 16)), terminated=FakeDevice((16,), np.bool_), x=FakeDevice((16,)))
    err = bind_error(s, **{**good, "terminated": FakeDevice((16,), np.uint8)})
    assert isinstance(err, eagle.ModeError) and "the Terminated mask 'terminated' must be a bool array, got uint8" in str(err)
    err = bind_error(s, **{**good, "x": FakeDevice((15,))})
    assert isinstance(err, ValueError) and "plane 'x' must have shape (16,) for n=16, got (15,)" in str(err)
    err = bind_error(s, **{**good, "v": FakeDevice((2, 16))})
    assert isinstance(err, ValueError) and "plane 'v' must have shape (3, 16) for n=16, got (2, 16)" in str(err)
    err = bind_error(s, **{**good, "w": FakeDevice((5, 2))})
    assert isinstance(err, ValueError) and "Table 'w' must have shape (5,)" in str(err)


def test_a_device_array_on_a_host_plan_is_still_refused(tmp_path):
    (plan,) = eagle.plan.auto([axpy], cache_dir=tmp_path)
    with pytest.raises(eagle.ModeError, match="'x' is a GPU array; this plan runs on the host"):
        plan.bind(a=1.0, x=FakeDevice((8,)), y=np.zeros(8))


# ---------------------------------------------------------------- streams


def test_stream_handles():
    class CupyLike:
        ptr = 1234

    class TorchLike:
        cuda_stream = 99

    assert eagle.cuda.stream_handle(7) == 7
    assert eagle.cuda.stream_handle(CupyLike()) == 1234
    assert eagle.cuda.stream_handle(TorchLike()) == 99
    with pytest.raises(TypeError, match="integer CUstream"):
        eagle.cuda.stream_handle("s")


def test_device_helpers_without_a_driver():
    if eagle.cuda.probe()["usable"]:
        pytest.skip("a CUDA device is usable here")
    assert _core.cuda_pointer_device(0x1000) == -1
    with pytest.raises(RuntimeError, match="no CUDA driver"):
        _core.CudaEvent()
    with pytest.raises(RuntimeError, match="no CUDA driver"):
        _core.cuda_copy_async(1, 2, 8, 0)


# ---------------------------------------------------------------- graph segments


@pytest.mark.parametrize(
    "kinds, expect",
    [
        (["jax", "kernel"], [("eager_stream", [0]), ("capture", [1])]),
        (["kernel", "kernel", "jax", "kernel"], [("capture", [0, 1]), ("eager_stream", [2]), ("capture", [3])]),
        (["kernel", "opaque_host", "kernel", "kernel", "opaque_stream"], [("capture", [0]), ("opaque_host", [1]), ("capture", [2, 3]), ("opaque_stream", [4])]),
        (["jax", "jax"], [("eager_stream", [0]), ("eager_stream", [1])]),
        (["kernel"], [("capture", [0])]),
    ],
)
def test_segments_on_a_gpu(kinds, expect):
    assert segments(kinds, "cuda") == expect
    assert segments(kinds, "host") == [("host", list(range(len(kinds))))]
    # Every node is in exactly one segment, in order.
    assert [i for _, idx in segments(kinds, "cuda") for i in idx] == list(range(len(kinds)))


def test_an_arch_nvrtc_does_not_know_falls_back_to_ptx(monkeypatch, tmp_path):
    if not _core.nvrtc_version():
        pytest.skip("NVRTC not found")
    monkeypatch.setattr(eagle.cuda, "probe", lambda: usable_probe("sm_999"))
    (plan,) = eagle.plan.auto([axpy], targets=("cuda",), cache_dir=tmp_path)
    assert (plan.info["arch"], plan.info["format"]) == ("compute_75", "ptx")
    assert "sm_999" in plan.info["fallback"]
    assert plan.info["device_arch"] == "sm_999"


def test_segments_refuse_an_unknown_kind():
    with pytest.raises(ValueError, match="unknown node kind 'mystery'"):
        segments(["mystery"], "cuda")


def test_host_graph_schedule_and_node_kinds(tmp_path):
    (plan,) = eagle.plan.auto([axpy], cache_dir=tmp_path)
    x, y, z = np.arange(4.0), np.zeros(4), np.zeros(4)
    node = eagle.graph.opaque(lambda y: y * 2.0, reads={"y": y}, writes={"z": z}, eager=True)
    g = eagle.Graph().add(plan.bind(a=1.0, x=x, y=y)).add_node(node).build()
    assert g.schedule == ("host",)
    assert [eagle.graph.node_kind(n) for _, n in g.nodes] == ["kernel", "opaque_host"]
    g.launch(2)
    g.synchronize()
    np.testing.assert_array_equal(y, 2.0 * x)
    np.testing.assert_array_equal(z, 4.0 * x)
