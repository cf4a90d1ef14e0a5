"""Params (docs/language.md): a Param bound to a 0-d or 1-element array of any float or integer
dtype is read at each launch, converted as ``float(value)`` converts it and then rounded to the
kernel's dtype as a number is (issue 10 item 3, hole 4: integer arrays were read once, at bind).
What a kernel cannot read as a real number is refused at bind with an error naming the kernel,
the Param and the fix; so is a number beyond the kernel's float. The element conversions
themselves are cpp/tests/test_runtime_param_source.cpp. Start at ``test_read_at_each_launch``.
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import eagle.graph
import hawk
from eagle import ModeError
from hawk import Mutable, Param, Scalar, Terminated

from conftest import plan_kernels


@hawk.kernel
def affine(x: Scalar, a: Param, b: Param, y: Mutable[Scalar]):
    y = x * a + b


@hawk.kernel
def accumulate(a: Param, y: Mutable[Scalar]):
    y = y + a


@hawk.kernel(steps=1)
def walk(dx: Param, goal: Scalar, done: Terminated, x: Mutable[Scalar]):
    x = x + dx
    done = x >= goal


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels([affine, accumulate, walk], module_cache_dir)


# Every dtype a Param array may have, with a first and a second value each (exact in float16
# and in the integer type, so the answers are exact in both kernel dtypes).
ACCEPTED = {
    "float16": (1.5, -0.25),
    "float32": (0.75, 3.0),
    "float64": (-2.0, 0.125),
    "longdouble": (2.5, -4.0),
    "int8": (-3, 100),
    "int16": (-300, 7),
    "int32": (5, -70000),
    "int64": (-(2**40), 9),
    "uint8": (200, 1),
    "uint16": (60000, 2),
    "uint32": (7, 2**31 + 5),
    "uint64": (3, 2**40),
}
FLOATS = ["float64", "float32"]


def expected(x: np.ndarray, a: np.ndarray, b: float, dtype: str) -> np.ndarray:
    """NumPy's answer: the Param as float(value), rounded to the kernel's dtype."""
    t = np.dtype(dtype).type
    return x.astype(dtype) * t(float(a.reshape(()))) + t(b)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(), (1,)])
@pytest.mark.parametrize("param_dtype", list(ACCEPTED))
def test_read_at_each_launch(plans, param_dtype, shape, dtype):
    first, second = ACCEPTED[param_dtype]
    x = np.arange(-3.0, 4.0, dtype=dtype)
    y = np.zeros_like(x)
    a = np.full(shape, first, dtype=param_dtype)
    bound = plans["affine"].bind(x=x, a=a, b=0.5, y=y)
    bound.launch()
    np.testing.assert_array_equal(y, expected(x, a, 0.5, dtype))
    a[...] = second  # in place: the next launch reads it
    assert bound.params()["a"] == float(np.asarray(a).reshape(()))
    bound.launch()
    np.testing.assert_array_equal(y, expected(x, a, 0.5, dtype))
    assert y[4] == np.dtype(dtype).type(float(second)) + np.dtype(dtype).type(0.5)


@pytest.mark.parametrize(
    "param_dtype, value",
    [("int64", 2**53 + 1), ("uint64", 2**64 - 1), ("int64", -(2**63)), ("uint64", 2**63 + 2**11 - 1)],
)
def test_wide_integers_round_as_float_does(plans, param_dtype, value):
    """An integer that is not a double rounds to the nearest one, as float(value) rounds it."""
    x = np.ones(3)
    y = np.zeros(3)
    a = np.zeros(1, dtype=param_dtype)
    bound = plans["affine"].bind(x=x, a=a, b=0.0, y=y)
    a[0] = value
    bound.launch()
    assert y.tolist() == [float(a[0])] * 3
    assert float(a[0]) != value or param_dtype == "int64" and value == -(2**63)  # the rounding is real


def test_a_view_into_a_bigger_array_is_read_where_it_points(plans):
    """A 1-element view (a strided slice, an odd offset into int8 memory) reads its element."""
    backing = np.arange(10, dtype=np.int16)
    a = backing[7:8]
    x = np.ones(4)
    y = np.zeros(4)
    bound = plans["affine"].bind(x=x, a=a, b=0.0, y=y)
    bound.launch()
    assert y.tolist() == [7.0] * 4
    backing[7] = -12
    bound.launch()
    assert y.tolist() == [-12.0] * 4
    raw = np.zeros(9, dtype=np.uint8)
    unaligned = raw[1:9].view(np.float64)  # 8-byte element at an odd address
    unaligned[0] = 0.375
    bound = plans["affine"].bind(x=x, a=unaligned, b=0.0, y=y)
    bound.launch()
    assert y.tolist() == [0.375] * 4


@pytest.mark.parametrize("param_dtype", ["int32", "uint8", "float16", "float64"])
def test_graph_launches_read_the_param_each_time(plans, param_dtype):
    """A graph of a kernel and a host node that changes the Param between launches."""
    a = np.ones(1, dtype=param_dtype)
    y = np.zeros(5)
    bound = plans["accumulate"].bind(a=a, y=y)

    def bump() -> None:
        a[0] += 1

    graph = eagle.Graph().add(bound).add_node(eagle.graph.opaque(bump)).build()
    graph.launch(4)
    assert y.tolist() == [1.0 + 2.0 + 3.0 + 4.0] * 5  # a = 1, 2, 3, 4 at the four launches
    assert a[0] == 5


@pytest.mark.parametrize("param_dtype", ["int64", "uint16", "float32"])
def test_until_done_reads_the_param_at_each_run(plans, param_dtype):
    """until_done's fused stepping loop binds the Param array by reference too."""
    dx = np.ones(1, dtype=param_dtype)
    goal = np.array([3.0, 10.0, 40.0])
    done = np.zeros(3, bool)
    x = np.zeros(3)
    runner = eagle.until_done([plans["walk"]], max_steps=100, dx=dx, goal=goal, done=done, x=x)
    report = runner.run()
    assert report.steps == 40 and x.tolist() == [3.0, 10.0, 40.0]
    dx[0] = 4
    done[:] = False
    x[:] = 0.0
    report = runner.run()
    assert report.steps == 10  # ceil(40 / 4)
    assert x.tolist() == [4.0, 12.0, 40.0]


