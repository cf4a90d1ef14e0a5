"""Graphs: bound kernel launches and foreign nodes run in order, many times (SPEC §2).

``Graph().add(bound, name=...)`` and ``.add_node(node, name=...)`` collect nodes in launch
order; ``build(record=False)`` checks them and returns a ``BuiltGraph`` whose ``launch(n)``
runs every node in order n times. A graph of kernels only runs its launches in C++, with
no Python between them. On the CPU ``schedule`` is ``('host',)``: one host schedule.

Rules checked at build (each refusal names the nodes and the plane):
- a plane is written by at most one node of a graph (a second writer would silently win);
- a foreign node does not write a plane it also reads (its framework may hold a view of the
  input while the result is copied into the same memory);
- a plane name bound in two nodes names one array, or arrays of one shape.
Nodes run strictly in order, so a node reading a plane that a later node writes sees the
previous launch's value.

Foreign nodes (``opaque`` here, ``eagle.frameworks.jax.node``) share one protocol: ``kind``,
``reads`` and ``writes`` (name -> array), ``runs_on_host`` and ``run()``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from raptor_core import _core

from eagle.binding import Bound
from eagle.runtime import host_runtime

__all__ = ["Graph", "BuiltGraph", "OpaqueNode", "copy_results", "opaque", "plane_key", "node_planes"]


def plane_key(arr: Any) -> tuple:
    """Identity of a plane: the memory it occupies (two views of one buffer are one plane)."""
    a = np.asarray(arr)
    return (a.__array_interface__["data"][0], a.nbytes, a.dtype.str)


def copy_results(result: Any, writes: Mapping[str, np.ndarray], who: str) -> None:
    """Copies a foreign node's result (one value, or a tuple in the order of ``writes``) into
    its write planes, checking the count and each shape; ``who`` names the node's function in
    the messages (e.g. "eagle.graph.opaque node: fn")."""
    outs = result if isinstance(result, (tuple, list)) else (result,)
    if len(outs) != len(writes):
        raise ValueError(f"{who} returned {len(outs)} value(s) for {len(writes)} write plane(s) {list(writes)}")
    for (name, dst), value in zip(writes.items(), outs):
        src = np.asarray(value)
        if src.shape != dst.shape:
            raise ValueError(f"{who} returned shape {src.shape} for write plane '{name}', which has shape {dst.shape}")
        np.copyto(dst, src, casting="same_kind")


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
        return "opaque_host" if self.eager else "opaque_stream"

    @property
    def runs_on_host(self) -> bool:
        """Whether it needs the host each launch (every foreign node does on the CPU; on a
        GPU a stream-ordered node does too, since frameworks own their memory)."""
        return True

    def run(self) -> None:
        result = self.fn(*self.reads.values()) if (self.reads or self.writes) else self.fn()
        if self.writes:
            copy_results(result, self.writes, "eagle.graph.opaque node: fn")


def opaque(fn: Callable[..., Any], reads: Mapping[str, Any] | None = None, writes: Mapping[str, Any] | None = None, eager: bool = False) -> OpaqueNode:
    """A foreign node: ``fn`` runs each launch between the nodes before and after it."""
    return OpaqueNode(fn, reads or {}, writes or {}, eager)


def node_planes(node: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(reads, writes), name -> array, of a kernel or foreign node."""
    if isinstance(node, Bound):
        return node.reads(), node.writes()
    return dict(node.reads), dict(node.writes)


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
        """Appends a bound kernel launch (``plan.bind(...)``)."""
        if not isinstance(bound, Bound):
            raise TypeError(f"eagle.Graph.add takes a bound kernel (plan.bind(...)), got {type(bound).__name__}; use add_node for foreign nodes")
        self._nodes.append((self._name(name, bound.name), bound))
        return self

    def add_node(self, node: Any, name: str | None = None) -> "Graph":
        """Appends a foreign node (``eagle.graph.opaque`` or ``eagle.frameworks.jax.node``)."""
        if not all(hasattr(node, a) for a in ("run", "kind", "reads", "writes")):
            raise TypeError(f"eagle.Graph.add_node takes a foreign node (eagle.graph.opaque or eagle.frameworks.jax.node), got {type(node).__name__}")
        self._nodes.append((self._name(name, node.kind), node))
        return self

    def build(self, record: bool = False) -> "BuiltGraph":
        """Checks the rules of the module docstring and fixes the nodes into a launchable graph.
        ``record=True`` keeps what ``eagle.diff.reverse`` needs (see eagle/record.py)."""
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
        self.record = None
        if record:
            from eagle.record import Record

            self.record = Record(nodes)
        self._kernels_only = all(isinstance(node, Bound) for _, node in nodes)
        self._seq = [node._core for _, node in nodes if isinstance(node, Bound)]

    @property
    def schedule(self) -> tuple[str, ...]:
        """How the graph's segments run: on the CPU, one host schedule."""
        return ("host",)

    def launch(self, n: int = 1) -> None:
        """Runs every node in order, ``n`` times."""
        if n < 0:
            raise ValueError(f"eagle graph: launch count must be >= 0, got {n}")
        if self.record is not None:
            for _ in range(n):
                self.record.launch_once()
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

    def synchronize(self) -> None:
        """Waits for the graph's work; host launches are complete when launch returns."""

    def __repr__(self) -> str:
        return f"<eagle graph {[n for n, _ in self.nodes]}>"
