"""The JAX internals the bridge relies on, each behind a version guard (issue 10: no unguarded
``jax._src`` access). Everything else the bridge uses is public JAX API.

JAX has no public API for two things the bridge needs, so it writes into two internal sets,
only where it has checked that the set is the one it expects:

- ``jax._src.export._export._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE``: the custom call targets
  ``jax.export`` serializes without ``disabled_checks``. Marking ``raptor_kernel`` stable lets
  users export functions calling kernels as they export any function. The public alternative,
  which always works, is ``disabled_checks=eagle.frameworks.jax.export_checks()``
  (``jax.export.DisabledSafetyCheck.custom_call``).
- ``jax._src.dispatch.prim_requires_devices_during_lowering``: the primitives whose lowering
  is given the device assignment. The bridge's lowering splits a call over the devices that
  hold the samples (custom partitioning, eagle/frameworks/_jax_sharding.py), which needs it.

The guard (``_checked_set``): the JAX version lies in ``TESTED`` (the range the test command
runs: jax 0.11.2 and 0.12), the module and the name exist, the object is a plain ``set``,
every member has the expected type, and it holds a sentinel JAX itself puts there (members
JAX registers at import), which shows that it is the set JAX reads. Anything else and the
bridge does not touch it. Outside the guard nothing warns; what stops working is said by
``status()`` and in docs/jax.md ("JAX internals raptor relies on"):

- export: ``jax.export.export`` of a function calling a kernel raises JAX's "custom calls whose
  targets have no compatibility guarantees" error unless it is given
  ``disabled_checks=eagle.frameworks.jax.export_checks()``;
- sharding: under ``jit`` with planes sharded over several devices, XLA gathers the planes and
  runs the call on every device (the same numbers, more memory and time), instead of each
  device running its own shard.

Start at ``mark_export_stable`` and ``require_devices_at_lowering``.
"""

from __future__ import annotations

import importlib
import re
import threading
from typing import Any, Callable

import jax

__all__ = ["TESTED", "in_tested_range", "jax_version", "mark_export_stable", "require_devices_at_lowering", "status"]

# The JAX versions whose internals were checked to be what this module expects: [first, end).
TESTED: tuple[tuple[int, int, int], tuple[int, int, int]] = ((0, 11, 2), (0, 13, 0))

_EXPORT_SET = ("jax._src.export._export", "_CUSTOM_CALL_TARGETS_GUARANTEED_STABLE")
_DEVICES_SET = ("jax._src.dispatch", "prim_requires_devices_during_lowering")

_lock = threading.Lock()
_status: dict[str, str] = {}


def jax_version(version: str | None = None) -> tuple[int, int, int] | None:
    """``jax.__version__`` (or ``version``) as (major, minor, patch); None when unreadable."""
    text = jax.__version__ if version is None else version
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", str(text))
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def in_tested_range(version: str | None = None) -> bool:
    """Whether the running JAX (or ``version``) lies in ``TESTED``."""
    v = jax_version(version)
    return v is not None and TESTED[0] <= v < TESTED[1]


def _range_text() -> str:
    (a, b, c), (d, e, _) = TESTED
    return f"{a}.{b}.{c} .. {d}.{e - 1}.x"


def _checked_set(where: tuple[str, str], member_type: type, sentinels: Callable[[], tuple[Any, ...]]) -> tuple[set | None, str]:
    """The internal set at ``where`` when every check of the guard holds, else (None, why)."""
    module_name, attr = where
    name = f"{module_name}.{attr}"
    if not in_tested_range():
        return None, f"{name} not used: jax {jax.__version__} is outside the tested range {_range_text()}"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None, f"{name} not used: this jax has no module {module_name}"
    target = getattr(module, attr, None)
    if type(target) is not set:
        return None, f"{name} not used: it is {type(target).__name__}, not the set raptor expects"
    if not all(isinstance(x, member_type) for x in target):
        return None, f"{name} not used: it holds members other than {member_type.__name__}"
    try:
        expected = sentinels()
    except (ImportError, AttributeError) as e:
        return None, f"{name} not used: its sentinel could not be found ({e})"
    if not expected or not all(s in target for s in expected):
        return None, f"{name} not used: it lacks the members JAX puts there ({', '.join(map(str, expected))})"
    return target, ""


def _export_sentinels() -> tuple[Any, ...]:
    # The internal module must be the one jax.export is: its DisabledSafetyCheck is the
    # public class, and its set holds the sharding targets JAX itself always lists.
    module = importlib.import_module(_EXPORT_SET[0])
    if module.DisabledSafetyCheck is not jax.export.DisabledSafetyCheck:
        raise AttributeError(f"{_EXPORT_SET[0]} is not the module jax.export uses")
    return ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")


def _devices_sentinels() -> tuple[Any, ...]:
    # JAX puts custom_partitioning's own primitive there (the same need as the bridge's), and
    # reads the set in jaxpr_has_prim_requiring_devices.
    module = importlib.import_module(_DEVICES_SET[0])
    if not callable(getattr(module, "jaxpr_has_prim_requiring_devices", None)):
        raise AttributeError(f"{_DEVICES_SET[0]} has no jaxpr_has_prim_requiring_devices, which reads the set")
    from jax.experimental import custom_partitioning

    return (custom_partitioning.custom_partitioning_p,)


def mark_export_stable(target: str) -> bool:
    """Adds the custom call ``target`` to the targets ``jax.export`` serializes without
    ``disabled_checks``, where the guard holds. Returns whether it did; when not, export needs
    ``disabled_checks=[jax.export.DisabledSafetyCheck.custom_call(target)]``."""
    found, why = _checked_set(_EXPORT_SET, str, _export_sentinels)
    with _lock:
        if found is None:
            _status["export"] = why + f"; jax.export of a kernel call needs disabled_checks=eagle.frameworks.jax.export_checks()"
            return False
        found.add(target)
        _status["export"] = f"{'.'.join(_EXPORT_SET)}: '{target}' marked stable (jax {jax.__version__})"
        return True


def require_devices_at_lowering(primitive: Any) -> bool:
    """Adds ``primitive`` to the primitives whose lowering gets the device assignment, where
    the guard holds. Returns whether it did; when not, calls sharded over several devices are
    gathered and run whole on each device (the same results)."""
    from jax.extend.core import Primitive

    if not isinstance(primitive, Primitive):
        raise TypeError(f"require_devices_at_lowering takes a jax.extend.core.Primitive, got {type(primitive).__name__}")
    found, why = _checked_set(_DEVICES_SET, Primitive, _devices_sentinels)
    with _lock:
        if found is None:
            _status["sharding"] = why + "; calls sharded over several devices are gathered and run whole on each device"
            return False
        found.add(primitive)
        _status["sharding"] = f"{'.'.join(_DEVICES_SET)}: '{primitive.name}' added (jax {jax.__version__})"
        return True


def status() -> dict[str, str]:
    """For each internal the bridge tried to use ('export', 'sharding'): what it did, or why it
    did not and what works differently."""
    with _lock:
        return dict(_status)
