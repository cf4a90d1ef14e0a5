"""The node protocol (eagle/nodes.py), the array modules (eagle/arrays.py) and the one code
path of records and reverse sweeps, run here on the host with NumPy and with a fake "device"
array module: ``eagle.arrays.DeviceArrays`` over a NumPy-backed stand-in for CuPy whose
arrays are host memory, which logs the stream each operation was enqueued on. The same
record and sweep on a real GPU are in tests/test_gpu.py.

Also: the graph <-> record import cycle is gone, the protocol's names stay importable from
eagle.graph, and the adjoint plans of reverse sweeps are cached per cache directory.
"""

from __future__ import annotations

import ast
import ctypes
import pathlib
import types

import numpy as np
import pytest

import eagle
import eagle.arrays
import eagle.cuda
import eagle.diff
import eagle.graph
import eagle.nodes
import eagle.plan
import hawk
from eagle.arrays import DeviceArrays, HostArrays
from eagle.graph import opaque
from eagle.record import Record, run_on_host
from hawk import Mutable, Param, Scalar, Table

from conftest import assert_sum_close, plan_kernels

EAGLE = pathlib.Path(eagle.__file__).parent


@hawk.kernel(steps=1)
def spring(dt: Param, c: Param, p: Mutable[Scalar], q: Mutable[Scalar]):
    qn = q + dt * (-p - c * q - 0.1 * p * p * p)
    p = p + dt * q
    q = qn


@hawk.kernel
def lin(w: Table[Scalar], z: Scalar, y: Mutable[Scalar]):
    y = w.at(0) * z + w.at(1)


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels([spring, lin], module_cache_dir)


# ------------------------------------------------------------------------------------------------
# a stand-in for CuPy: "device" memory is host memory, every array made is logged with the
# stream current at the time


class FakeDeviceArray(np.ndarray):
    """A CuPy array stand-in (host memory); ``get()`` is the copy to the host."""

    def get(self):
        return np.array(self)

    def copy(self, order="C"):
        FAKE_LOG.append(("copy", FAKE_STREAM[-1] if FAKE_STREAM else None))
        return super().copy(order)


FAKE_LOG: list[tuple[str, object]] = []
FAKE_STREAM: list[int] = []


def _memory(ptr: int, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = (ctypes.c_char * max(nbytes, 1)).from_address(ptr)
    return np.frombuffer(buf, dtype=dtype, count=int(np.prod(shape, dtype=np.int64))).reshape(shape)


class FakeCupy:
    """The few CuPy functions eagle.arrays.DeviceArrays calls."""

    ndarray = FakeDeviceArray

    def __init__(self):
        self.cuda = types.SimpleNamespace(ExternalStream=self._external_stream)

    def _log(self, what):
        FAKE_LOG.append((what, FAKE_STREAM[-1] if FAKE_STREAM else None))

    class _Stream:
        def __init__(self, ptr):
            self.ptr = ptr

        def __enter__(self):
            FAKE_STREAM.append(self.ptr)
            return self

        def __exit__(self, *exc):
            FAKE_STREAM.pop()

    def _external_stream(self, ptr):
        return FakeCupy._Stream(ptr)

    def asarray(self, obj):
        self._log("asarray")
        if isinstance(obj, np.ndarray):
            return np.asarray(obj).view(FakeDeviceArray)
        cai = obj.__cuda_array_interface__  # a "device" array over host memory
        return _memory(cai["data"][0], cai["shape"], cai["typestr"]).view(FakeDeviceArray)

    def from_dlpack(self, obj):
        self._log("from_dlpack")
        v = eagle.cuda._from_dlpack(obj, 0, FAKE_STREAM[-1] if FAKE_STREAM else None)
        return _memory(v.ptr, v.shape, v.dtype).view(FakeDeviceArray)

    def zeros(self, shape, dtype):
        self._log("zeros")
        return np.zeros(shape, dtype).view(FakeDeviceArray)

    def zeros_like(self, a, dtype=None):
        self._log("zeros_like")
        return np.zeros_like(np.asarray(a), dtype=dtype).view(FakeDeviceArray)


class FakeEvent:
    made: list["FakeEvent"] = []

    def __init__(self):
        self.stream = None
        self.queries = 0
        FakeEvent.made.append(self)

    def record(self, stream):
        self.stream = stream

    def done(self):
        self.queries += 1
        return True


class CAIOnly:
    """A device array as a framework returns it: only ``__cuda_array_interface__``."""

    def __init__(self, a):
        self._a = np.ascontiguousarray(a)
        self.__cuda_array_interface__ = {"shape": self._a.shape, "typestr": self._a.dtype.str, "data": (self._a.ctypes.data, False), "strides": None, "version": 3}


class DLPackOnly:
    """A device array exposed only through DLPack on CUDA device 0 (as JAX's can be)."""

    def __init__(self, a):
        self._a = np.ascontiguousarray(a)
        self._shape = (ctypes.c_int64 * self._a.ndim)(*self._a.shape)
        code, bits = {"float64": (2, 64), "float32": (2, 32)}[self._a.dtype.name]
        self._t = eagle.cuda._DLTensor(self._a.ctypes.data, eagle.cuda._DLDevice(2, 0), self._a.ndim, eagle.cuda._DLDataType(code, bits, 1), self._shape, None, 0)
        self.streams = []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._t), b"dltensor", None)


