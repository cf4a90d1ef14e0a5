"""Reverse-mode gradients through recorded graph launches (docs/runtime.md).

``reverse(record, seeds, vjps={})`` walks a record (eagle/record.py) backwards. It keeps a
copy of every plane's state, rebuilt launch by launch from the record's saved copies (the
user's arrays are never written), and a cotangent per plane. For a kernel node it launches
the kernel's adjoint kernel (hawk's derivative, compiled like any kernel, for the node's
target and cache directory) with respect to every float input; for a foreign node it calls
``vjps[node](primals, cotangents)``, where primals maps the node's read planes to their
values at that launch and cotangents its write planes to theirs, and which returns
cotangents for (some of) the read planes.

Seeds are ``{"node.plane": cotangent}``: the cotangent of a plane as the graph left it; a
plane's own name (``{"x": cotangent}``) names the plane of that name whichever node binds it.
The result maps each plane read by the graph (by the name it was bound under) to its
cotangent, and each kernel's Params to theirs as ``"node.param"``.

Host and GPU records run this same code: every array operation goes through the record's
array module (``eagle.arrays``: NumPy, or CuPy on the record's stream). On a GPU the adjoint
kernels are CUDA plans launched on that stream, the primals and cotangents a VJP receives are
CuPy arrays, and what it returns may be any array with ``__cuda_array_interface__`` or
DLPack (CuPy, JAX, PyTorch); the cotangents returned are CuPy arrays, the Params' floats.
A record of ``eagle.simulate(..., events="refine", record=True)`` keeps the samples moved to
their stop's crossing after a launch (``record.events``): their cotangents go through the
refined step with the event time's sensitivity (implicit function theorem; eagle/events.py)
instead of through that launch.
Each kernel node's adjoint is bound once, to buffers the sweep owns (state and cotangent
planes updated in place), so a sweep allocates nothing per launch for kernels.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import eagle.plan
from eagle import events
from eagle.arrays import ArrayModule
from eagle.binding import Bound
from eagle.nodes import node_planes, plane_key
from eagle.record import NodeLaunch, Record

__all__ = ["reverse"]

# (kernel digest, wrt, target, cache dir) -> the adjoint kernel's plan: two cache directories
# in one process never share a plan.
_adjoint_plans: dict[tuple[str, tuple[str, ...], str, str | None], Any] = {}


def _adjoint_plan(bound: Bound, wrt: tuple[str, ...]) -> Any:
    target = bound.plan.target
    cache_dir = bound.plan.cache_dir
    key = (bound.kernel.digest(bound.dtype.name), wrt, target, cache_dir)
    plan = _adjoint_plans.get(key)
    if plan is None:
        (plan,) = eagle.plan.auto([bound.kernel.adjoint(list(wrt))], targets=(target,), cache_dir=cache_dir)
        _adjoint_plans[key] = plan
    return plan


class _Sweep:
    """The state of one reverse sweep: planes' values and cotangents by plane key."""

    def __init__(self, xp: ArrayModule, state: dict[tuple, Any]) -> None:
        self.xp = xp
        self.state = state
        self.ct: dict[tuple, Any] = {}
        self.params: dict[str, Any] = {}  # "node.param" -> a 1-element float64 accumulator

    def ct_of(self, key: tuple) -> Any:
        """The cotangent of a plane (zeros at first; floats for the bool mask). Updated in
        place from then on, so an adjoint bound to it sees each launch's value."""
        c = self.ct.get(key)
        if c is None:
            s = self.state[key]
            c = self.ct[key] = self.xp.zeros_like(s, dtype=s.dtype if s.dtype != bool else "float64")
        return c