# ------------------------------------------------------------------------------------------------
# refusals


def bind_with(plans, a, dtype: str = "float64"):
    x = np.ones(3, dtype=dtype)
    return plans["affine"].bind(x=x, a=a, b=0.0, y=np.zeros_like(x))


@pytest.mark.parametrize(
    "value, error, says",
    [
        (True, TypeError, "must be a number, got a bool"),
        (np.bool_(True), TypeError, "must be a number, got a bool"),
        (1j, TypeError, "must be a real number, got a complex number"),
        (np.complex128(1), TypeError, "must be a real number, got a complex number"),
        (np.complex64(2), TypeError, "pass its real part (.real)"),
        (np.datetime64("2026-01-01"), TypeError, "must be a number or a 0-d/1-element array, got datetime64"),
        (np.str_("1.0"), TypeError, "must be a number or a 0-d/1-element array, got str_"),
        ("1.0", TypeError, "must be a number or a 0-d/1-element array, got str"),
        (None, TypeError, "got NoneType"),
        ([1.0], TypeError, "got a list; pass a[0] or np.asarray(a)"),
        (np.ones(1, bool), ModeError, "is a bool array, which a kernel cannot read as a real number; pass a.astype(np.float64)"),
        (np.ones(1, complex), ModeError, "is a complex128 array, which a kernel cannot read as a real number; pass a.real"),
        (np.ones(1, object), ModeError, "is a object array"),
        (np.ones(1, "datetime64[s]"), ModeError, "pass a.astype(np.float64)"),
        (np.ones(1, ">f8"), ModeError, "big-endian"),
        (np.ones(2), ValueError, "one value for all samples; got an array of shape (2,)"),
        (np.ones(0), ValueError, "got an array of shape (0,)"),
    ],
)
def test_what_a_kernel_cannot_read_is_refused_by_name(plans, value, error, says):
    with pytest.raises(error) as err:
        bind_with(plans, value)
    msg = str(err.value)
    assert "kernel 'affine'" in msg and "'a'" in msg, msg
    assert says in msg, msg


@pytest.mark.parametrize(
    "value, dtype, shown",
    [
        (10**400, "float64", "an int of about 10**400"),
        (-(10**309), "float64", "an int of about 10**309"),
        (2**1024, "float64", "an int of about 10**308"),
        (np.longdouble("1e4000"), "float64", "1e+4000"),
        (1e39, "float32", "1e+39"),
        (np.float64(-3.5e38), "float32", "-3.5e+38"),
        (2**128, "float32", "an int of about 10**38"),
    ],
)
def test_a_number_beyond_the_kernels_float_is_refused(plans, value, dtype, shown):
    with pytest.raises(ValueError) as err:
        bind_with(plans, value, dtype)
    msg = str(err.value)
    assert "kernel 'affine'" in msg and "Param 'a'" in msg and f"does not fit the kernel's float ({dtype}" in msg, msg
    assert shown in msg, msg