@pytest.fixture
def fake_device():
    FAKE_LOG.clear()
    FAKE_STREAM.clear()
    FakeEvent.made.clear()
    return DeviceArrays(FakeCupy(), event=FakeEvent)


# ------------------------------------------------------------------------------------------------
# the protocol module


def _imports(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:  # "from eagle import cuda" is eagle.cuda
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_no_graph_record_import_cycle():
    """record, diff and nodes never import graph (not even lazily); graph imports record at
    the top, and nodes imports nothing of eagle's graph machinery."""
    for name in ("record.py", "diff.py", "nodes.py", "arrays.py"):
        assert "eagle.graph" not in _imports(EAGLE / name), name
    assert {m for m in _imports(EAGLE / "nodes.py") if m.startswith("eagle.")} == {"eagle.binding", "eagle.binding.Bound", "eagle.cuda"}
    assert "eagle.record" in _imports(EAGLE / "graph.py")
    assert "eagle.nodes" in _imports(EAGLE / "frameworks" / "jax.py")


def test_protocol_names_stay_importable_from_eagle_graph():
    for name in ("plane_key", "node_planes", "copy_results", "node_kind"):
        assert getattr(eagle.graph, name) is getattr(eagle.nodes, name)


def test_plane_key_on_the_host():
    a = np.zeros(16)
    assert eagle.nodes.plane_key(a) == eagle.nodes.plane_key(a.view()) == eagle.nodes.plane_key(a[:])
    assert eagle.nodes.plane_key(a[:8]) != eagle.nodes.plane_key(a)  # other bytes
    assert eagle.nodes.plane_key(a[8:]) != eagle.nodes.plane_key(a[:8])  # other address
    assert eagle.nodes.plane_key(a.view(np.int64)) != eagle.nodes.plane_key(a)  # other dtype
    assert eagle.nodes.plane_key(a) == (a.ctypes.data, 128, "<f8")


def test_plane_key_on_the_device():
    """A GPU plane's key is its device, address, bytes and dtype, through the CUDA array
    interface or DLPack alike (the fakes' pointers are host memory, never dereferenced)."""
    host = np.zeros(8)
    cai = CAIOnly(host)
    cai.__dlpack_device__ = lambda: (2, 0)  # the device ordinal without asking the driver
    dl = DLPackOnly(host)
    key = eagle.nodes.plane_key(cai)
    assert key == ("cuda", 0, host.ctypes.data, 64, "<f8")
    assert eagle.nodes.plane_key(dl) == key
    assert eagle.nodes.plane_key(host) != key  # host and device keys never collide


def test_node_kind_and_the_protocol():
    jax = pytest.importorskip("jax")
    from eagle.frameworks import jax as eagle_jax

    x, z = np.zeros(4), np.zeros(4)
    jn = eagle_jax.node(jax.jit(lambda a: a), reads={"x": x}, writes={"z": z})
    lazy, eager = opaque(lambda a: a, reads={"x": x}, writes={"z": z}), opaque(lambda: None, eager=True)
    assert jn.kind == "opaque_stream" and eagle.nodes.node_kind(jn) == "jax"  # its name in messages; its schedule
    assert [eagle.nodes.node_kind(n) for n in (lazy, eager)] == ["opaque_stream", "opaque_host"]
    for n in (jn, lazy, eager):
        assert isinstance(n, eagle.nodes.ForeignNode) and eagle.nodes.is_foreign_node(n)
        reads, writes = eagle.nodes.node_planes(n)
        assert reads == dict(n.reads) and writes == dict(n.writes)
    assert not eagle.nodes.is_foreign_node(object())

    class Mine:  # any object with the protocol is a node; node_kind overrides kind
        kind, node_kind, runs_on_host = "mine", "opaque_host", True
        reads, writes = {"x": x}, {}

        def run(self):
            pass

    assert eagle.nodes.node_kind(Mine()) == "opaque_host"
    g = eagle.Graph().add_node(Mine()).build()
    assert g.nodes[0][0] == "mine"


def test_copy_results_checks_count_and_shape():
    a, b = np.zeros(3), np.zeros(3)
    eagle.nodes.copy_results((np.arange(3.0), np.ones(3)), {"a": a, "b": b}, "fn")
    np.testing.assert_array_equal(a, [0, 1, 2])
    np.testing.assert_array_equal(b, [1, 1, 1])
    with pytest.raises(ValueError, match=r"fn returned 1 value\(s\) for 2 write plane\(s\) \['a', 'b'\]"):
        eagle.nodes.copy_results(np.ones(3), {"a": a, "b": b}, "fn")
    with pytest.raises(ValueError, match=r"fn returned shape \(4,\) for write plane 'a', which has shape \(3,\)"):
        eagle.nodes.copy_results(np.ones(4), {"a": a}, "fn")
    assert eagle.nodes.result_values([1, 2], {"a": a, "b": b}, "fn") == (1, 2)


# ------------------------------------------------------------------------------------------------
# segments of recorded GPU graphs


def test_recorded_gpu_graphs_launch_kernels_on_the_stream():
    kinds = ["jax", "kernel", "kernel", "opaque_host", "kernel"]
    assert eagle.graph.segments(kinds, "cuda", record=True) == [
        ("eager_stream", [0]), ("record_stream", [1, 2]), ("opaque_host", [3]), ("record_stream", [4])]
    assert eagle.graph.segments(kinds, "cuda") == [("eager_stream", [0]), ("capture", [1, 2]), ("opaque_host", [3]), ("capture", [4])]
    assert eagle.graph.segments(kinds, "host", record=True) == [("host", [0, 1, 2, 3, 4])]


def test_device_graph_runs_a_record_on_its_stream(fake_device):
    """DeviceGraph.launch_recorded: every node through the record, on the given stream (host
    nodes here: a kernel launch needs a GPU)."""
    x, z, w = (np.arange(4.0) * k for k in (1, 0, 0))
    x, z, w = (a.view(FakeDeviceArray) for a in (x, z, w))
    seen = []
    nodes = [("a", opaque(lambda v: (seen.append(("a", list(FAKE_STREAM))), v * 2)[1], reads={"x": x}, writes={"z": z}, eager=True)),
             ("b", opaque(lambda v: (seen.append(("b", list(FAKE_STREAM))), v + 1)[1], reads={"z": z}, writes={"w": w}, eager=True))]
    segs = eagle.graph.segments([eagle.nodes.node_kind(n) for _, n in nodes], "cuda", record=True)
    dg = eagle.graph.DeviceGraph(nodes, segs)
    rec = Record(nodes, fake_device)
    dg.launch_recorded(3, 4242, rec)
    assert len(rec) == 3 and rec.stream == 4242
    assert [n for n, _ in seen] == ["a", "b"] * 3
    np.testing.assert_array_equal(w, 2 * x + 1)
    # the saves were enqueued on the graph's stream; the host nodes ran outside it
    assert FAKE_LOG and all(s == 4242 for _, s in FAKE_LOG)
    assert all(stack == [] for _, stack in seen)
    # the first save of z is its value before any launch; later ones the previous launch's
    kz = eagle.nodes.plane_key(z)
    np.testing.assert_array_equal(rec.launches[0][0].saved[kz], np.zeros(4))
    np.testing.assert_array_equal(rec.launches[1][0].saved[kz], 2 * x)


# ------------------------------------------------------------------------------------------------
# array modules


@pytest.mark.parametrize("module", ["host", "fake_device"])
def test_array_module_values(module, fake_device):
    xp = HostArrays() if module == "host" else fake_device
    src = np.arange(6.0)
    for value in ([0, 1, 2, 3, 4, 5], src, src.reshape(2, 3)) + ((CAIOnly(src), DLPackOnly(src)) if xp.device else ()):
        got = xp.value(value, (6,), np.float64, "seed 'a.x'")
        np.testing.assert_array_equal(np.asarray(got), src)
    f32 = xp.value(src, (6,), np.float32, "seed")
    assert f32.dtype == np.float32
    with pytest.raises(ValueError, match=r"seed 'a.x' has shape \(5,\); the plane has shape \(6,\)"):
        xp.value(np.zeros(5), (6,), np.float64, "seed 'a.x'")
    a = xp.zeros((3,), np.float64)
    xp.assign(a, 2.0)
    xp.add_into(a, xp.value(np.arange(3.0), (3,), np.float64, "v"))
    np.testing.assert_array_equal(np.asarray(a), [2, 3, 4])
    assert xp.to_float(a) == 2.0
    c = xp.copy(a)
    xp.assign(c, 0.0)
    assert xp.to_float(a) == 2.0  # a copy is owned
    # the host knows equal contents without waiting; the device never compares
    assert xp.same(a, xp.copy(a)) is (not xp.device)
    assert xp.same(a, c) is False
    # the reverse sweep's zeroing of a pure output's cotangent: the samples live in a launch
    z = xp.value(np.arange(1.0, 9.0).reshape(2, 4), (2, 4), np.float64, "z")
    finished = np.array([True, False, True, False])
    xp.zero_live(z, finished.view(type(z)) if xp.device else finished)
    np.testing.assert_array_equal(np.asarray(z), [[1, 0, 3, 0], [5, 0, 7, 0]])


def test_device_module_without_cupy_says_what_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "cupy", None)  # import cupy raises ImportError
    with pytest.raises(eagle.ModeError, match=r"CuPy, which cannot be imported .*raptor-eagle\[cuda13\]"):
        eagle.arrays.for_target("cuda").zeros((2,), np.float64)
    assert isinstance(eagle.arrays.for_target("host"), HostArrays)