def reverse(record: Record, seeds: Mapping[str, Any], vjps: Mapping[str, Callable[..., Any]] | None = None, stream: Any = None) -> dict[str, Any]:
    """Gradients of the seeded planes with respect to the graph's input planes and Params.
    On a GPU the sweep runs on ``stream`` (default: the stream of the record's last launch)."""
    if record is None or not isinstance(record, Record):
        raise TypeError("eagle.diff.reverse: pass graph.record of a graph built with build(record=True)")
    vjps = dict(vjps or {})
    from eagle.stages import refuse_reverse

    refuse_reverse(record.nodes)
    nodes = dict(record.nodes)
    for name, node in record.nodes:
        if not isinstance(node, Bound) and name not in vjps and any(name == nl.node for launch in record.launches for nl in launch):
            raise ValueError(f"eagle.diff.reverse: foreign node '{name}' has no VJP; pass vjps={{'{name}': fn}} with fn(primals, cotangents) -> cotangents of its reads")
        if isinstance(node, Bound) and any(s.kind == "table_sum" and s.inout for s in node.kernel.slots):
            target = next(s.name for s in node.kernel.slots if s.kind == "table_sum" and s.inout)
            raise ValueError(f"eagle.diff.reverse: node '{name}' (kernel '{node.kernel.name}') scatters into '{target}' "
                             "(hawk.scatter), which this reverse sweep does not differentiate yet; differentiate it through "
                             "eagle.frameworks.jax (jax.grad / jax.vjp), which does")
        folds = [s for s in node.kernel.slots if s.kind == "param_sum" and s.combine != "sum"] if isinstance(node, Bound) else []
        if folds:
            raise ValueError(f"eagle.diff.reverse: node '{name}' (kernel '{node.kernel.name}') takes hawk.{folds[0].combine}() "
                             f"into '{folds[0].name}', which this reverse sweep does not differentiate yet (its adjoint needs the "
                             "winning sample, a result of its own kernel); differentiate it through eagle.frameworks.jax "
                             "(jax.grad / jax.vjp), which does")
    targets: list[tuple[str, Any]] = []
    for target in seeds:
        if "." not in target:  # a plane's own name: the plane of that name any node binds
            arr = _plane_named(record, target)
            targets.append((target, arr))
            continue
        node_name, _, plane = target.partition(".")
        if node_name not in nodes:
            raise KeyError(f"eagle.diff.reverse: seed {target!r} names no node (nodes: {list(nodes)})")
        reads, writes = node_planes(nodes[node_name])
        arr = writes.get(plane, reads.get(plane))
        if arr is None:
            raise KeyError(f"eagle.diff.reverse: node '{node_name}' has no plane '{plane}'")
        targets.append((target, arr))

    xp = record.xp
    s = record.stream if stream is None else stream
    if xp.device and stream is not None and record.stream is not None and stream != record.stream:
        _order_after(record.stream, stream)
    with xp.on_stream(s):
        return _sweep(record, nodes, xp, seeds, targets, vjps, s)


def _plane_named(record: Record, name: str) -> Any:
    """The array bound as plane ``name`` in the record's nodes (a seed given by the plane's own
    name, as ``eagle.simulate``'s records are seeded); KeyError when no node binds it, or when
    nodes bind different arrays under that name (then say "node.plane")."""
    found: dict[tuple, Any] = {}
    for _, node in record.nodes:
        reads, writes = node_planes(node)
        arr = writes.get(name, reads.get(name))
        if arr is not None:
            found.setdefault(plane_key(arr), arr)
    if not found:
        raise KeyError(f"eagle.diff.reverse: seed {name!r} names no plane of the record's nodes "
                       f"(nodes: {[n for n, _ in record.nodes]}; a seed is 'plane' or 'node.plane')")
    if len(found) > 1:
        raise KeyError(f"eagle.diff.reverse: nodes bind different arrays as {name!r}; seed 'node.{name}'")
    return next(iter(found.values()))


def _order_after(first: Any, then: Any) -> None:
    """Makes stream ``then`` wait for the work enqueued so far on ``first`` (no host wait)."""
    from raptor_core import _core

    from eagle import cuda

    event = _core.CudaEvent()
    event.record(cuda.stream_handle(first))
    event.wait(cuda.stream_handle(then))


