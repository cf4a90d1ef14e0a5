"""At interpreter exit, raptor's Python objects let go of their C++ handles, so a program that
uses the JAX bridge exits without nanobind's "leaked N instances" report (issue 10, hole 5).

Why this is needed (the root cause, reproduced and tested in tests/test_exit_clean.py):
jaxlib's pytree registry is a C++ object that is never freed. Registering a class as a pytree
node (every ``equinox.Module`` subclass, such as a diffrax vector field or model class, or any
``jax.tree_util.register_pytree_node`` / ``register_dataclass``) makes the registry hold the
class and its flatten functions, and through their ``__globals__`` the globals dict of the
module that defined them. CPython clears the globals of modules still alive at shutdown, but
not the dict of a module object already freed; a script's ``__main__`` module is freed early,
so its dict, kept alive by the registry, is never cleared. Everything the script holds in a
global (its hawk kernels, its ``eagle.frameworks.jax`` functions, their plans) then lives
forever, and nanobind reports the C++ handles inside them when it shuts down. Nothing in
raptor's bindings is miscounted: the same program without a kernel leaks plain Python objects
silently.

raptor cannot make the user's globals die, but it owns what its objects hold. ``release()``
runs at exit (an ``atexit`` hook installed with the bridge; it runs after the program and
after JAX's pending effects, ``jax.effects_barrier``): every live object of a hawk or eagle
class gives up the ``raptor_core._core`` instances it references (attributes, and lists,
dicts, sets and tuples in them), each replaced by a ``Released`` marker that names what was
released if anything touches it later. The compiled kernels stay registered in C++ (an XLA
call still in flight keeps running). Instances that user code holds directly (say the result of
``kernel.interface()`` in a global) are the user's and are left alone.

Start at ``release``.
"""

from __future__ import annotations

import atexit
import gc
import sys
import threading
from typing import Any

__all__ = ["Released", "install", "release"]

_CORE_MODULE = "raptor_core._core"
_OWNER_PACKAGES = ("hawk", "eagle")
_installed = False
_lock = threading.Lock()


class Released:
    """What a raptor object holds in place of a C++ handle released at interpreter exit."""

    __slots__ = ("_what",)

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(
            f"raptor: the {self._what} was released at interpreter exit (eagle.frameworks._jax_exit); "
            f"'{name}' cannot be used after the program has ended"
        )

    def __repr__(self) -> str:
        return f"<released {self._what}>"


def _is_core(value: Any) -> bool:
    """Whether ``value`` is an instance of a class of raptor_core._core (a nanobind instance)."""
    return type(value).__module__ == _CORE_MODULE and not isinstance(value, type)


def _marker(value: Any) -> Released:
    return Released(f"raptor_core._core.{type(value).__name__}")


def _released(value: Any) -> tuple[Any, bool]:
    """``value`` with the raptor_core instances in it replaced by markers, and whether it held
    any. Lists and dicts change in place (every holder of the container sees it), a tuple is
    rebuilt; from a set, and as dict keys, the instances are removed."""
    if _is_core(value):
        return _marker(value), True
    changed = False
    if isinstance(value, list):
        for i, x in enumerate(value):
            if _is_core(x):
                value[i] = _marker(x)
                changed = True
    elif isinstance(value, dict):
        for k, x in list(value.items()):
            if _is_core(k):  # a handle as a key: the entry goes
                del value[k]
                changed = True
            elif _is_core(x):
                value[k] = _marker(x)
                changed = True
    elif isinstance(value, set):
        held = [x for x in value if _is_core(x)]
        for x in held:
            value.discard(x)
        changed = bool(held)
    elif type(value) is tuple and any(_is_core(x) for x in value):
        return tuple(_marker(x) if _is_core(x) else x for x in value), True
    return value, changed


def _owned(cls: type, cache: dict[type, bool]) -> bool:
    """Whether instances of ``cls`` are raptor's: a class of the hawk or eagle packages, or a
    subclass of one."""
    hit = cache.get(cls)
    if hit is None:
        hit = False
        for base in cls.__mro__:
            module = base.__dict__.get("__module__")
            if isinstance(module, str) and module.split(".", 1)[0] in _OWNER_PACKAGES:
                hit = True
                break
        cache[cls] = hit
    return hit


def _slot_names(cls: type) -> list[str]:
    names: list[str] = []
    for base in cls.__mro__:
        slots = base.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return [n for n in names if n not in ("__dict__", "__weakref__")]


def _release_object(obj: Any) -> int:
    """Releases the raptor_core instances ``obj`` holds; returns how many attributes changed."""
    changed = 0
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        attrs = None
    if isinstance(attrs, dict):
        for name, value in list(attrs.items()):
            new, held = _released(value)
            if new is not value:
                attrs[name] = new
            changed += held
    for name in _slot_names(type(obj)):
        try:
            value = object.__getattribute__(obj, name)
        except AttributeError:
            continue
        new, held = _released(value)
        if new is not value:
            try:
                object.__setattr__(obj, name, new)
            except (AttributeError, TypeError):  # a read-only slot: leave it
                continue
        changed += held
    return changed


def release() -> int:
    """Makes every live hawk/eagle object drop the raptor_core instances it holds (see the
    module docstring). Returns how many objects changed. Meant for interpreter exit: a
    released kernel, plan or bridge function cannot be used afterwards."""
    jax = sys.modules.get("jax")
    if jax is not None:
        try:  # let JAX's effects (callbacks that may use these objects) finish first
            jax.effects_barrier()
        except Exception:  # noqa: BLE001 - a failed effect: JAX's own exit hook, which runs after this one, reports it
            pass
    cache: dict[type, bool] = {}
    changed = 0
    with _lock:
        for obj in gc.get_objects():
            if type(obj) is Released or isinstance(obj, type) or not _owned(type(obj), cache):
                continue
            if _release_object(obj):
                changed += 1
    return changed


def install() -> None:
    """Registers ``release`` to run at interpreter exit (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        atexit.register(release)
        _installed = True
