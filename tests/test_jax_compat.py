"""The JAX internals the bridge relies on, behind their version guard
(eagle/frameworks/_jax_compat.py; issue 10: no unguarded jax._src access).

Run on the newest JAX and, by the test command's jax_oldest step, on jax 0.11.2:
  1. in the tested range: jax.export of kernel calls round-trips without disabled_checks (and
     with the public export_checks()), and status() says what the bridge used;
  2. the guard refuses, and writes nothing, for a JAX outside the range or an internal of an
     unexpected type, members or sentinel (monkeypatched);
  3. outside the range, in a fresh process: nothing warns, export needs export_checks() and
     says so in JAX's error, sharded calls give the same numbers (gathered).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.extend.core import Primitive  # noqa: E402

import hawk  # noqa: E402
from eagle.frameworks import _jax_compat, _jax_rules  # noqa: E402
from eagle.frameworks import jax as eagle_jax  # noqa: E402
from hawk import Mutable, Param, Vector  # noqa: E402
from hawk.math import norm, vec  # noqa: E402

jax.config.update("jax_enable_x64", True)

EXPORT = importlib.import_module("jax._src.export._export")
DISPATCH = importlib.import_module("jax._src.dispatch")


@hawk.kernel
def drag(v: Vector[3], cd: Param, dt: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -9.81) - cd * norm(v) * v
    v_next = v + dt * a


def jnp_drag(v, cd, dt):
    a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -9.81])[:, None]
    return v + dt * a


@pytest.fixture(autouse=True)
def _keep_status(monkeypatch):
    """What the bridge recorded at import stays for the next test (the guard tests overwrite it)."""
    monkeypatch.setattr(_jax_compat, "_status", dict(_jax_compat._status))


def _velocities(n: int = 16) -> jnp.ndarray:
    return jnp.asarray(np.random.default_rng(3).normal(size=(3, n)))


# ================================================================================================
# 1. in the tested range


def test_this_jax_is_in_the_tested_range_and_the_bridge_used_both_internals():
    assert _jax_compat.in_tested_range(), jax.__version__
    _jax_rules.register_targets()
    st = _jax_compat.status()
    assert "'raptor_kernel' marked stable" in st["export"], st
    assert "'raptor_kernel' added" in st["sharding"], st
    assert _jax_rules.TARGET in EXPORT._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE
    assert _jax_rules.kernel_p in DISPATCH.prim_requires_devices_during_lowering


@pytest.mark.parametrize("checks", ["none", "export_checks"])
def test_export_round_trips_value_and_grad(checks):
    f = eagle_jax.function(drag, wrt=("v", "cd"), lowering="ffi")
    v = _velocities()
    kwargs = {} if checks == "none" else {"disabled_checks": eagle_jax.export_checks()}
    exported = jax.export.export(jax.jit(f), **kwargs)(v, 0.3, 0.05)
    assert "raptor_kernel" in exported.mlir_module()
    again = jax.export.deserialize(exported.serialize(vjp_order=1))
    np.testing.assert_allclose(again.call(v, 0.3, 0.05), jnp_drag(v, 0.3, 0.05), rtol=1e-12, atol=1e-14)
    grad = jax.grad(lambda cd: again.call(v, cd, 0.05).sum())(0.3)
    np.testing.assert_allclose(grad, jax.grad(lambda cd: jnp_drag(v, cd, 0.05).sum())(0.3), rtol=1e-10)


# ================================================================================================
# 2. the guard refuses what it does not know, and writes nothing


@pytest.mark.parametrize("version", ["0.11.1", "0.13.0", "1.0.0", "0.4.38", "dev"])
def test_a_jax_outside_the_tested_range_is_refused(monkeypatch, version):
    stable = set(EXPORT._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE)
    devices = set(DISPATCH.prim_requires_devices_during_lowering)
    monkeypatch.setattr(jax, "__version__", version)
    assert not _jax_compat.in_tested_range()
    assert not _jax_compat.mark_export_stable("raptor_compat_probe")
    assert not _jax_compat.require_devices_at_lowering(Primitive("raptor_compat_probe"))
    st = _jax_compat.status()
    assert f"jax {version} is outside the tested range 0.11.2 .. 0.12.x" in st["export"], st
    assert "export_checks()" in st["export"], st
    assert "gathered" in st["sharding"], st
    assert EXPORT._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE == stable
    assert DISPATCH.prim_requires_devices_during_lowering == devices


def test_the_range_bounds():
    assert _jax_compat.in_tested_range("0.11.2") and _jax_compat.in_tested_range("0.12.0.1")
    assert _jax_compat.in_tested_range("0.12.9") and not _jax_compat.in_tested_range("0.13.0")
    assert not _jax_compat.in_tested_range("0.11.1") and not _jax_compat.in_tested_range("")


def _real_stable() -> set:
    return set(EXPORT._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE)


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda: frozenset(_real_stable()), "it is frozenset"),
        (lambda: sorted(_real_stable()), "it is list"),
        (lambda: {t: True for t in _real_stable()}, "it is dict"),
        (lambda: None, "it is NoneType"),
        (lambda: _real_stable() - {"Sharding"}, "it lacks the members JAX puts there"),
        (lambda: set(), "it lacks the members JAX puts there"),
        (lambda: _real_stable() | {42}, "members other than str"),
    ],
)
def test_an_export_set_of_another_shape_is_refused_and_untouched(monkeypatch, make, why):
    fake = make()
    before = fake.copy() if hasattr(fake, "copy") else fake
    monkeypatch.setattr(EXPORT, "_CUSTOM_CALL_TARGETS_GUARANTEED_STABLE", fake)
    assert not _jax_compat.mark_export_stable("raptor_compat_probe")
    assert why in _jax_compat.status()["export"], _jax_compat.status()
    assert fake == before


def test_an_export_module_that_is_not_jax_exports_is_refused(monkeypatch):
    class Other:
        pass

    fake = _real_stable()
    monkeypatch.setattr(EXPORT, "_CUSTOM_CALL_TARGETS_GUARANTEED_STABLE", fake)
    monkeypatch.setattr(EXPORT, "DisabledSafetyCheck", Other)
    assert not _jax_compat.mark_export_stable("raptor_compat_probe")
    assert "is not the module jax.export uses" in _jax_compat.status()["export"]
    assert "raptor_compat_probe" not in fake


def test_an_export_set_as_expected_is_written(monkeypatch):
    fake = _real_stable()  # a copy: the real set keeps only what the bridge put there
    monkeypatch.setattr(EXPORT, "_CUSTOM_CALL_TARGETS_GUARANTEED_STABLE", fake)
    assert _jax_compat.mark_export_stable("raptor_compat_probe")
    assert "raptor_compat_probe" in fake


def _real_devices() -> set:
    return set(DISPATCH.prim_requires_devices_during_lowering)


def test_the_devices_set_as_expected_is_written_and_holds_custom_partitioning(monkeypatch):
    from jax.experimental.custom_partitioning import custom_partitioning_p

    assert custom_partitioning_p in DISPATCH.prim_requires_devices_during_lowering
    fake = _real_devices()
    monkeypatch.setattr(DISPATCH, "prim_requires_devices_during_lowering", fake)
    probe = Primitive("raptor_compat_probe")
    assert _jax_compat.require_devices_at_lowering(probe)
    assert probe in fake


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda: frozenset(_real_devices()), "it is frozenset"),
        (lambda: list(_real_devices()), "it is list"),
        (lambda: set(), "it lacks the members JAX puts there"),
        (lambda: {p for p in _real_devices() if p.name != "custom_partitioning"}, "it lacks the members JAX puts there"),
        (lambda: _real_devices() | {"custom_partitioning"}, "members other than Primitive"),
    ],
)
def test_a_devices_set_of_another_shape_is_refused_and_untouched(monkeypatch, make, why):
    fake = make()
    before = fake.copy()
    monkeypatch.setattr(DISPATCH, "prim_requires_devices_during_lowering", fake)
    assert not _jax_compat.require_devices_at_lowering(Primitive("raptor_compat_probe"))
    assert why in _jax_compat.status()["sharding"], _jax_compat.status()
    assert fake == before


def test_a_dispatch_module_that_no_longer_reads_the_set_is_refused(monkeypatch):
    fake = _real_devices()
    monkeypatch.setattr(DISPATCH, "prim_requires_devices_during_lowering", fake)
    monkeypatch.delattr(DISPATCH, "jaxpr_has_prim_requiring_devices")
    probe = Primitive("raptor_compat_probe")
    assert not _jax_compat.require_devices_at_lowering(probe)
    assert "jaxpr_has_prim_requiring_devices" in _jax_compat.status()["sharding"]
    assert probe not in fake


def test_require_devices_takes_a_primitive():
    with pytest.raises(TypeError, match="jax.extend.core.Primitive"):
        _jax_compat.require_devices_at_lowering("raptor_kernel")


# ================================================================================================
# 3. outside the tested range, in a fresh process


_OUTSIDE = r'''
import warnings
warnings.simplefilter("error")  # the degradation is warning-free
import numpy as np
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
jax.__version__ = "0.13.0"  # a JAX the guard does not know
import hawk
from eagle.frameworks import jax as eagle_jax, _jax_compat, _jax_rules
from hawk import Mutable, Param, Vector
from hawk.math import norm, vec
from jax.sharding import NamedSharding, PartitionSpec as P

@hawk.kernel
def drag(v: Vector[3], cd: Param, dt: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -9.81) - cd * norm(v) * v
    v_next = v + dt * a

def jnp_drag(v, cd, dt):
    a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -9.81])[:, None]
    return v + dt * a

f = eagle_jax.function(drag, wrt=("v", "cd"), lowering="ffi")
v = jnp.asarray(np.random.default_rng(3).normal(size=(3, 16)))
want = jnp_drag(v, 0.3, 0.05)
st = _jax_compat.status()
print("status", st)
assert "outside the tested range" in st["export"] and "outside the tested range" in st["sharding"], st
from jax._src.export import _export
from jax._src import dispatch
assert "raptor_kernel" not in _export._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE
assert _jax_rules.kernel_p not in dispatch.prim_requires_devices_during_lowering
try:
    jax.export.export(jax.jit(f))(v, 0.3, 0.05)
except ValueError as e:
    assert "raptor_kernel" in str(e) and "disabled_checks" in str(e), e
    print("export without checks refused")
else:
    raise AssertionError("exported without disabled_checks outside the tested range")
exported = jax.export.export(jax.jit(f), disabled_checks=eagle_jax.export_checks())(v, 0.3, 0.05)
again = jax.export.deserialize(exported.serialize())
np.testing.assert_allclose(again.call(v, 0.3, 0.05), want, rtol=1e-12, atol=1e-14)
print("export with export_checks ok")
mesh = jax.make_mesh((4,), ("s",))
vs = jax.device_put(v, NamedSharding(mesh, P(None, "s")))
out = jax.jit(f)(vs, 0.3, 0.05)
np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-14)
g = jax.jit(jax.grad(lambda cd: f(vs, cd, 0.05).sum()))(0.3)
np.testing.assert_allclose(g, jax.grad(lambda cd: jnp_drag(v, cd, 0.05).sum())(0.3), rtol=1e-10)
print("sharded ok")
'''


def test_outside_the_tested_range_nothing_warns_export_needs_export_checks_and_sharding_still_computes(tmp_path):
    path = tmp_path / "outside.py"
    path.write_text(textwrap.dedent(_OUTSIDE))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "RAPTOR_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    for line in ("export without checks refused", "export with export_checks ok", "sharded ok"):
        assert line in p.stdout, p.stdout + p.stderr
    assert "Warning" not in p.stderr, p.stderr
