"""eagle: the raptor runtime.

Plans (``eagle.plan.auto``) compile hawk kernels; ``plan.bind(**arrays)`` ties one to arrays
by reference; ``eagle.Graph`` runs bound launches and foreign nodes in order; the JAX bridge
is ``eagle.frameworks.jax``. Definitions live in the submodules named below.
"""

from eagle import plan
from eagle.binding import Bound
from eagle.errors import ModeError
from eagle.graph import BuiltGraph, Graph
from eagle.runtime import host_runtime

__version__ = "0.6.0"

__all__ = ["Bound", "BuiltGraph", "Graph", "ModeError", "host_runtime", "plan"]
