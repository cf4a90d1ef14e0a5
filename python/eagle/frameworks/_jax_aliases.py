"""Which operand -> result aliases an FFI call of a kernel declares to XLA (the "ffi" lowering).

A kernel's in-out Mutables and its mask are read and updated: the call can write the new
values over the old ones (an alias), or into a buffer of their own (the handler passes two
buffers; the kernel reads one and writes the other, cpp/runtime/abi.h). Which is cheaper
depends on where the old value lives, and XLA decides nothing here: an alias a custom call
declares is a must.

- Old value carried by a loop (``lax.scan``, ``while_loop``), or made by an earlier operation
  and dead after the call: the alias makes the update in place. Without it, XLA copies every
  result back into the loop's carry at each step (the oscillator at N = 2^16 in a 20-step
  scan: 84 us a step with the aliases, 380 us without).
- Old value a parameter of the jitted function that the caller did not donate: XLA may not
  write over it, so with the alias it copies the parameter into a fresh buffer before the call
  and the kernel then updates the copy. That copy is a whole extra pass over each in-out
  plane (the same oscillator, one call under ``jit``: 694 us with the aliases, 224 us
  without, jax.numpy 313 us).

So the call declares every alias except those whose operand is an undonated parameter of
the module's public entry function (``@main``): JAX marks a donated parameter with
``tf.aliasing_output`` or ``jax.buffer_donor`` before it lowers the function's body.
Anything this module cannot read (another JAX's MLIR bindings, an operand in a private
function such as a nested ``jit``) keeps the alias: the results are the same either way, only
the copy differs. docs/jax.md ("Copies and donation").

Start reading at ``kept_aliases``.
"""

from __future__ import annotations

from typing import Any, Sequence

from jax.interpreters.mlir import ir

__all__ = ["kept_aliases"]

# The argument attributes JAX puts on a donated parameter of the entry function
# (jax/_src/interpreters/mlir.py, lower_jaxpr_to_fun): an output it aliases, or donation
# left for XLA to match.
_DONATION_ATTRS = ("tf.aliasing_output", "jax.buffer_donor")
_ENTRY = "main"  # the symbol of the module's entry function (jax.jit(f).lower(...).as_text())


def kept_aliases(operands: Sequence[Any], aliases: dict[int, int]) -> dict[int, int]:
    """The aliases (operand index -> result index) to declare for a call on ``operands``
    (MLIR values): all of ``aliases`` but those whose operand is an undonated parameter of
    the public entry function."""
    return {op: res for op, res in aliases.items() if not undonated_parameter(operands[op])}


def undonated_parameter(value: Any) -> bool:
    """Whether ``value`` is a parameter of the module's public entry function that its caller
    did not donate. False whenever that cannot be read."""
    try:
        if not isinstance(value, ir.BlockArgument):
            return False
        parent = value.owner.owner  # the block's parent operation (an OpView)
        if parent is None:
            return False
        op = parent.operation  # (an OpView's .name is FuncOp's symbol name; the op's is its kind)
        if op.name != "func.func":
            return False
        attrs = op.attributes
        # JAX's entry function is @main; the functions it lowers for a scan's body, a nested
        # jit and the like have other names (and are not yet marked private when lowered, so
        # the name, not the visibility, tells them apart).
        if "sym_name" not in attrs or ir.StringAttr(attrs["sym_name"]).value != _ENTRY:
            return False
        if "arg_attrs" not in attrs:
            return True  # no attributes at all: nothing donated
        arg = ir.DictAttr(ir.ArrayAttr(attrs["arg_attrs"])[value.arg_number])
        return not any(name in arg for name in _DONATION_ATTRS)
    except Exception:  # noqa: BLE001 - unreadable: keep the alias (same results, maybe a copy)
        return False