def test_host_module_refuses_a_gpu_array_it_cannot_copy():
    with pytest.raises(TypeError) as err:
        HostArrays().value(CAIOnly(np.zeros(3)), (3,), np.float64, "the VJP of node 'm'")
    assert str(err.value) == (
        "the VJP of node 'm' is a GPU array (CAIOnly) with no way to copy it to the host (.get() or __array__); "
        "this graph runs on the host: return a NumPy array"
    )


class JaxOnGpu(CAIOnly):
    """A JAX array on a GPU: ``__cuda_array_interface__`` and ``__array__`` (a copy to the
    host), no ``__array_interface__`` and no ``.get()``. Where JAX's default device is a GPU,
    ``jax.vjp`` of a host graph's node returns these."""

    def __init__(self, a):
        super().__init__(a)
        self.copies = 0

    def __array__(self, dtype=None, copy=None):
        self.copies += 1
        return np.array(self._a, dtype=dtype, copy=True)


class CupyLike(CAIOnly):
    """CuPy: ``.get()`` copies to the host, ``__array__`` refuses (as CuPy's does)."""

    def get(self):
        return self._a.copy()

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly.")


def test_host_module_copies_gpu_arrays_of_jax_and_cupy_to_the_host():
    src = np.arange(6.0)
    jx = JaxOnGpu(src)
    got = HostArrays().value(jx, (2, 3), np.float32, "the VJP of node 'm'")
    assert jx.copies == 1 and isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_array_equal(got, src.reshape(2, 3))
    np.testing.assert_array_equal(HostArrays().value(CupyLike(src), (6,), np.float64, "v"), src)
    with pytest.raises(ValueError, match=r"the VJP of node 'm' has shape \(6,\); the plane has shape \(5,\)"):
        HostArrays().value(JaxOnGpu(src), (5,), np.float64, "the VJP of node 'm'")


