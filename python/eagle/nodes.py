"""The node protocol that graphs, records, reverse sweeps and the JAX node share.

A graph node is either a bound kernel launch (``eagle.binding.Bound``, or its GPU subclass
``eagle.cuda.CudaBound``) or a *foreign node*: any object with

- ``kind`` (str): its name in messages and the default node name ('opaque_stream',
  'opaque_host', ...);
- ``reads`` and ``writes`` (name -> array): the planes it reads and the planes it overwrites;
- ``runs_on_host`` (bool): whether it needs the host each launch (a stepping loop on a GPU
  refuses such a node);
- ``run()``: one launch on the host;
- optionally ``node_kind`` (str): how a GPU graph schedules it, when that differs from
  ``kind`` (the JAX node says 'jax': it is ``kind`` 'opaque_stream' in messages, but runs as
  an 'eager_stream' segment).

Start at ``node_planes`` and ``plane_key``: every rule about planes (one writer per plane, the
record's copies, the reverse sweep's cotangents) works on plane keys, the memory a plane
occupies, so two views of one buffer are one plane. ``copy_results`` copies a foreign node's
result into its host write planes (the GPU copy is ``eagle.graph.DeviceGraph``'s).

This module imports nothing of eagle but ``eagle.binding``, so graph, record and diff all
import it and not each other.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np

from eagle.binding import Bound

__all__ = ["ForeignNode", "copy_results", "is_foreign_node", "node_kind", "node_planes", "plane_key", "result_values"]

_KDLCUDA, _KDLCUDA_MANAGED = 2, 13


@runtime_checkable
class ForeignNode(Protocol):
    """What a graph needs of a node that is not a bound kernel (module docstring)."""

    kind: str
    reads: Mapping[str, Any]
    writes: Mapping[str, Any]
    runs_on_host: bool

    def run(self) -> None:
        """One launch on the host: read ``reads``, overwrite ``writes``."""


def is_foreign_node(node: Any) -> bool:
    """Whether ``node`` has the foreign-node protocol's attributes."""
    return all(hasattr(node, a) for a in ("run", "kind", "reads", "writes"))


def node_kind(node: Any) -> str:
    """'kernel' (a bound launch), 'jax' (eagle.frameworks.jax.node), or a foreign node's own
    kind ('opaque_stream', 'opaque_host')."""
    if isinstance(node, Bound):
        return "kernel"
    return str(getattr(node, "node_kind", node.kind))


def node_planes(node: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(reads, writes), name -> array, of a kernel or foreign node."""
    if isinstance(node, Bound):
        return node.reads(), node.writes()
    return dict(node.reads), dict(node.writes)


def _on_device(arr: Any) -> bool:
    if isinstance(arr, np.ndarray):
        return False
    if hasattr(arr, "__cuda_array_interface__"):
        return True
    dev = getattr(arr, "__dlpack_device__", None)
    return dev is not None and hasattr(arr, "__dlpack__") and int(dev()[0]) in (_KDLCUDA, _KDLCUDA_MANAGED)


def plane_key(arr: Any) -> tuple:
    """Identity of a plane: the memory it occupies (two views of one buffer are one plane).
    Host: (address, nbytes, dtype); GPU (``__cuda_array_interface__`` or a CUDA DLPack tensor):
    ('cuda', device ordinal, address, nbytes, dtype)."""
    if _on_device(arr):
        from eagle import cuda

        v = cuda.view(arr)
        return ("cuda", v.device, v.ptr, v.nbytes, v.dtype.str)
    a = np.asarray(arr)
    return (a.__array_interface__["data"][0], a.nbytes, a.dtype.str)


def result_values(result: Any, writes: Mapping[str, Any], who: str) -> tuple:
    """A foreign node's result as one value per write plane (one value, or a tuple/list in the
    order of ``writes``); raises ValueError when the count differs. ``who`` names the node's
    function in the message (e.g. "eagle.graph.opaque node: fn")."""
    outs = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(outs) != len(writes):
        raise ValueError(f"{who} returned {len(outs)} value(s) for {len(writes)} write plane(s) {list(writes)}")
    return outs


def copy_results(result: Any, writes: Mapping[str, np.ndarray], who: str) -> None:
    """Copies a foreign node's result into its host write planes, checking the count and each
    shape (``result_values``)."""
    for (name, dst), value in zip(writes.items(), result_values(result, writes, who)):
        src = np.asarray(value)
        if src.shape != dst.shape:
            raise ValueError(f"{who} returned shape {src.shape} for write plane '{name}', which has shape {dst.shape}")
        np.copyto(dst, src, casting="same_kind")
