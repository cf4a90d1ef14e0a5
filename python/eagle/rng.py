"""The key of a kernel's ``rng: Random`` parameter, read from what a caller passes.

One place for the seed convention (docs/language.md, "Random numbers"): an int means
``jax.random.key(seed)``'s key data, a typed key (``jax.random.key``) its ``key_data``, and a
raw key is a uint32 array of shape (2,) (``jax.random.PRNGKey``). eagle's ``bind`` and the JAX
bridge both read keys through ``key_words``; the kernels get the two words (threefry2x32).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["key_words", "is_typed_key"]


def is_typed_key(value: Any) -> bool:
    """Whether ``value`` is a typed JAX key array (``jax.random.key(...)``)."""
    dt = getattr(value, "dtype", None)
    if dt is None or type(value).__module__.startswith("numpy"):
        return False
    try:
        import jax

        return bool(jax.dtypes.issubdtype(dt, jax.dtypes.prng_key))
    except (ImportError, TypeError):
        return False


def _seed_words(seed: int, who: str, name: str) -> tuple[int, int]:
    """jax.random.key(seed)'s key data. With jax installed it is asked (its convention depends
    on jax_enable_x64 for seeds outside [0, 2**32)); without it, seeds in [0, 2**32) are
    [0, seed], as jax makes them in either mode."""
    try:
        import jax
    except ImportError:
        if 0 <= seed < 2**32:
            return 0, seed
        raise ValueError(f"{who}: Random '{name}' = {seed}: without jax installed a seed must be in [0, 2**32); "
                         f"pass a uint32 key of shape (2,) instead") from None
    try:
        data = np.asarray(jax.random.key_data(jax.random.key(seed)))
    except (OverflowError, TypeError, ValueError) as err:
        raise ValueError(f"{who}: Random '{name}' = {seed} is not a seed jax.random.key accepts ({err})") from None
    return _words(data, who, name)


def _words(data: np.ndarray, who: str, name: str) -> tuple[int, int]:
    if data.shape != (2,) or data.dtype != np.uint32:
        raise ValueError(f"{who}: Random '{name}' needs a threefry2x32 key (uint32 key data of shape (2,)), "
                         f"got {data.dtype} {data.shape}; pass jax.random.key(seed), jax.random.PRNGKey(seed) or an int seed")
    return int(data[0]), int(data[1])


def key_words(value: Any, who: str, name: str) -> tuple[int, int]:
    """The two uint32 words of the key ``value`` names: an int seed, a typed JAX key or a
    uint32 array of shape (2,). Refuses anything else, naming ``who`` and the parameter."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{who}: Random '{name}' takes an int seed or a key, got a bool")
    if isinstance(value, (int, np.integer)):
        return _seed_words(int(value), who, name)
    if is_typed_key(value):
        import jax

        impl = str(jax.random.key_impl(value))
        if "threefry" not in impl:
            raise ValueError(f"{who}: Random '{name}' is a {impl} key; kernels draw with threefry2x32 "
                             f"(jax's default): pass jax.random.key(seed, impl='threefry2x32')")
        return _words(np.asarray(jax.random.key_data(value)), who, name)
    if hasattr(value, "__array__") or isinstance(value, (list, tuple)):
        return _words(np.asarray(value), who, name)
    raise TypeError(f"{who}: Random '{name}' takes an int seed, jax.random.key(seed) or a uint32 key of shape (2,), "
                    f"got {type(value).__name__}")