def test_device_module_enqueues_on_the_stream_and_keeps_results_alive(fake_device):
    xp = fake_device
    with xp.on_stream(17):
        a = xp.zeros((4,), np.float64)
        held = DLPackOnly(np.ones(4))
        xp.add_into(a, xp.value(held, (4,), np.float64, "v"))
        xp.keep_until_done(held)
    assert [s for _, s in FAKE_LOG] == [17, 17] and held.streams == [17]
    assert FakeEvent.made[-1].stream == 17 and xp._pending[-1][1] is held
    with xp.on_stream(18):
        xp.keep_until_done("next")
    assert len(xp._pending) == 1 and FakeEvent.made[0].queries == 1  # the done one was released


# ------------------------------------------------------------------------------------------------
# one code path: records and reverse sweeps on the host and on the fake device agree bit for bit


def _record_and_reverse(plans, xp, vjp_result):
    """A foreign node, a Table kernel and a stepping kernel with an array Param, recorded for
    5 launches through ``xp``; on the fake device the planes are its arrays (host memory the
    host kernels run on)."""
    n = 24
    rng = np.random.default_rng(7)
    mine = (lambda a: a.view(FakeDeviceArray)) if xp.device else (lambda a: a)
    x, z, y = (mine(a) for a in (rng.uniform(-1, 1, n), np.zeros(n), np.zeros(n)))
    w = mine(np.array([2.0, 0.5]))
    p, q = mine(rng.uniform(-1, 1, n)), mine(rng.uniform(-1, 1, n))
    c = np.array(0.2)
    nodes = [("model", opaque(lambda a: np.tanh(0.7 * a), reads={"x": x}, writes={"z": z})),
             ("lin", plans["lin"].bind(w=w, z=z, y=y)),
             ("osc", plans["spring"].bind(dt=0.05, c=c, p=p, q=q))]
    rec = Record(nodes, xp)
    for k in range(5):
        if k % 2 == 0:
            w[:] = [2.0 + k, 0.5 - 0.1 * k]  # the optimizer changes the Table between launches
        c[()] = 0.2 + 0.05 * k             # and a Param bound to an array
        rec.launch_once(run_on_host, stream=99 if xp.device else None)
    got = {}

    def vjp(primals, cotangents):
        got["types"] = {type(v) for v in list(primals.values()) + list(cotangents.values())}
        t = np.tanh(0.7 * np.asarray(primals["x"]))
        return {"x": vjp_result(np.asarray(cotangents["z"]) * 0.7 * (1 - t * t))}

    grads = eagle.diff.reverse(rec, {"lin.y": np.ones(n), "osc.p": np.full(n, 0.5), "osc.q": np.ones(n)}, vjps={"model": vjp})
    return rec, grads, got["types"]