def _sweep(record: Record, nodes: dict[str, Any], xp: ArrayModule, seeds: Mapping[str, Any], targets: list[tuple[str, Any]], vjps: dict, stream: Any) -> dict[str, Any]:
    names: dict[tuple, str] = {}           # plane key -> a name it was bound under
    state: dict[tuple, Any] = {}           # plane key -> its value (a copy the sweep owns)
    read_keys: list[tuple] = []
    for name, node in record.nodes:
        reads, writes = node_planes(node)
        for plane, arr in list(reads.items()) + list(writes.items()):
            key = plane_key(arr)
            if key not in state:
                state[key] = xp.copy(arr)
            names.setdefault(key, plane)
        for arr in reads.values():
            if plane_key(arr) not in read_keys:
                read_keys.append(plane_key(arr))
    sw = _Sweep(xp, state)
    for target, arr in targets:
        key = plane_key(arr)
        c = sw.ct_of(key)
        xp.add_into(c, xp.value(seeds[target], tuple(c.shape), c.dtype, f"eagle.diff.reverse: seed {target!r}"))

    adjoints: dict[str, _Adjoint] = {}
    for number in range(len(record.launches) - 1, -1, -1):
        launch = record.launches[number]
        for nl in reversed(launch):
            node = nodes[nl.node]
            for key, saved in nl.saved.items():  # the state just before this node ran
                xp.assign(state[key], saved)
            if isinstance(node, Bound):
                adj = adjoints.get(nl.node)
                if adj is None:
                    adj = adjoints[nl.node] = _Adjoint(nl.node, node, sw)
                # Samples moved to their stop's crossing after this launch (events="refine"):
                # their cotangents go through the refined step (eagle/events.py), not this one.
                refined = [(m, r) for n, m, r in record.events.get(number, ()) if n == nl.node]
                pre = [events.reverse_before(sw, node, m, r) for m, r in refined]
                adj.run(nl, stream)
                for (m, r), p in zip(refined, pre):
                    events.reverse_after(sw, nl.node, node, nl, m, r, p)
            else:
                _foreign_vjp(nl.node, node, vjps[nl.node], sw)
    for adj in adjoints.values():
        adj.finish(stream)

    out: dict[str, Any] = {}
    for key in read_keys:
        if key in sw.ct:
            out[names[key]] = sw.ct[key]
        elif state[key].dtype.kind == "f":  # the mask and integer planes have no gradient
            out[names[key]] = xp.zeros_like(state[key])
    for name, acc in sw.params.items():
        out[name] = xp.to_float(acc)
    return out


