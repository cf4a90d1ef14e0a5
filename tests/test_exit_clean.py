"""No "nanobind: leaked N instances!" at exit (issue 10, hole 5): a program that fills JAX's
caches with kernels exits clean.

The leak's cause (eagle/frameworks/_jax_exit.py): jaxlib's pytree registry is never freed, so a
class registered as a pytree node in a script (every equinox Module: diffrax vector fields,
models) keeps the script's globals dict alive forever, and with it the kernels and bridge
functions the script holds in globals. The programs here imitate a diffrax program in plain JAX:
a vector-field class registered as a pytree node in ``__main__`` holding a kernel function as
static data, an adaptive solver (``lax.while_loop`` with a step-size controller saving many
steps), a checkpointed ``lax.scan`` differentiated with ``grad`` (RecursiveCheckpointAdjoint),
a ``custom_vjp`` solve whose backward pass integrates the adjoint equation with kernels
(BacksolveAdjoint), vmap over initial conditions, jacfwd and hessian, a kernel defined inside a
function, and plans in a non-default cache directory.

Each program runs in a fresh process (the exit is what is tested); its numbers are checked
against the same computation in jax.numpy inside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("jax")

PROGRAM = r'''
import os, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
jax.config.update("jax_enable_x64", True)
import eagle, eagle.plan, hawk
from eagle.frameworks import jax as eagle_jax
from hawk import Mutable, Param, Scalar, Vector
from hawk.math import sin, cos

class Sentinel:  # tells whether this script's globals were freed at exit
    def __del__(self):
        os.write(2, b"sentinel freed\n")
sentinel = Sentinel()

@hawk.kernel
def field(y: Vector[2], k: Param, dy: Mutable[Vector[2]]):
    dy = -k * y + 0.1 * sin(y)

def jnp_field(y, k):
    return -k * y + 0.1 * jnp.sin(y)

f = eagle_jax.function(field, wrt=("y", "k"))

def make_damping():  # a kernel defined inside a function (its own closure)
    @hawk.kernel
    def damping(y: Scalar, c: Param, out: Mutable[Scalar]):
        out = -c * y * cos(y)
    return damping
damp = eagle_jax.function(make_damping(), wrt=("y", "c"))

class VectorField:  # what an equinox Module is: a pytree node class, the kernel as static data
    def __init__(self, fn):
        self.fn = fn
    def __call__(self, t, y, k):
        return self.fn(y, k)
jax.tree_util.register_pytree_node(VectorField, lambda v: ((), v.fn), lambda fn, _: VectorField(fn))

def tsit_like_step(vf, t, y, k, h):  # an explicit RK step (the structure of Tsit5's stages)
    k1 = vf(t, y, k)
    k2 = vf(t + h / 2, y + h / 2 * k1, k)
    k3 = vf(t + h / 2, y + h / 2 * k2, k)
    k4 = vf(t + h, y + h * k3, k)
    y_new = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    err = jnp.max(jnp.abs(h / 6 * (k1 - 2 * k2 + k3)))
    return y_new, err

def adaptive(vf, y0, k, saves=64):  # PIDController-like: accept/reject, save on a grid
    ts = jnp.linspace(0.0, 1.0, saves)
    def cond(c):
        return (c[0] < 1.0) & (c[4] < 4096)
    def body(c):
        t, y, h, out, n, i = c
        h = jnp.minimum(h, 1.0 - t)
        y_new, err = tsit_like_step(vf, t, y, k, h)
        ok = err < 1e-7
        t2 = jnp.where(ok, t + h, t)
        y2 = jnp.where(ok, y_new, y)
        hit = ok & (i < saves) & (t2 >= ts[jnp.minimum(i, saves - 1)])
        out = jnp.where(hit, out.at[jnp.minimum(i, saves - 1)].set(y2), out)
        i = jnp.where(hit, i + 1, i)
        h = h * jnp.clip(0.9 * (1e-7 / jnp.maximum(err, 1e-14)) ** 0.2, 0.2, 5.0)
        return t2, y2, h, out, n + 1, i
    out0 = jnp.zeros((saves,) + y0.shape).at[0].set(y0)
    return lax.while_loop(cond, body, (0.0, y0, 0.01, out0, 0, 1))[3]

def fixed(vf, y0, k, steps=100):  # RecursiveCheckpointAdjoint-like: checkpointed scan
    h = 1.0 / steps
    @jax.checkpoint
    def body(y, t):
        return tsit_like_step(vf, t, y, k, h)[0], y
    return lax.scan(body, y0, jnp.arange(steps) * h)[0]

@jax.custom_vjp
def backsolve(y0, k):  # BacksolveAdjoint-like: the backward pass integrates the adjoint ODE
    return fixed(VectorField(f), y0, k)
def backsolve_fwd(y0, k):
    y1 = backsolve(y0, k)
    return y1, (y1, k)
def backsolve_bwd(res, a1):
    y1, k = res
    h = 1.0 / 100
    def body(c, _):
        y, a, gk = c
        _, vjp = jax.vjp(lambda yy, kk: f(yy, kk), y, k)
        ay, ak = vjp(a)
        return (y - h * f(y, k), a + h * ay, gk + h * ak), None
    (_, a0, gk), _ = lax.scan(body, (y1, a1, 0.0), None, length=100)
    return a0, gk
backsolve.defvjp(backsolve_fwd, backsolve_bwd)

def check(name, got, want, tol):
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    scale = float(np.max(np.abs(np.asarray(want))))
    assert scale > 0, name  # a reference of zeros would check nothing
    print(f"{name} {err / scale:.3e}")
    assert err <= tol * scale, (name, err, scale)

vf_k, vf_j = VectorField(f), VectorField(jnp_field)
y0 = jnp.linspace(0.5, 1.5, 16).reshape(2, 8)
ys = jax.jit(lambda y, k: adaptive(VectorField(f), y, k))(y0, 0.5)
check("adaptive", ys, jax.jit(lambda y, k: adaptive(VectorField(jnp_field), y, k))(y0, 0.5), 1e-9)
g = jax.jit(jax.grad(lambda k: fixed(vf_k, y0, k).sum()))(0.5)
check("grad-scan", g, jax.grad(lambda k: fixed(vf_j, y0, k).sum())(0.5), 1e-9)
check("grad-backsolve", jax.grad(lambda k: backsolve(y0, k).sum())(0.5), g, 1e-2)  # first order in h
batch = jnp.stack([y0, 2 * y0, -y0])
check("vmap", jax.jit(jax.vmap(lambda y: fixed(vf_k, y, 0.5)))(batch), jax.vmap(lambda y: fixed(vf_j, y, 0.5))(batch), 1e-9)
check("jacfwd", jax.jacfwd(lambda y: fixed(vf_k, y, 0.5, steps=10))(y0), jax.jacfwd(lambda y: fixed(vf_j, y, 0.5, steps=10))(y0), 1e-9)
check("hessian", jax.hessian(lambda k: fixed(vf_k, y0, k, steps=5).sum())(0.5), jax.hessian(lambda k: fixed(vf_j, y0, k, steps=5).sum())(0.5), 1e-9)
x = jnp.linspace(0.1, 1.0, 8)
check("closure-kernel", jax.grad(lambda c: damp(x, c).sum())(0.3), jax.grad(lambda c: (-c * x * jnp.cos(x)).sum())(0.3), 1e-12)

# plans in a non-default cache directory, bound and launched, held in globals
(plan,) = eagle.plan.auto([field], cache_dir=os.environ["OTHER_CACHE"])
yy = np.ascontiguousarray(np.asarray(y0))
out = np.zeros_like(yy)
bound = plan.bind(y=yy, k=0.5, dy=out)
bound.launch()
check("plan", out, jnp_field(y0, 0.5), 1e-12)
'''


def _run(tmp_path, extra: str = "") -> subprocess.CompletedProcess:
    """Runs PROGRAM (plus ``extra``) in a fresh process, from a file (hawk reads kernel sources
    from their files)."""
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(PROGRAM) + textwrap.dedent(extra))
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "RAPTOR_CACHE_DIR": str(tmp_path / "cache"),
        "OTHER_CACHE": str(tmp_path / "other-cache"),
    }
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)


def _numbers_checked(p: subprocess.CompletedProcess) -> None:
    assert p.returncode == 0, p.stdout + p.stderr
    names = [line.split()[0] for line in p.stdout.splitlines()]
    assert names == ["adaptive", "grad-scan", "grad-backsolve", "vmap", "jacfwd", "hessian", "closure-kernel", "plan"], p.stdout


def test_program_filling_jax_caches_with_kernels_exits_without_leak_report(tmp_path):
    p = _run(tmp_path)
    _numbers_checked(p)
    assert "leaked" not in p.stderr, p.stderr


def test_the_program_exercises_the_leak_without_the_exit_release(tmp_path):
    """The same program with raptor's exit release unregistered: its globals are never freed
    (JAX's pytree registry holds them), and nanobind reports the kernels' handles. This is the
    report the first test guards against, so that test fails without the fix."""
    p = _run(tmp_path, "\nimport atexit\nfrom eagle.frameworks import _jax_exit\natexit.unregister(_jax_exit.release)\n")
    _numbers_checked(p)
    if "sentinel freed" in p.stderr:
        pytest.skip("this JAX no longer keeps a script's globals alive past shutdown: nothing to release")
    assert "nanobind: leaked" in p.stderr, p.stderr
    assert "raptor_core._core." in p.stderr, p.stderr


def test_released_objects_name_the_release_and_compiled_calls_still_run(tmp_path):
    """After ``release`` (what runs at exit), a jitted function compiled before still runs (the
    kernel stays registered in C++: an XLA call in flight is safe), and tracing a kernel again
    raises a RuntimeError saying it was released."""
    p = _run(tmp_path, r'''
from eagle.frameworks import _jax_exit
step = jax.jit(lambda y: f(y, 0.5))
before = np.asarray(step(y0))
changed = _jax_exit.release()
assert changed > 0, changed
assert np.array_equal(np.asarray(step(y0)), before)
print("after-release ok", changed)
try:
    jax.jit(lambda y: f(y, 0.25))(y0)
except RuntimeError as e:
    assert "released at interpreter exit" in str(e), e
    print("released:", e)
else:
    raise AssertionError("a released kernel was traced")
''')
    assert p.returncode == 0, p.stdout + p.stderr
    assert "after-release ok" in p.stdout and "released: raptor: the raptor_core._core." in p.stdout, p.stdout
    assert "leaked" not in p.stderr, p.stderr


def test_release_replaces_handles_in_attributes_and_containers(tmp_path):
    """What ``release`` does to one raptor object (in this process: only to this object)."""
    import eagle.plan
    from eagle.frameworks import _jax_exit
    from raptor_core import _core

    class Holder(eagle.plan.Plan):  # a subclass of a raptor class is raptor's
        pass

    class UserThing:
        pass

    cores = [_core.Compiler(str(tmp_path / f"c{i}")) for i in range(5)]
    h = Holder.__new__(Holder)
    shared = [cores[1], 1]
    h.direct, h.items, h.by_name, h.pair, h.keyed, h.plain = cores[0], shared, {"a": cores[2], "b": 2}, (cores[3], "x"), {cores[4]: 1}, 3
    assert _jax_exit._release_object(h) == 5
    assert isinstance(h.direct, _jax_exit.Released) and isinstance(shared[0], _jax_exit.Released) and shared[1] == 1
    assert isinstance(h.by_name["a"], _jax_exit.Released) and h.by_name["b"] == 2
    assert isinstance(h.pair[0], _jax_exit.Released) and h.pair[1] == "x"
    assert h.keyed == {} and h.plain == 3
    with pytest.raises(RuntimeError, match=r"raptor_core\._core\.Compiler was released at interpreter exit"):
        h.direct.cache_dir
    assert _jax_exit._release_object(h) == 0  # nothing left to release
    cache: dict = {}
    assert _jax_exit._owned(Holder, cache) and not _jax_exit._owned(UserThing, cache)