def test_fake_device_record_and_sweep_equal_the_host_bit_for_bit(plans, fake_device):
    rec_h, want, types_h = _record_and_reverse(plans, HostArrays(), lambda a: a)
    FAKE_LOG.clear()
    rec_d, got, types_d = _record_and_reverse(plans, fake_device, CAIOnly)
    assert types_h == {np.ndarray} and types_d == {FakeDeviceArray}  # the VJP sees device arrays
    assert set(got) == set(want) == {"x", "z", "w", "p", "q", "osc.dt", "osc.c"}
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)
        if k in ("osc.dt", "osc.c"):
            assert isinstance(got[k], float)
        else:
            assert isinstance(got[k], FakeDeviceArray) and isinstance(want[k], np.ndarray)
    # every array operation of the record and the sweep ran on the record's stream
    assert FAKE_LOG and all(s == 99 for _, s in FAKE_LOG)
    # the host keeps a Table once while it is unchanged; the device copies it at each launch
    tables_h = {id(nl.tables["w"]) for launch in rec_h.launches for nl in launch if nl.node == "lin"}
    tables_d = {id(nl.tables["w"]) for launch in rec_d.launches for nl in launch if nl.node == "lin"}
    assert len(tables_h) == 3 and len(tables_d) == 5  # it changed before launches 0, 2 and 4
    assert [float(nl.params["c"]) for launch in rec_d.launches for nl in launch if nl.node == "osc"] == [0.2 + 0.05 * k for k in range(5)]
    assert rec_d.nbytes == rec_h.nbytes