class _Adjoint:
    """One kernel node's adjoint kernel, bound once to the sweep's arrays: the primal planes to
    the sweep's state, the cotangent planes to the sweep's cotangents (an in-out plane's
    updated in place), Params and Tables to buffers filled per launch, and the cotangents of
    the inputs to scratch planes that are added into the sweep's after each launch."""

    def __init__(self, name: str, node: Bound, sw: _Sweep) -> None:
        kernel = node.kernel
        xp = sw.xp
        self.name, self.node, self.sw = name, node, sw
        # Integer and bool planes carry no derivative: they stay primal inputs of the adjoint.
        self.wrt = tuple(
            s.name for s in kernel.slots if s.is_float and (s.kind in ("plane", "param", "table") or (s.kind == "mutable" and s.inout))
        )
        self.bound = None
        # Pure outputs are overwritten by the node for the samples live in the launch: their
        # earlier values get no cotangent there (a finished sample's keeps the value an earlier
        # launch wrote, and its cotangent goes back to that launch). An integer one has none.
        self.overwritten = [plane_key(node.arrays[s.name]) for s in kernel.slots if s.kind == "mutable" and not s.inout and s.is_float]
        mask = next((s.name for s in kernel.slots if s.kind == "terminated"), None)
        self.mask = plane_key(node.arrays[mask]) if mask is not None else None  # (the state holds it as it was before the launch)
        if not self.wrt:
            return
        plan = _adjoint_plan(node, self.wrt)
        adj = plan.kernel
        primal_slot = {s.name: s for s in kernel.slots}
        values: dict[str, Any] = {}
        self.param_bufs: list[tuple[str, Any]] = []   # (primal Param, 1-element buffer)
        self.table_bufs: list[tuple[str, Any]] = []   # (primal Table, buffer)
        self.scratch: list[tuple[str, Any, Any]] = []  # ("param", "node.param", array) or ("plane", plane key, array)
        for s, (role, primal) in zip(adj.slots, adj._core.slot_roles()):
            src = primal_slot.get(primal)
            key = plane_key(node.arrays[primal]) if src is not None and src.kind not in ("param", "random") else None
            if role == "p":
                if src.kind == "random":  # the recorded launch's key, set per launch (run)
                    values[s.name] = 0
                elif src.kind == "param":
                    buf = values[s.name] = xp.zeros((1,), node.dtype if src.is_float else src.dtype)
                    self.param_bufs.append((primal, buf))
                elif src.kind == "table":
                    buf = values[s.name] = xp.zeros_like(sw.state[key])
                    self.table_bufs.append((primal, buf))
                else:
                    values[s.name] = sw.state[key]
            elif s.kind == "plane" or (s.kind == "mutable" and s.inout):  # ct of an output (in-out: in, then the input's out)
                values[s.name] = sw.ct_of(key)
            elif s.kind == "mutable":
                arr = values[s.name] = xp.zeros_like(sw.state[key])
                self.scratch.append(("plane", key, arr))
            elif s.kind == "param_sum":
                arr = values[s.name] = xp.zeros((s.width,), node.dtype)
                self.scratch.append(("param", f"{name}.{primal}", arr))
            elif s.kind == "table_sum":
                arr = values[s.name] = xp.zeros_like(sw.state[key])
                self.scratch.append(("plane", key, arr))
        self._tables_from: dict[str, int] = {}
        self.bound = plan.bind(**values)
        self.device = plan.target == "cuda"

    def run(self, nl: NodeLaunch, stream: Any) -> None:
        """The adjoint of one recorded launch of the node."""
        xp, sw = self.sw.xp, self.sw
        if self.bound is not None:
            for primal, buf in self.param_bufs:
                xp.assign(buf, nl.params[primal])
            for primal, buf in self.table_bufs:
                table = nl.tables[primal]
                if self._tables_from.get(primal) != id(table):  # a record shares unchanged tables
                    xp.assign(buf, table)
                    self._tables_from[primal] = id(table)
            for _, _, arr in self.scratch:
                xp.assign(arr, 0.0)
            if nl.rng is not None:  # the primal launch's draws: fold_in(key, its n)
                self.bound.set_rng(*nl.rng, stream)
            if self.device:
                self.bound.launch(stream)
            else:
                self.bound.reset_active()  # an active set is rebuilt from this launch's mask
                self.bound.launch()
        for key in self.overwritten:
            if self.mask is None:
                xp.assign(sw.ct_of(key), 0.0)
            else:
                xp.zero_live(sw.ct_of(key), sw.state[self.mask])
        for kind, to, arr in self.scratch:
            if kind == "param":
                acc = sw.params.get(to)
                if acc is None:
                    acc = sw.params[to] = xp.zeros((1,), "float64")
                xp.add_into(acc, arr[0:1])
            else:
                xp.add_into(sw.ct_of(to), arr)

    def finish(self, stream: Any) -> None:
        """Raises a pending kernel error of the adjoint's launches (GPU)."""
        if self.bound is not None and self.device:
            self.bound.synchronize(stream)


def _foreign_vjp(name: str, node: Any, vjp: Callable, sw: _Sweep) -> None:
    xp = sw.xp
    reads, writes = node_planes(node)
    primals = {p: xp.copy(sw.state[plane_key(a)]) for p, a in reads.items()}
    cotangents = {p: xp.copy(sw.ct_of(plane_key(a))) for p, a in writes.items()}
    result = vjp(primals, cotangents) or {}
    for p, a in writes.items():  # overwritten by this node
        xp.assign(sw.ct_of(plane_key(a)), 0.0)
    converted = []
    for p, value in result.items():
        if p not in reads:
            raise KeyError(f"eagle.diff.reverse: the VJP of node '{name}' returned a cotangent for '{p}', which it does not read (reads: {list(reads)})")
        c = sw.ct_of(plane_key(reads[p]))
        converted.append(xp.value(value, tuple(c.shape), c.dtype, f"eagle.diff.reverse: the VJP of node '{name}': the cotangent of '{p}'"))
        xp.add_into(c, converted[-1])
    xp.keep_until_done((primals, cotangents, result, converted))  # a framework may still read or own them
