"""eagle: the raptor runtime.

Plans (``eagle.plan.auto``) compile hawk kernels; ``plan.bind(**arrays)`` ties one to arrays
by reference; ``eagle.Graph`` runs bound launches and foreign nodes in order; the JAX bridge
is ``eagle.frameworks.jax``; ``eagle.simulate`` runs a stepping model in one call, and a hawk
kernel called on arrays runs once (``eagle.call``). Definitions live in the submodules named
below.
"""

from eagle import call, diff, graph, interop, plan
from eagle.binding import Bound
from eagle.errors import ModeError
from eagle.graph import BuiltGraph, Graph
from eagle.loop import Report, Runner, until_done
from eagle.runtime import host_runtime
from eagle.simulate import SimResult, simulate

__version__ = "0.6.0"

__all__ = [
    "Bound", "BuiltGraph", "Graph", "ModeError", "Report", "Runner", "SimResult", "call", "diff", "graph",
    "host_runtime", "interop", "plan", "simulate", "until_done",
]
