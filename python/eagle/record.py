"""Records of graph launches, for reverse sweeps (``eagle.diff.reverse``).

A graph built with ``record=True`` keeps, for every launch of every node, what the reverse
sweep needs to rebuild the state just before that node ran:
- the planes the node overwrites, copied before it overwrites them (Mutable planes and the
  mask of a kernel; the write planes of a foreign node);
- a kernel's Param values at that launch (numbers; on a GPU a Param bound to a device array
  is copied on the device);
- a Table's contents whenever they differ from the last copy recorded (tables are bound by
  reference, and an optimizer may change them between launches). On a GPU, telling would
  mean waiting for the device, so a device Table is copied at every launch.
Planes that no node writes are read from their arrays as they are when the sweep starts.

Host and GPU share this code: the copies go through an ``eagle.arrays`` module (NumPy, or
CuPy enqueueing device-to-device copies on the graph's stream, with no host round trip), and
each node is launched by the graph's own runner (``launch_once(run, stream)``).

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
from typing import Any, Callable

from eagle.arrays import ArrayModule, HostArrays
from eagle.binding import Bound
from eagle.nodes import node_planes, plane_key
from eagle.runtime import host_runtime

__all__ = ["Record", "NodeLaunch", "run_on_host"]


@dataclass
class NodeLaunch:
    """One node's launch in a record."""

    node: str
    saved: dict[tuple, Any]                 # plane key -> contents before the launch
    params: dict[str, Any] = field(default_factory=dict)  # name -> a float, or a 1-element device copy
    tables: dict[str, Any] = field(default_factory=dict)  # name -> contents at the launch
    rng: tuple[int, int, int] | None = None  # a Random kernel's key words and launch number n


def run_on_host(name: str, node: Any) -> None:
    """Runs one node on the host (a graph's runner for host graphs)."""
    if isinstance(node, Bound):
        node._core.launch(host_runtime())
    else:
        node.run()


class Record:
    """The launches of a graph built with ``record=True``, in order. ``xp`` is the array
    module of the graph's target (``eagle.arrays.for_target``)."""

    def __init__(self, nodes: list[tuple[str, Any]], xp: ArrayModule | None = None) -> None:
        self.nodes = nodes
        self.xp = xp if xp is not None else HostArrays()
        self.launches: list[list[NodeLaunch]] = []
        self.stream: Any = None  # the stream of the last recorded launch (GPU graphs)
        self._last_table: dict[tuple[str, str], Any] = {}
        # launch number -> [(node, eagle.events.EventModel, eagle.events.Refined)]: samples moved
        # to their stop rule's crossing after that launch (eagle.simulate(events="refine")).
        self.events: dict[int, list[tuple[str, Any, Any]]] = {}

    def __len__(self) -> int:
        return len(self.launches)

    @property
    def nbytes(self) -> int:
        """Bytes of plane copies the record holds."""
        return sum(int(a.nbytes) for launch in self.launches for nl in launch for a in nl.saved.values())

    def clear(self) -> None:
        """Forgets every recorded launch."""
        self.launches.clear()
        self._last_table.clear()
        self.events.clear()

    def launch_once(self, run: Callable[[str, Any], None] = run_on_host, stream: Any = None) -> None:
        """Runs every node once through ``run(name, node)``, recording each before it runs;
        on a GPU the copies are enqueued on ``stream``, before the node's own work."""
        xp = self.xp
        entries = []
        self.stream = stream
        for name, node in self.nodes:
            _, writes = node_planes(node)
            with xp.on_stream(stream):
                nl = NodeLaunch(name, {plane_key(a): xp.copy(a) for a in writes.values()})
                if isinstance(node, Bound):
                    nl.params = self._params(node)
                    nl.tables = self._tables(name, node)
                    if node.rng is not None:  # its draws: fold_in(key, n) of this launch n
                        nl.rng = (*node.rng, node.launch_count(stream))
            run(name, node)
            entries.append(nl)
        self.launches.append(entries)

    def _params(self, node: Bound) -> dict[str, Any]:
        out: dict[str, Any] = dict(node.params())  # the numbers
        for s in node.kernel.slots:
            if s.kind == "param" and s.name not in out:  # a device array read at each launch
                out[s.name] = self.xp.copy(node.arrays[s.name])
        return out

    def _tables(self, name: str, node: Bound) -> dict[str, Any]:
        out = {}
        for s in node.kernel.slots:
            if s.kind == "table":
                arr = node.arrays[s.name]
                last = self._last_table.get((name, s.name))
                if last is None or not self.xp.same(last, arr):
                    last = self._last_table[(name, s.name)] = self.xp.copy(arr)
                out[s.name] = last
        return out
