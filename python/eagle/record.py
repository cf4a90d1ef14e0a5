"""Records of graph launches, for reverse sweeps (``eagle.diff.reverse``).

A graph built with ``record=True`` keeps, for every launch of every node, what the reverse
sweep needs to rebuild the state just before that node ran:
- the planes the node overwrites, copied before it overwrites them (Mutable planes and the
  mask of a kernel; the write planes of a foreign node);
- a kernel's Param values at that launch;
- a Table's contents whenever they differ from the last copy recorded (tables are bound by
  reference, and an optimizer may change them between launches).
Planes that no node writes are read from their arrays as they are when the sweep starts.

Memory: each recorded launch of a node adds one copy of the planes it writes, so a record
grows by (bytes the graph writes per launch) x launches: 200 launches of a step over three
float64 planes of 10^6 samples keep 200 x 24 MB = 4.8 GB. When that does not fit, record a
window: build a graph with ``record=True`` for the last k launches only, run the earlier
launches without a record, and checkpoint: keep copies of the planes at chosen launches
yourself and replay the recorded graph from each checkpoint in turn (``Record.clear()``
empties a record between windows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eagle.binding import Bound
from eagle.graph import node_planes, plane_key
from eagle.runtime import host_runtime

__all__ = ["Record", "NodeLaunch"]


@dataclass
class NodeLaunch:
    """One node's launch in a record."""

    node: str
    saved: dict[tuple, np.ndarray]                 # plane key -> contents before the launch
    params: dict[str, float] = field(default_factory=dict)
    tables: dict[str, np.ndarray] = field(default_factory=dict)  # name -> contents at the launch


class Record:
    """The launches of a graph built with ``record=True``, in order."""

    def __init__(self, nodes: list[tuple[str, Any]]) -> None:
        self.nodes = nodes
        self.launches: list[list[NodeLaunch]] = []
        self._last_table: dict[tuple[str, str], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.launches)

    @property
    def nbytes(self) -> int:
        """Bytes of plane copies the record holds."""
        return sum(a.nbytes for launch in self.launches for nl in launch for a in nl.saved.values())

    def clear(self) -> None:
        """Forgets every recorded launch."""
        self.launches.clear()
        self._last_table.clear()

    def launch_once(self) -> None:
        """Runs every node once, recording each before it runs."""
        rt = host_runtime()
        entries = []
        for name, node in self.nodes:
            _, writes = node_planes(node)
            saved = {plane_key(a): np.array(a, copy=True) for a in writes.values()}
            nl = NodeLaunch(name, saved)
            if isinstance(node, Bound):
                nl.params = node.params()
                for s in node.kernel.slots:
                    if s.kind == "table":
                        arr = node.arrays[s.name]
                        last = self._last_table.get((name, s.name))
                        if last is None or not np.array_equal(last, arr):
                            last = self._last_table[(name, s.name)] = arr.copy()
                        nl.tables[s.name] = last
                node._core.launch(rt)
            else:
                node.run()
            entries.append(nl)
        self.launches.append(entries)
