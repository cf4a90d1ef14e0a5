"""Graphs: bound kernel launches and foreign nodes run in order, many times (docs/runtime.md).

``Graph().add(bound, name=...)`` and ``.add_node(node, name=...)`` collect nodes in launch
order; ``build(record=False)`` checks them and returns a ``BuiltGraph`` whose ``launch(n)``
runs every node in order n times. A graph of kernels only runs its launches in C++, with
no Python between them. On the CPU ``schedule`` is ``('host',)``: one host schedule.

On a GPU (kernels bound from CUDA plans, ``eagle.cuda``) the graph is cut into segments
(``segments``, a pure function of the node kinds): consecutive kernel nodes form one
``'capture'`` segment, captured once into a CUDA graph and replayed; a JAX node
(``eagle.frameworks.jax.node``) is ``'eager_stream'``: JAX runs on its own stream, eagle's
stream waits for its result (DLPack on the consumer's stream), copies it into the write planes
(cuMemcpyDtoDAsync) and keeps JAX's arrays alive until an event after the copy completes;
``opaque(fn)`` is ``'opaque_stream'`` (fn is called with eagle's stream current in CuPy) and
``opaque(fn, eager=True)`` is ``'opaque_host'`` (the host waits for the stream first).
``launch`` never waits for the GPU (except before an 'opaque_host' node);
``synchronize()`` waits and raises a pending kernel error. A graph built with ``record=True``
(eagle/record.py) launches its kernels one by one on the stream ('record_stream'), each after
the record's device-to-device copies of the planes it overwrites.

Rules checked at build (each refusal names the nodes and the plane):

- a plane is written by at most one node of a graph (a second writer would silently win);
- a foreign node does not write a plane it also reads (its framework may hold a view of the
  input while the result is copied into the same memory);
- a plane name bound in two nodes names one array, or arrays of one shape.

Nodes run strictly in order, so a node reading a plane that a later node writes sees the
previous launch's value.

Foreign nodes (``opaque`` here, ``eagle.frameworks.jax.node``) share one protocol: ``kind``,
``reads`` and ``writes`` (name -> array), ``runs_on_host`` and ``run()`` (eagle/nodes.py, with
``plane_key``, ``node_planes`` and ``copy_results``, which graph, record and diff share).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from raptor_core import _core

from eagle.arrays import for_target
from eagle.binding import Bound
from eagle.nodes import copy_results, is_foreign_node, node_kind, node_planes, plane_key, result_values
from eagle.record import Record, run_on_host
from eagle.runtime import host_runtime

# plane_key, node_planes, copy_results and node_kind live in eagle.nodes; they stay importable from here.
__all__ = ["Graph", "BuiltGraph", "OpaqueNode", "copy_results", "node_kind", "opaque", "plane_key", "node_planes", "segments"]


_SCHEDULE_OF = {"jax": "eager_stream", "opaque_host": "opaque_host", "opaque_stream": "opaque_stream"}


def segments(kinds: list[str], target: str, record: bool = False) -> list[tuple[str, list[int]]]:
    """How a graph of nodes of these kinds (``node_kind``) runs on ``target``: a list of
    (schedule entry, node indices). On the host: one ``'host'`` segment of every node. On
    'cuda': runs of consecutive kernels are ``'capture'`` segments; every other node is its own
    segment ('eager_stream' for JAX, 'opaque_stream' or 'opaque_host' for opaque nodes). With
    ``record`` (a graph built with record=True) a run of kernels is ``'record_stream'``: each
    kernel is launched on the stream after the record's device-to-device copies of the planes
    it overwrites (a captured graph would replay the copies into the same buffers)."""
    if target != "cuda":
        return [("host", list(range(len(kinds))))]
    kernels = "record_stream" if record else "capture"
    out: list[tuple[str, list[int]]] = []
    for i, k in enumerate(kinds):
        if k == "kernel":
            if out and out[-1][0] == kernels:
                out[-1][1].append(i)
            else:
                out.append((kernels, [i]))
        elif k in _SCHEDULE_OF:
            out.append((_SCHEDULE_OF[k], [i]))
        else:
            raise ValueError(f"eagle graph: unknown node kind {k!r}")
    return out


class OpaqueNode:
    """The general foreign node. Each launch calls ``fn(*reads.values())`` (or ``fn()`` when
    it has no reads) and copies its result(s) into the ``writes`` planes, in order.

    ``kind`` is ``'opaque_stream'`` (stream-ordered on a GPU; a plain call on the host) or,
    with ``eager=True``, ``'opaque_host'`` (a host call that may read values back)."""

    def __init__(self, fn: Callable[..., Any], reads: Mapping[str, Any], writes: Mapping[str, Any], eager: bool) -> None:
        if not callable(fn):
            raise TypeError(f"eagle.graph.opaque: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.reads = dict(reads)
        self.writes = dict(writes)
        self.eager = bool(eager)
        for name, arr in self.writes.items():
            if not isinstance(arr, np.ndarray) or not arr.flags.writeable:
                raise TypeError(f"eagle.graph.opaque: write plane '{name}' must be a writeable array")

    @property
    def kind(self) -> str:
        """``'opaque_host'`` for ``eager=True`` (the host waits for the stream first), else
        ``'opaque_stream'``."""
        return "opaque_host" if self.eager else "opaque_stream"

    @property
    def runs_on_host(self) -> bool:
        """Whether it needs the host each launch (every foreign node does on the CPU; on a
        GPU a stream-ordered node does too, since frameworks own their memory)."""
        return True

    def run(self) -> None:
        """Calls ``fn`` on the read planes and copies its results into the write planes."""
        result = self.fn(*self.reads.values()) if (self.reads or self.writes) else self.fn()
        if self.writes:
            copy_results(result, self.writes, "eagle.graph.opaque node: fn")


def opaque(fn: Callable[..., Any], reads: Mapping[str, Any] | None = None, writes: Mapping[str, Any] | None = None, eager: bool = False) -> OpaqueNode:
    """A foreign node: ``fn`` runs each launch between the nodes before and after it."""
    return OpaqueNode(fn, reads or {}, writes or {}, eager)


class Graph:
    """A builder: add nodes in launch order, then ``build()``."""

    def __init__(self) -> None:
        self._nodes: list[tuple[str, Any]] = []

    def _name(self, name: str | None, default: str) -> str:
        name = name or default
        if any(n == name for n, _ in self._nodes):
            raise ValueError(f"eagle.Graph: a node named {name!r} is already in the graph")
        return name

    def add(self, bound: Bound, name: str | None = None) -> "Graph":
        """Appends a bound kernel launch (``plan.bind(...)``); a staged kernel's binding
        (eagle/stages.py) as one node per stage, in order (``name:stage1``, ..., ``name``)."""
        from eagle.stages import StagedBound, expand

        if isinstance(bound, StagedBound):
            for node_name, b in expand(name or bound.name, bound):
                self._nodes.append((self._name(node_name, ""), b))
            return self
        if not isinstance(bound, Bound):
            raise TypeError(f"eagle.Graph.add takes a bound kernel (plan.bind(...)), got {type(bound).__name__}; use add_node for foreign nodes")
        self._nodes.append((self._name(name, bound.name), bound))
        return self

    def add_node(self, node: Any, name: str | None = None) -> "Graph":
        """Appends a foreign node (``eagle.graph.opaque`` or ``eagle.frameworks.jax.node``)."""
        if not is_foreign_node(node):
            raise TypeError(f"eagle.Graph.add_node takes a foreign node (eagle.graph.opaque or eagle.frameworks.jax.node), got {type(node).__name__}")
        self._nodes.append((self._name(name, node.kind), node))
        return self

    def build(self, record: bool = False) -> "BuiltGraph":
        """Checks the rules of the module docstring and fixes the nodes into a launchable graph.
        ``record=True`` keeps what ``eagle.diff.reverse`` needs (see eagle/record.py), on the
        host or, for a graph of CUDA plans, on the device."""
        if not self._nodes:
            raise ValueError("eagle.Graph.build: the graph has no nodes")
        check_nodes(self._nodes, "eagle.Graph.build")
        return BuiltGraph(list(self._nodes), record)


def check_nodes(nodes: list[tuple[str, Any]], who: str) -> None:
    """The graph rules (module docstring)."""
    writer: dict[tuple, str] = {}
    by_name: dict[str, tuple[str, Any]] = {}
    for name, node in nodes:
        reads, writes = node_planes(node)
        for plane, arr in list(reads.items()) + list(writes.items()):
            seen = by_name.get(plane)
            if seen is not None and seen[1] is not arr and np.shape(seen[1]) != np.shape(arr):
                raise ValueError(f"{who}: plane '{plane}' is bound twice with different shapes: {np.shape(seen[1])} in node '{seen[0]}' and {np.shape(arr)} in node '{name}'")
            by_name.setdefault(plane, (name, arr))
        for plane, arr in writes.items():
            key = plane_key(arr)
            if key in writer and writer[key] != name:
                raise ValueError(f"{who}: plane '{plane}' is written by node '{writer[key]}' and by node '{name}'; a plane has one writer per launch")
            writer[key] = name
        if not isinstance(node, Bound):
            read_keys = {plane_key(a): p for p, a in reads.items()}
            for plane, arr in writes.items():
                if plane_key(arr) in read_keys:
                    raise ValueError(f"{who}: node '{name}' writes plane '{plane}', which it also reads (as '{read_keys[plane_key(arr)]}'); write into a separate plane")


class BuiltGraph:
    """A built graph: ``launch(n)`` runs every node in order n times."""

    def __init__(self, nodes: list[tuple[str, Any]], record: bool) -> None:
        self.nodes = nodes
        self._kernels_only = all(isinstance(node, Bound) for _, node in nodes)
        self._seq = [node._core for _, node in nodes if isinstance(node, Bound)]
        self.target = _graph_target(nodes)
        self.record = Record(nodes, for_target(self.target)) if record else None
        self._segments = segments([node_kind(node) for _, node in nodes], self.target, record)
        self._device = None
        if self.target == "cuda":
            self._device = DeviceGraph(nodes, self._segments)

    @property
    def schedule(self) -> tuple[str, ...]:
        """How the graph's segments run: on the CPU, one host schedule; on a GPU one entry per
        segment ('capture', 'eager_stream', 'opaque_stream', 'opaque_host'; 'record_stream' for
        the kernels of a graph built with record=True)."""
        return tuple(kind for kind, _ in self._segments)

    def launch(self, n: int = 1, stream: Any = None) -> None:
        """Runs every node in order, ``n`` times. On a GPU it enqueues the work on ``stream``
        (default: eagle.cuda.current_stream()) and returns without waiting."""
        if n < 0:
            raise ValueError(f"eagle graph: launch count must be >= 0, got {n}")
        if self._device is not None and self.record is not None:
            self._device.launch_recorded(int(n), stream, self.record)
            return
        if self._device is not None:
            self._device.launch(int(n), stream)
            return
        if self.record is not None:
            for _ in range(n):
                self.record.launch_once(run_on_host)
            return
        if self._kernels_only:
            _core.run_sequence(self._seq, host_runtime(), int(n))
            return
        rt = host_runtime()
        for _ in range(n):
            for _, node in self.nodes:
                if isinstance(node, Bound):
                    node._core.launch(rt)
                else:
                    node.run()

    def synchronize(self, stream: Any = None) -> None:
        """Waits for the graph's work and raises a pending kernel error (RuntimeError naming
        the kernel and table); host launches are complete when launch returns."""
        if self._device is not None:
            self._device.synchronize(stream)

    def __repr__(self) -> str:
        return f"<eagle graph {[n for n, _ in self.nodes]}>"


def _graph_target(nodes: list[tuple[str, Any]]) -> str:
    """'cuda' when the kernels are bound from CUDA plans, else 'host'; refuses a mix."""
    targets = {name: node.plan.target for name, node in nodes if isinstance(node, Bound)}
    if len(set(targets.values())) > 1:
        host = next(n for n, t in targets.items() if t == "host")
        gpu = next(n for n, t in targets.items() if t == "cuda")
        raise ValueError(f"eagle.Graph.build: node '{host}' runs on the host and node '{gpu}' on the GPU; build every kernel of a graph for one target")
    return next(iter(targets.values()), "host")


class DeviceGraph:
    """A graph's segments on a GPU (module docstring): kernel runs captured as CUDA graphs
    (``_core.CudaSegment``), foreign nodes between them ordered on eagle's stream. Every
    segment is enqueued on one stream; nothing here waits for the GPU except before an
    'opaque_host' node and in ``synchronize``."""

    def __init__(self, nodes: list[tuple[str, Any]], segs: list[tuple[str, list[int]]]) -> None:
        self.nodes = nodes
        self.segs = segs
        self._kinds = [node_kind(node) for _, node in nodes]
        self._captured = {i: _core.CudaSegment([nodes[j][1]._core for j in idx]) for i, (kind, idx) in enumerate(segs) if kind == "capture"}
        self._pending: list[tuple[Any, Any]] = []  # (event after a copy, the arrays it reads)
        self._streams: set[int] = set()

    def launch(self, n: int, stream: Any) -> None:
        from eagle import cuda

        s = cuda.current_stream() if stream is None else cuda.stream_handle(stream)
        self._streams.add(s)
        if len(self.segs) == 1 and 0 in self._captured:  # kernels only: n replays at once
            self._captured[0].launch(s, n)
            return
        for _ in range(n):
            for i, (kind, idx) in enumerate(self.segs):
                if kind == "capture":
                    self._captured[i].launch(s, 1)
                    continue
                name, node = self.nodes[idx[0]]
                if kind == "opaque_host":
                    self._wait(s)
                    node.run()
                elif kind == "eager_stream":
                    self._run_jax(name, node, s)
                else:
                    self._run_opaque(name, node, s)
            self._release()

    def launch_recorded(self, n: int, stream: Any, record: Record) -> None:
        """``n`` launches of a recorded graph: node by node on one stream, each after the
        record's device-to-device copies of what it overwrites (``Record.launch_once``)."""
        from eagle import cuda

        s = cuda.current_stream() if stream is None else cuda.stream_handle(stream)
        self._streams.add(s)
        kinds = dict(zip((name for name, _ in self.nodes), self._kinds))

        def run(name: str, node: Any) -> None:
            kind = kinds[name]
            if kind == "kernel":
                node.launch(s)
            elif kind == "opaque_host":
                self._wait(s)
                node.run()
            elif kind == "jax":
                self._run_jax(name, node, s)
            else:
                self._run_opaque(name, node, s)

        for _ in range(n):
            record.launch_once(run, s)
            self._release()

    def _run_jax(self, name: str, node: Any, stream: int) -> None:
        """JAX on its own stream: its inputs come by DLPack on eagle's stream (JAX waits for
        eagle's work), its results are read by DLPack on eagle's stream (eagle's stream waits
        for JAX), copied on eagle's stream, and kept alive until the copy's event is done."""
        import sys

        import jax

        cupy = sys.modules.get("cupy")
        if cupy is not None:  # CuPy's __dlpack__ orders JAX after CuPy's current stream: ours
            with cupy.cuda.ExternalStream(stream):
                args = [jax.dlpack.from_dlpack(a) for a in node.reads.values()]
        else:
            args = [jax.dlpack.from_dlpack(a) for a in node.reads.values()]
        self._copy_results(node.fn(*args), node.writes, stream, f"eagle.frameworks.jax.node '{name}': the JAX function")

    def _run_opaque(self, name: str, node: Any, stream: int) -> None:
        """fn runs with eagle's stream current in CuPy, so its CuPy work is ordered on it."""
        import sys

        cupy = sys.modules.get("cupy")
        values = list(node.reads.values())
        if cupy is not None:
            with cupy.cuda.ExternalStream(stream):
                result = node.fn(*values) if (node.reads or node.writes) else node.fn()
        else:
            result = node.fn(*values) if (node.reads or node.writes) else node.fn()
        if node.writes:
            self._copy_results(result, node.writes, stream, f"eagle.graph.opaque node '{name}': fn")

    def _copy_results(self, result: Any, writes: dict[str, Any], stream: int, who: str) -> None:
        from eagle import cuda

        outs = result_values(result, writes, who)
        plan = []
        for (plane, dst), value in zip(writes.items(), outs):
            d = cuda.view(dst)
            src = cuda.view(value, stream=stream)
            if src is None:
                raise TypeError(f"{who} returned a {type(value).__name__} for write plane '{plane}'; on the GPU it must return device arrays")
            if src.shape != d.shape:
                raise ValueError(f"{who} returned shape {src.shape} for write plane '{plane}', which has shape {d.shape}")
            if src.dtype != d.dtype:
                raise ValueError(f"{who} returned dtype {src.dtype} for write plane '{plane}', which is {d.dtype}; cast it in the function (a GPU copy does not convert)")
            if not src.c_contiguous:
                raise ValueError(f"{who} returned a non-contiguous array for write plane '{plane}'")
            plan.append((d, src))
        for d, src in plan:
            _core.cuda_copy_async(d.ptr, src.ptr, d.nbytes, stream)
        event = _core.CudaEvent()
        event.record(stream)
        self._pending.append((event, (outs, [src.owner for _, src in plan])))

    def _release(self) -> None:
        """Drops the foreign results whose copies have completed (cuEventQuery, no wait)."""
        self._pending = [(e, keep) for e, keep in self._pending if not e.done()]

    def _wait(self, stream: int) -> None:
        for seg in self._captured.values():
            seg.synchronize(stream)
        if not self._captured:
            from eagle import cuda

            for _, node in self.nodes:
                if isinstance(node, cuda.CudaBound):
                    node.synchronize(stream)

    def synchronize(self, stream: Any) -> None:
        from eagle import cuda

        streams = {cuda.current_stream() if stream is None else cuda.stream_handle(stream)} | self._streams
        for s in streams:
            self._wait(s)
        self._pending.clear()
        self._streams.clear()
