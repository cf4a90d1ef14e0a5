"""Graphs: bound kernel launches (and foreign nodes) run in order, many times (SPEC §2).

``Graph().add(bound, name=...)`` / ``.add_node(node, name=...)`` collect nodes; ``build()``
fixes them into a ``BuiltGraph`` whose ``launch(n)`` runs every node in order n times. A
graph of kernels only runs its launches in C++ with no Python between them. On the host
``schedule`` is ``('host',)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from raptor_core import _core

from eagle.binding import Bound
from eagle.runtime import host_runtime

__all__ = ["Graph", "BuiltGraph", "OpaqueNode", "opaque"]


@dataclass
class OpaqueNode:
    """A foreign step between kernel launches: ``fn()`` is called each launch.

    ``kind`` is ``"opaque_stream"`` (stream-ordered; on the host it is a plain call) or
    ``"opaque_host"`` (``eager=True``: a host call that may read values back).
    """

    fn: Callable[[], Any]
    reads: Mapping[str, Any] = field(default_factory=dict)
    writes: Mapping[str, Any] = field(default_factory=dict)
    eager: bool = False

    @property
    def kind(self) -> str:
        return "opaque_host" if self.eager else "opaque_stream"

    def run(self) -> None:
        self.fn()


def opaque(fn: Callable[[], Any], reads: Mapping[str, Any] | None = None, writes: Mapping[str, Any] | None = None, eager: bool = False) -> OpaqueNode:
    """The general foreign node: ``fn()`` runs each launch, after the nodes before it and
    before the nodes after it. ``reads``/``writes`` name the planes it uses (for ordering
    checks and records). ``eager=True`` makes it a host node that may read values back."""
    if not callable(fn):
        raise TypeError(f"eagle.graph.opaque: fn must be callable, got {type(fn).__name__}")
    return OpaqueNode(fn, dict(reads or {}), dict(writes or {}), bool(eager))


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
        """Appends a bound kernel launch."""
        if not isinstance(bound, Bound):
            raise TypeError(f"eagle.Graph.add takes a bound kernel (plan.bind(...)), got {type(bound).__name__}; use add_node for foreign nodes")
        self._nodes.append((self._name(name, bound.name), bound))
        return self

    def add_node(self, node: Any, name: str | None = None) -> "Graph":
        """Appends a foreign node (``eagle.graph.opaque`` or ``eagle.frameworks.jax.node``)."""
        if not hasattr(node, "run") or not hasattr(node, "kind"):
            raise TypeError(f"eagle.Graph.add_node takes a foreign node (eagle.graph.opaque or eagle.frameworks.jax.node), got {type(node).__name__}")
        self._nodes.append((self._name(name, node.kind), node))
        return self

    def build(self, record: bool = False) -> "BuiltGraph":
        """Fixes the nodes into a launchable graph. ``record=True`` keeps what a reverse sweep
        needs (eagle.diff.reverse)."""
        if not self._nodes:
            raise ValueError("eagle.Graph.build: the graph has no nodes")
        return BuiltGraph(list(self._nodes), record)


class BuiltGraph:
    """A built graph: ``launch(n)`` runs every node in order n times."""

    def __init__(self, nodes: list[tuple[str, Any]], record: bool) -> None:
        self.nodes = nodes
        self._record_on = record
        self.record = None
        if record:
            raise NotImplementedError(
                "eagle graph: build(record=True) (records for eagle.diff.reverse) is not available in this version yet"
            )
        self._kernels_only = all(isinstance(node, Bound) for _, node in nodes)
        self._seq = [node._core for _, node in nodes if isinstance(node, Bound)]

    @property
    def schedule(self) -> tuple[str, ...]:
        """How the graph's segments run: one host schedule on the CPU."""
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
        """Waits for the graph's work: launches on the host are already complete."""

    def __repr__(self) -> str:
        return f"<eagle graph {[n for n, _ in self.nodes]}>"
