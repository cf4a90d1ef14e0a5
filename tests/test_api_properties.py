"""Property tests of eagle's user-facing API (issue 10 item 6): plan.bind + launch,
eagle.frameworks.jax.function (plain, jit, vmap) and eagle.until_done, fed random values.

Each value starts from what the kernel's interface asks for (``good``) and is perturbed
(``perturb``): shapes (0 and 1 samples, wrong rank, wrong vector width, wrong table size),
dtypes (float16/32/64, ints, bool, complex, big-endian, object), layouts (Fortran order,
non-contiguous and negative-stride views, read-only), array types (NumPy, JAX, lists,
scalars, memoryview, objects with only ``__array_interface__`` or a fake
``__cuda_array_interface__``) and names (missing, extra, misspelled). The properties:

- a call either works or raises a *named* exception (TypeError, ValueError, eagle.ModeError,
  hawk.KernelError) whose message names the kernel, and the plane when one value is at fault;
- no user array is written when a call fails (copies compared before and after), except by a
  launch that raises for a Table index out of range, which by docs/language.md has run;
- the process survives: a few of the nastiest cases run in a subprocess (a segfault there
  fails the test instead of the session).

Bounded to about 40 s: ``settings(max_examples=..., deadline=None)`` per property.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import traceback
import warnings
from typing import Any

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import eagle  # noqa: E402
import eagle.loop  # noqa: E402
import hawk  # noqa: E402
from eagle import ModeError  # noqa: E402
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector  # noqa: E402
from hawk.math import norm, vec  # noqa: E402

from conftest import plan_kernels  # noqa: E402
from stepping_kernels import osc  # noqa: E402

NAMED = (TypeError, ValueError, ModeError, hawk.KernelError)
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], derandomize=True)


@hawk.kernel
def drag3(v: Vector[3], cd: Param, dt: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -9.81) - cd * norm(v) * v
    v_next = v + dt * a


@hawk.kernel
def lookup(i: Scalar, w: Table[Scalar], y: Mutable[Scalar]):
    y = w.at(i) * 2.0


KERNELS = {k.name: k for k in (drag3, osc, lookup)}


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels(list(KERNELS.values()), module_cache_dir)


# ------------------------------------------------------------------------------------------------
# values


def good(kernel: hawk.Kernel, n: int, m: int = 4, dtype: Any = np.float64) -> dict[str, Any]:
    """Values the kernel accepts (n samples, tables of m entries)."""
    out: dict[str, Any] = {}
    for s in kernel.slots:
        if s.kind == "param":
            out[s.name] = 0.01
        elif s.kind == "terminated":
            out[s.name] = np.zeros(n, bool)
        elif s.kind == "table":
            out[s.name] = np.arange(m, dtype=dtype) if s.width == 1 else np.zeros((m, s.width), dtype)
        else:
            shape = (s.width, n) if s.is_vector else (n,)
            base = np.linspace(0.0, 0.5, int(np.prod(shape))).reshape(shape).astype(dtype)
            out[s.name] = base % m if s.name == "i" else base + (0.3 if s.name == "t_final" else 0.0)
    return out


class HostOnly:
    """Only ``__array_interface__`` (no buffer protocol), over an array it keeps."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a
        self.__array_interface__ = a.__array_interface__