@pytest.mark.parametrize(
    "value, dtype, want",
    [
        (2**1023, "float64", 2.0**1023),
        (float("inf"), "float32", np.inf),
        (-np.inf, "float64", -np.inf),
        (3.4e38, "float32", np.float32(3.4e38)),
        (2**64, "float32", np.float32(2.0**64)),
        (np.uint64(2**63), "float64", 2.0**63),
        (np.float16(1.5), "float32", 1.5),
        (np.longdouble(0.5), "float64", 0.5),
    ],
)
def test_numbers_within_the_kernels_float_are_read(plans, value, dtype, want):
    x = np.ones(2, dtype=dtype)
    y = np.zeros_like(x)
    plans["affine"].bind(x=x, a=value, b=0.0, y=y).launch()
    assert y.tolist() == [float(np.dtype(dtype).type(want))] * 2


# ------------------------------------------------------------------------------------------------
# the JAX bridge: a Param number is read as the host binding reads it


@pytest.mark.parametrize(
    "value, error, says",
    [
        (10**400, ValueError, "Param 'a' = an int of about 10**400 does not fit the kernel's float"),
        (1e39, ValueError, "Param 'a' = 1e+39 does not fit the kernel's float (float32"),
        (1j, ModeError, "'a' is a complex number (1j); a kernel runs on real numbers"),
        ("0.5", TypeError, "input 'a' is a str, which JAX cannot read; pass a JAX or NumPy array of float32 or float64, or a number"),
        (None, TypeError, "input 'a' is a NoneType, which JAX cannot read"),
    ],
)
def test_jax_params_are_read_as_the_host_reads_them(value, error, says):
    jnp = pytest.importorskip("jax.numpy")
    from eagle.frameworks import jax as eagle_jax

    f = eagle_jax.function(affine)
    x = jnp.arange(3.0, dtype=jnp.float32)
    with pytest.raises(error) as err:
        f(x, value, 0.0)
    assert "affine" in str(err.value) and says in str(err.value), str(err.value)
    np.testing.assert_array_equal(np.asarray(f(x, 2**64, 0.5)), np.asarray(x) * np.float32(2.0**64) + np.float32(0.5))


# ------------------------------------------------------------------------------------------------
# on the GPU: numbers follow the host's rule; a device array has the launch's dtype (its checks
# run here, over fake device arrays that are never dereferenced)


class FakeDevice:
    """GPU memory as CuPy shows it: ``__cuda_array_interface__`` over an address never read."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "float64", ptr: int = 1 << 24) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": np.dtype(dtype).str, "data": (ptr, False), "strides": None, "version": 3}


@pytest.mark.parametrize(
    "value, error, says",
    [
        (10**400, ValueError, "Param 'a' = an int of about 10**400 does not fit the kernel's float (float64"),
        (np.bool_(False), TypeError, "Param 'a' must be a number, got a bool"),
        (np.complex128(1), TypeError, "Param 'a' must be a real number, got a complex number"),
        (FakeDevice((1,), "int32"), ModeError, "Param 'a' is int32; on the GPU a Param array has the launch's dtype (float64): bind a float64 device array"),
    ],
)
def test_cuda_params_follow_the_same_rules(value, error, says):
    import eagle.cuda

    planes = dict(x=FakeDevice((8,), ptr=1 << 25), b=0.0, y=FakeDevice((8,), ptr=1 << 26))
    with pytest.raises(error) as err:
        eagle.cuda.layout(affine, {**planes, "a": value})
    assert "kernel 'affine'" in str(err.value) and says in str(err.value), str(err.value)
    lay = eagle.cuda.layout(affine, {**planes, "a": np.int64(3)})
    assert lay.params[1] == 3.0 and lay.param_ptrs[1] == 0


def test_jax_integer_params_are_read_as_numbers():
    """A NumPy integer is read as float(value) on the host (JAX without x64 would wrap a 64-bit
    one); a JAX integer array takes the call's float dtype, under jit as well."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from eagle.frameworks import jax as eagle_jax

    f = eagle_jax.function(affine)
    x = jnp.arange(4.0)
    t = np.dtype(x.dtype).type
    xs = np.asarray(x)
    for a in [np.int64(2**40), np.array([2**40 + 3]), np.uint64(2**63), np.array(-7, np.int8)]:
        want = xs * t(float(np.asarray(a).reshape(()))) + t(0.5)
        np.testing.assert_array_equal(np.asarray(f(x, a, 0.5)), want)
    for a in [jnp.asarray(5), jnp.asarray([-3], dtype=jnp.int32)]:
        want = xs * t(float(np.asarray(a).reshape(()))) + t(0.5)
        np.testing.assert_array_equal(np.asarray(f(x, a, 0.5)), want)
        np.testing.assert_array_equal(np.asarray(jax.jit(f)(x, a, 0.5)), want)
    with pytest.raises(ModeError, match=r"affine: Param 'a' is bool, which a kernel cannot read as a real number"):
        f(x, jnp.asarray(True), 0.5)
