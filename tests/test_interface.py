"""A kernel's interface, described once in C++ (cpp/runtime/interface.hpp), checked at every
boundary: what Python reads of it (``Kernel.interface``), the XLA handler's checks of every
buffer of a hand-written ``jax.ffi.ffi_call`` against it (dtype and whole shape, operand and
result counts, a table sum's M), and the JAX bridge's refusal of a kernel with no plane input.

Sections:
  1. the interface as Python reads it
  2. the XLA handler checks every buffer (hand-written ffi_call with a lowered kernel's digest)
  3. kernels the bridge cannot size: refused by name; derived kernels keep a plane
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import eagle  # noqa: E402
import hawk  # noqa: E402
from eagle.errors import ModeError  # noqa: E402
from eagle.frameworks import _jax_rules  # noqa: E402
from eagle.frameworks import jax as eagle_jax  # noqa: E402
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector  # noqa: E402
from hawk.math import norm, vec  # noqa: E402

jax.config.update("jax_enable_x64", True)


@hawk.kernel
def drag(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


@hawk.kernel
def mixed(a: Param, x: Vector[3], i: Scalar, w: Table[Scalar], done: Terminated, y: Mutable[Scalar], z: Mutable[Scalar]):
    if x[0] > 0.0:
        y = a * x[1] + w.at(i)
    z = x[2]
    done = z > a


@hawk.kernel
def lookup(i: Scalar, w: Table[Scalar], y: Mutable[Scalar]):
    y = w.at(i) * w.at(i)


@hawk.kernel
def two_planes(x: Scalar, u: Scalar, y: Mutable[Scalar]):
    y = x * u


@hawk.kernel
def params_only(a: Param, b: Param, y: Mutable[Scalar]):
    y = a * b


@hawk.kernel
def shift(x: Scalar, a: Param, y: Mutable[Scalar]):
    y = x + a


# ================================================================================================
# 1. the interface as Python reads it


def test_roles_positions_and_aliases():
    iface = mixed.interface("float32")
    assert [s.role for s in iface.slots] == ["param", "plane", "plane", "table", "mask", "inout", "mutable"]
    assert [s.dtype for s in iface.slots] == ["float32"] * 4 + ["bool", "float32", "float32"]
    assert iface.name == "mixed" and iface.dtype == "float32"
    assert iface.digest == mixed.digest("float32") != mixed.digest("float64")
    assert list(iface.operands) == [0, 1, 2, 3, 4, 5]  # inputs in signature order
    assert list(iface.results) == [5, 6, 4]  # Mutables in order, then the mask
    assert dict(iface.aliases) == {4: 2, 5: 0}  # the mask and the in-out y update in place
    # SlotInfo and the bridge read the same description.
    assert [s.kind for s in mixed.slots] == ["param", "plane", "plane", "table", "terminated", "mutable", "mutable"]
    assert [s.inout for s in mixed.slots] == [False] * 5 + [True, False]
    f = eagle_jax.function(mixed)
    assert f.inputs == ["a", "x", "i", "w", "done", "y"]
    assert f.outputs == ["y", "z", "done"]


def test_shapes_follow_the_layouts():
    iface = mixed.interface()
    sizes = [0, 0, 0, 5, 0, 0, 0]
    shapes = [iface.expected_shape(s, 16, sizes) for s in range(7)]
    assert shapes == [(), (3, 16), (16,), (5,), (16,), (16,), (16,)]
    adj = lookup.adjoint(["w"])
    ai = adj.interface()
    w_bar = [s.name for s in ai.slots].index("w_bar")
    w = [s.name for s in ai.slots].index("w")
    assert ai.slots[w_bar].role == "table_sum" and ai.slots[w_bar].table_of == w
    sizes = [0] * len(ai.slots)
    sizes[w] = 7
    assert ai.expected_shape(w_bar, 16, sizes) == (7,)
    sh = shift.adjoint(["a"]).interface()
    a_bar = [s.name for s in sh.slots].index("a_bar")
    assert sh.expected_shape(a_bar, 4, [0] * len(sh.slots)) == (1,)  # eagle: (k,)
    assert sh.expected_shape(a_bar, 4, [0] * len(sh.slots), jax=True) == ()  # JAX: 0-d


# ================================================================================================
# 2. the XLA handler checks every buffer


def _hand_call(kernel, dtype, results, *operands):
    """A hand-written custom call of a lowered kernel: the bridge's target and attribute, with
    whatever buffers the caller gives."""
    eagle.plan.auto([kernel])  # compiles and registers it by digest
    _jax_rules.register_targets()
    shapes = [jax.ShapeDtypeStruct(shape, dt) for shape, dt in results]
    call = jax.ffi.ffi_call(_jax_rules.TARGET, shapes)
    return call(*operands, digest=kernel.digest(dtype))


def _refused(match, kernel, dtype, results, *operands):
    with pytest.raises(Exception, match=match) as err:
        out = _hand_call(kernel, dtype, results, *operands)
        jax.block_until_ready(out)
    assert "INVALID_ARGUMENT" in str(err.value)


def _drag_operands(n, dtype=np.float64):
    v = jnp.asarray(np.linspace(-1.0, 1.0, 3 * n).reshape(3, n), dtype=dtype)
    return v, jnp.asarray(0.1, dtype), jnp.asarray(0.05, dtype), jnp.asarray(9.81, dtype)


def test_a_valid_hand_written_call_runs():
    v, cd, dt, g = _drag_operands(8)
    (out,) = _hand_call(drag, "float64", [((3, 8), np.float64)], v, cd, dt, g)
    vv = np.asarray(v)
    want = vv + 0.05 * (np.array([0.0, 0.0, -9.81])[:, None] - 0.1 * np.linalg.norm(vv, axis=0) * vv)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12)


def test_an_output_bigger_than_the_planes_is_refused():
    _refused(
        r"raptor kernel 'drag': output plane 'v_next' has shape \(3, 1048576\), expected \(3, 8\)",
        drag, "float64", [((3, 2**20), np.float64)], *_drag_operands(8),
    )


def test_an_input_of_another_sample_count_is_refused():
    x = jnp.ones(8)
    u = jnp.ones(16)
    _refused(r"raptor kernel 'two_planes': plane 'u' has shape \(16,\), expected \(8,\)", two_planes, "float64", [((8,), np.float64)], x, u)


def test_wrong_dtypes_are_refused():
    v, cd, dt, g = _drag_operands(8)
    _refused(r"raptor kernel 'drag': plane 'v' has dtype float32, expected float64", drag, "float64", [((3, 8), np.float64)], v.astype(np.float32), cd, dt, g)
    _refused(r"raptor kernel 'drag': output plane 'v_next' has dtype float32, expected float64", drag, "float64", [((3, 8), np.float32)], v, cd, dt, g)
    ones = jnp.ones(4)
    mask = jnp.zeros(4)  # float, not bool
    _refused(
        r"raptor kernel 'mixed': mask 'done' has dtype float64, expected bool",
        mixed, "float64", [((4,), np.float64), ((4,), np.float64), ((4,), np.bool_)],
        jnp.asarray(1.0), jnp.ones((3, 4)), jnp.zeros(4), jnp.ones(2), mask, ones,
    )


def test_a_param_must_be_one_number():
    v, cd, dt, g = _drag_operands(8)
    _refused(r"raptor kernel 'drag': Param 'cd' has shape \(2,\), expected \(\)", drag, "float64", [((3, 8), np.float64)], v, jnp.ones(2), dt, g)


def test_wrong_operand_and_result_counts_are_refused():
    v, cd, dt, g = _drag_operands(8)
    _refused(
        r"raptor kernel 'drag': got 3 operands and 1 results, expected 4 operands \(v, cd, dt, g\) and 1 results \(v_next\)",
        drag, "float64", [((3, 8), np.float64)], v, cd, dt,
    )
    _refused(r"got 4 operands and 2 results, expected 4 operands", drag, "float64", [((3, 8), np.float64), ((3, 8), np.float64)], v, cd, dt, g)


def test_a_table_sum_of_the_wrong_size_is_refused():
    adj = lookup.adjoint(["w"])
    names = [s.name for s in adj.slots]
    assert names == ["i", "w", "y_bar", "w_bar"], names
    i = jnp.asarray([0.0, 1.0, 4.0, 2.0])
    w = jnp.arange(5.0)
    y_bar = jnp.ones(4)
    (w_bar,) = _hand_call(adj, "float64", [((5,), np.float64)], i, w, y_bar)
    np.testing.assert_allclose(np.asarray(w_bar), [0.0, 2.0, 4.0, 0.0, 8.0])  # d(w_i^2) = 2 w_i per read
    _refused(r"raptor kernel 'lookup_adjoint': output sum 'w_bar' has shape \(7,\), expected \(5,\)", adj, "float64", [((7,), np.float64)], i, w, y_bar)


# ================================================================================================
# 3. kernels the bridge cannot size


def test_a_kernel_without_a_plane_input_is_refused_by_name():
    with pytest.raises(ModeError, match=r"kernel 'params_only' has no plane input .*sample count N from the planes.*jnp.zeros\(\(N,\)\)"):
        eagle_jax.function(params_only)
    # eagle's own launcher takes N from the output plane, so the kernel still runs there, and
    # so does a hand-written custom call (the handler, too, falls back on the first output).
    (plan,) = eagle.plan.auto([params_only])
    y = np.zeros(5)
    plan.bind(a=2.0, b=3.5, y=y).launch()
    np.testing.assert_array_equal(y, np.full(5, 7.0))
    (out,) = _hand_call(params_only, "float64", [((5,), np.float64)], jnp.asarray(2.0), jnp.asarray(3.5))
    np.testing.assert_array_equal(np.asarray(out), np.full(5, 7.0))


def test_a_derived_kernel_keeps_a_plane_to_size_its_call():
    # y = x + a: the tangent with respect to a reads no plane (y_dot = a_dot); the bridge keeps
    # x so the call knows N, and the tangent has the plane's shape.
    f = eagle_jax.function(shift, wrt=("a",))
    x = jnp.linspace(0.0, 1.0, 6)
    y, y_dot = jax.jvp(lambda a: f(x, a), (jnp.asarray(0.5),), (jnp.asarray(1.0),))
    np.testing.assert_allclose(np.asarray(y), np.asarray(x) + 0.5)
    np.testing.assert_array_equal(np.asarray(y_dot), np.ones(6))
    grad = jax.grad(lambda a: f(x, a).sum())(0.5)
    np.testing.assert_allclose(float(grad), 6.0)
