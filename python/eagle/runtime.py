"""The process's host runtime: the one thread pool every host launch shares (eagle's plans,
graphs and loops, and the JAX bridge's XLA handlers). It is created in C++ on first use with
``$RAPTOR_NUM_THREADS`` threads (default: all cores); see cpp/runtime/shared_pool.hpp.
"""

from __future__ import annotations

from raptor_core import _core

__all__ = ["host_runtime"]


def host_runtime() -> _core.Runtime:
    """The shared host thread pool."""
    return _core.shared_runtime()