def test_fake_device_sweep_takes_dlpack_results(plans, fake_device):
    _, want, _ = _record_and_reverse(plans, HostArrays(), lambda a: a)
    _, got, _ = _record_and_reverse(plans, fake_device, DLPackOnly)
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)


def test_against_the_chain_rule_by_hand(plans):
    """The tanh -> lin part of the sweep against its derivative written out (one launch)."""
    n = 8
    x, z, y = np.linspace(-1, 1, n), np.zeros(n), np.zeros(n)
    w = np.array([3.0, 0.25])
    g = (eagle.Graph().add_node(opaque(np.tanh, reads={"x": x}, writes={"z": z}), name="m")
         .add(plans["lin"].bind(w=w, z=z, y=y), name="lin").build(record=True))
    g.launch()
    seed = np.linspace(0.5, 1.5, n)
    grads = eagle.diff.reverse(g.record, {"lin.y": seed}, vjps={"m": lambda p, c: {"x": c["z"] * (1 - np.tanh(p["x"]) ** 2)}})
    np.testing.assert_allclose(grads["x"], seed * 3.0 * (1 - np.tanh(x) ** 2), rtol=1e-15)
    assert_sum_close(grads["w"], [seed * np.tanh(x), seed], rtol=1e-15, axis=1)


def test_a_host_table_unchanged_between_launches_is_kept_once(plans):
    n = 8
    w = np.array([1.0, 2.0])
    g = eagle.Graph().add(plans["lin"].bind(w=w, z=np.ones(n), y=np.zeros(n)), name="lin").build(record=True)
    g.launch(4)
    w[0] = 5.0
    g.launch(3)
    ids = [id(nl.tables["w"]) for launch in g.record.launches for nl in launch]
    assert len(set(ids[:4])) == 1 and len(set(ids[4:])) == 1 and ids[0] != ids[4]
    # y is overwritten at each launch: only the last launch's y is seeded, with its Table
    grads = eagle.diff.reverse(g.record, {"lin.y": np.ones(n)})
    np.testing.assert_array_equal(grads["z"], np.full(n, 5.0))
    np.testing.assert_array_equal(grads["w"], [8.0, 8.0])