class FakeCuda:
    """A fake device array: ``__cuda_array_interface__`` pointing at host memory it keeps."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False), "version": 3, "strides": None}


DTYPES = ["float64", "float32", "float16", "int32", "int64", "bool", "complex128", ">f8", "object", "uint8"]
SHAPES = ["same", "n0", "n1", "rank+1", "rank-1", "width+1", "transpose"]
LAYOUTS = ["c", "fortran", "strided", "reversed", "readonly"]
WRAPS = ["numpy", "numpy", "numpy", "list", "scalar", "memoryview", "host_only", "fake_cuda", "jax", "none", "string"]


def reshape(a: np.ndarray, how: str) -> np.ndarray:
    if a.ndim == 0:
        return a[None] if how == "rank+1" else a
    if how == "n0":
        return a[..., :0]
    if how == "n1":
        return a[..., :1]
    if how == "rank+1":
        return a[None]
    if how == "rank-1":
        return a.sum(axis=0)
    if how == "width+1":
        return np.concatenate([a, a[:1]], axis=0) if a.ndim >= 1 and a.shape[0] else a
    if how == "transpose":
        return a.T.copy()
    return a


def relayout(a: np.ndarray, how: str) -> np.ndarray:
    if a.ndim == 0:
        return a
    if how == "fortran":
        return np.asfortranarray(a)
    if how == "strided":
        big = np.repeat(a, 2, axis=-1)
        return big[..., ::2]
    if how == "reversed":
        return a[..., ::-1]
    if how == "readonly":
        b = a.copy()
        b.flags.writeable = False
        return b
    return a


def wrap(a: np.ndarray, how: str) -> Any:
    if how == "list":
        return a.tolist()
    if how == "scalar":
        x = a.reshape(-1)[0] if a.size else 0.0
        return x.item() if isinstance(x, np.generic) else x
    if how == "memoryview":
        try:
            return memoryview(a)
        except (ValueError, TypeError, BufferError):
            return a
    if how == "host_only":
        return HostOnly(a)
    if how == "fake_cuda":
        return FakeCuda(np.ascontiguousarray(a)) if a.dtype != object else a
    if how == "jax":
        import jax.numpy as jnp

        try:
            return jnp.asarray(a)
        except (TypeError, ValueError):
            return a
    if how == "none":
        return None
    if how == "string":
        return "x"
    return a


def perturbed(a: Any, dtype: str, shape: str, layout: str, how: str) -> Any:
    if not isinstance(a, np.ndarray):  # a Param's number
        a = np.asarray(a, dtype=np.float64)
    b = np.asarray(reshape(a, shape))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = b.astype(np.dtype(dtype))
    return wrap(relayout(b, layout), how)


# Params: numbers of every kind and things that are not one.
PARAM_VALUES = [10**400, 2**64, -0.0, float("nan"), float("inf"), True, np.bool_(True), 1j, np.complex128(1), np.int64(3),
                np.uint64(2**63), np.float16(1.5), np.longdouble(1.5), [1.0], (1.0,), "1.0", None]
PARAM_ARRAYS = [((1,), "float64"), ((), ">f8"), ((1,), "int8"), ((), "uint64"), ((1,), "int32"), ((1,), "bool"), ((1,), "float16"), ((1,), "longdouble"),
                ((1, 1), "float64"), ((0,), "float64"), ((2,), "float32"), ((1,), "complex128"), ((1,), "object")]


def param_value(draw: Any) -> Any:
    if draw(st.booleans()):
        return draw(st.sampled_from(PARAM_VALUES))
    shape, dtype = draw(st.sampled_from(PARAM_ARRAYS))
    a = np.full(shape, 0.5).astype(dtype)
    if draw(st.booleans()) and a.ndim:
        a.flags.writeable = False
    return a


def maybe(options: list[str], keep: str) -> Any:
    return st.one_of(st.just(keep), st.sampled_from(options))


@st.composite
def cases(draw: Any, kernel_names: tuple[str, ...] = tuple(KERNELS)) -> tuple[str, dict[str, Any], int]:
    """(kernel name, values, n): good values with up to three perturbed, maybe renamed."""
    name = draw(st.sampled_from(kernel_names))
    kernel = KERNELS[name]
    n = draw(st.sampled_from([0, 1, 2, 7, 70]))
    base = good(kernel, n, m=draw(st.sampled_from([1, 4])), dtype=draw(st.sampled_from([np.float64, np.float32])))
    values = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in base.items()}
    names = list(values)
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]))):
        k = draw(st.sampled_from(names))
        if KERNELS[name].slot(k).kind == "param" and draw(st.booleans()):
            values[k] = param_value(draw)
            continue
        keep = str(getattr(base[k], "dtype", "float64"))
        # each part unchanged half the time, so some perturbed values are still good
        values[k] = perturbed(base[k], draw(maybe(DTYPES, keep)), draw(maybe(SHAPES, "same")),
                              draw(maybe(LAYOUTS, "c")), draw(maybe(WRAPS, "numpy")))
    edit = draw(st.sampled_from(["none"] * 6 + ["missing", "extra", "misspelled", "finished_count"]))
    k = draw(st.sampled_from(names))
    if edit == "missing":
        del values[k]
    elif edit == "extra":
        values["extra_plane"] = np.zeros(max(n, 1))
    elif edit == "misspelled":
        values[k + "_"] = values.pop(k)
    elif edit == "finished_count":
        values["finished_count"] = perturbed(np.zeros(1, np.uint32), draw(st.sampled_from(["uint32", "int32", "float64"])),
                                             draw(st.sampled_from(["same", "n0", "rank+1"])), "c", draw(st.sampled_from(["numpy", "list", "scalar"])))
    return name, values, n


# ------------------------------------------------------------------------------------------------
# checks


def snapshot(values: dict[str, Any]) -> dict[str, np.ndarray]:
    """Copies of every NumPy array the caller passed (directly or inside a wrapper)."""
    out = {}
    for k, v in values.items():
        a = v if isinstance(v, np.ndarray) else getattr(v, "_a", None)
        if isinstance(v, memoryview):
            a = np.asarray(v)
        if isinstance(a, np.ndarray):
            out[k] = a.copy()
    return out


def unchanged(values: dict[str, Any], before: dict[str, np.ndarray]) -> None:
    for k, a in before.items():
        v = values[k]
        now = np.asarray(v) if isinstance(v, (np.ndarray, memoryview)) else v._a
        assert now.dtype == a.dtype and np.array_equal(now, a, equal_nan=a.dtype.kind in "fc"), f"'{k}' was written by a call that failed"


def named(err: BaseException, kernel: str, values: dict[str, Any]) -> None:
    """The error is one of NAMED and its message names the kernel (and a value's name)."""
    assert isinstance(err, NAMED), f"{type(err).__name__}: {err}"
    msg = str(err)
    assert kernel in msg, f"the message does not name kernel '{kernel}': {msg}"
    slots = [s.name for s in KERNELS[kernel].slots] + list(values) + ["finished_count"]
    assert any(names_plane(msg, s) for s in slots), f"the message names no plane: {msg}"


def names_plane(msg: str, plane: str) -> bool:
    """Quoted ('x', "x"), or as a whole word when longer than one letter."""
    if f"'{plane}'" in msg or f'"{plane}"' in msg:
        return True
    return len(plane) > 1 and re.search(rf"(?<![A-Za-z0-9_]){re.escape(plane)}(?![A-Za-z0-9_])", msg) is not None


def kernel_error(err: BaseException, kernel: str) -> bool:
    """A Table index error at run time (RuntimeError on the host, JaxRuntimeError through XLA),
    naming the kernel and the table: the documented run-time error, not a binding check."""
    return isinstance(err, RuntimeError) and f"kernel '{kernel}': table '" in str(err) and "out of range" in str(err)


def jax_argument_check(err: BaseException) -> bool:
    """jax.jit / jax.vmap refusing an argument before the kernel function is called (JAX's own
    check, no eagle frame in the traceback)."""
    frames = traceback.extract_tb(err.__traceback__)
    return isinstance(err, (TypeError, ValueError, OverflowError)) and not any("/eagle/" in f.filename for f in frames)


def try_call(fn: Any, kernel: str, values: dict[str, Any], jax_call: bool = False) -> bool:
    """Runs fn(); True when it worked, else checks the failure (named, nothing written)."""
    before = snapshot(values)
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - any exception is checked to be a named one
        if kernel_error(err, kernel):
            # docs/language.md: an index out of range stops nothing mid-launch, reads 0, and
            # the launch raises afterwards, so the launch has written its outputs.
            return False
        unchanged(values, before)
        if jax_call and jax_argument_check(err):
            return False
        named(err, kernel, values)
        return False
    return True


# ------------------------------------------------------------------------------------------------
# properties


@settings(max_examples=1200, **SETTINGS)
@given(case=cases())
def test_bind_and_launch_never_crash_and_name_what_is_wrong(plans, case):
    name, values, n = case
    plan = plans[name]
    box: dict[str, Any] = {}
    if try_call(lambda: box.setdefault("b", plan.bind(**values)), name, values):
        b = box["b"]
        event("bound")
        assert b.n == n or n == 0 or b.n in (0, 1)
        event("launched" if try_call(b.launch, name, values) else "launch refused")


@settings(max_examples=400, **SETTINGS)
@given(case=cases(("osc",)), budget=st.sampled_from([0, 1, 5, 400, -3, None, 2.5, True]),
       path=st.sampled_from(["host", "while", "batched"]))
def test_until_done_never_crashes_and_names_what_is_wrong(plans, case, budget, path):
    """On the host, and on the device path run on the CPU (eagle.loop.device_emulation). A
    budget that is not a whole number of launches >= 0 is refused by run, which then runs
    nothing."""
    name, values, n = case
    box: dict[str, Any] = {}

    def make() -> Any:
        if path == "host":
            return eagle.until_done([plans[name]], max_steps=400, **values)
        return eagle.loop.device_emulation([plans[name]], variant=path, max_steps=400, **values)

    if try_call(lambda: box.setdefault("r", make()), name, values):
        runner = box["r"]
        event("loop bound")
        if isinstance(budget, (float, bool)) or (budget is not None and budget < 0):
            mask = runner.mask.copy()
            with pytest.raises(TypeError if isinstance(budget, (float, bool)) else ValueError) as err:
                runner.run(max_steps=budget)
            assert str(err.value).startswith("Runner.run: max_steps is a number of launches")
            assert runner.steps == 0 and np.array_equal(runner.mask, mask)
            return
        try:
            report = runner.run(max_steps=budget)
        except ValueError as err:  # a budget of None with none given: not here (max_steps=400)
            pytest.fail(f"run({budget}) raised {err}")
        assert report.finished + report.live == runner.n
        assert 0 <= report.steps <= (400 if budget is None else budget)


@pytest.fixture(scope="module")
def jaxmod():
    jax = pytest.importorskip("jax")
    from eagle.frameworks import jax as eagle_jax

    return jax, eagle_jax


@settings(max_examples=400, **SETTINGS)
@given(case=cases(), how=st.sampled_from(["call", "jit", "vmap"]))
def test_jax_function_never_crashes_and_names_what_is_wrong(plans, jaxmod, case, how):
    jax, eagle_jax = jaxmod
    name, values, n = case
    kernel = KERNELS[name]
    f = eagle_jax.function(kernel)
    values.pop("finished_count", None)
    for s in kernel.slots:  # JAX takes inputs only; Mutables that are outputs only are dropped
        if s.kind == "mutable" and not s.inout:
            values.pop(s.name, None)
    if how == "call":
        fn = lambda: f(**values)  # noqa: E731
    elif how == "jit":
        fn = lambda: jax.jit(lambda **kw: f(**kw))(**values)  # noqa: E731
    else:  # vmap over a leading axis of 2 on every array input
        def fn():
            batched = {k: np.stack([v, v]) if isinstance(v, np.ndarray) else v for k, v in values.items()}
            axes = {k: 0 if isinstance(v, np.ndarray) else None for k, v in values.items()}
            return jax.vmap(lambda kw: f(**kw), in_axes=(axes,))(batched)
    event(f"{how} worked" if try_call(fn, name, values, jax_call=True) else f"{how} refused")


def test_a_param_int_beyond_float_range_is_named(plans):
    values = good(drag3, 5)
    values["cd"] = 10**400
    with pytest.raises(NAMED) as err:
        plans["drag3"].bind(**values)
    assert "drag3" in str(err.value) and "'cd'" in str(err.value)


@pytest.mark.parametrize("bad", ["none", "string", "object", "fake_cuda", "big_endian_memoryview", "big_endian_interface"])
def test_jax_function_names_values_jax_cannot_read(jaxmod, bad):
    _, eagle_jax = jaxmod
    f = eagle_jax.function(lookup)
    value = {"none": None, "string": "x", "object": np.zeros(4, object), "fake_cuda": FakeCuda(np.zeros(4)),
             "big_endian_memoryview": memoryview(np.zeros(4, ">f8")), "big_endian_interface": HostOnly(np.zeros(4, ">f8"))}[bad]
    with pytest.raises(NAMED) as err:
        f(i=value, w=np.arange(4.0))
    assert "lookup" in str(err.value) and "'i'" in str(err.value)


def test_nasty_cases_do_not_crash_the_process(module_cache_dir):
    """Run in a subprocess: a crash (SIGSEGV, abort) shows as a return code, not a dead session."""
    script = textwrap.dedent(f"""
        import numpy as np, eagle, hawk
        from hawk import Mutable, Param, Scalar, Table, Terminated
        @hawk.kernel(steps=1)
        def osc(dt: Param, t_final: Scalar, terminated: Terminated, x: Mutable[Scalar]):
            x = x + dt
            terminated = x >= t_final
        @hawk.kernel
        def lookup(i: Scalar, w: Table[Scalar], y: Mutable[Scalar]):
            y = w.at(i) * 2.0
        p, q = eagle.plan.auto([osc, lookup], cache_dir={module_cache_dir!r})
        named = (TypeError, ValueError, eagle.ModeError)
        cases = [
            dict(dt=0.1, t_final=np.zeros(0), terminated=np.zeros(0, bool), x=np.zeros(0)),
            dict(dt=0.1, t_final=np.ones(5)[::-1], terminated=np.zeros(5, bool), x=np.zeros(5)),
            dict(dt=0.1, t_final=np.ones((5, 2)).T[0], terminated=np.zeros(5, bool), x=np.zeros(5)),
            dict(dt=np.zeros(0), t_final=np.ones(5), terminated=np.zeros(5, bool), x=np.zeros(5)),
            dict(dt=10.0 ** 300, t_final=np.ones(5), terminated=np.zeros(5, bool), x=np.zeros(5)),
            dict(dt=float("nan"), t_final=np.ones(5), terminated=np.zeros(5, bool), x=np.zeros(5)),
            dict(dt=0.1, t_final=memoryview(np.ones(5)), terminated=np.zeros(5, bool), x=np.zeros(5)),
            dict(dt=0.1, t_final=np.ones(5), terminated=np.zeros(5, np.uint8), x=np.zeros(5)),
            dict(dt=0.1, t_final=np.ones(5, object), terminated=np.zeros(5, bool), x=np.zeros(5)),
        ]
        import eagle.loop
        for values in cases:
            for call in (lambda: p.bind(**values).launch(), lambda: eagle.until_done([p], max_steps=10, **values).run(),
                         lambda: eagle.loop.device_emulation([p], variant="while", max_steps=10, **values).run(),
                         lambda: eagle.loop.device_emulation([p], variant="batched", max_steps=10, **values).run()):
                try:
                    call()
                except named:
                    pass
        for w in (np.zeros(0), np.zeros((0, 1)), np.arange(3.0)[::-1]):
            try:
                q.bind(i=np.zeros(4), w=w, y=np.zeros(4)).launch()
            except named + (RuntimeError,):  # an index past a 0-entry table is a RuntimeError
                pass
        print("survived")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "survived" in r.stdout, (r.returncode, r.stdout[-2000:], r.stderr[-4000:])
