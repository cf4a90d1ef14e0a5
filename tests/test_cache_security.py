"""The on-disk plan cache (docs/runtime.md): where it is ($RAPTOR_CACHE_DIR when cache_dir is None)
and which directories it refuses (writable by others, not a directory)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import eagle
import eagle.plan

from cache_kernels import PLAN_AND_RUN, cached_axpy

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


def _refused(cache_dir):
    with pytest.raises(Exception) as e:
        eagle.plan.auto([cached_axpy], cache_dir=str(cache_dir))
    assert isinstance(e.value, (RuntimeError, OSError, ValueError)), type(e.value)
    msg = str(e.value)
    assert str(cache_dir) in msg, msg
    return msg


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_world_or_group_writable_cache_dir_is_refused(tmp_path, mode):
    d = tmp_path / "shared-cache"
    d.mkdir()
    os.chmod(d, mode)
    try:
        msg = _refused(d)
        assert "writable" in msg
        assert os.listdir(d) == []  # nothing was written there
    finally:
        os.chmod(d, 0o700)
    # once private, the same directory is used
    (plan,) = eagle.plan.auto([cached_axpy], cache_dir=str(d))
    assert os.path.realpath(plan.info["so_path"]).startswith(os.path.realpath(d) + os.sep)
    x = np.arange(3.0)
    out = np.zeros(3)
    plan.bind(x=x, y=x, a=2.0, out=out).launch()
    np.testing.assert_array_equal(out, 3.0 * x)


def test_cache_dir_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    _refused(f)


def test_cache_dir_is_created_private(tmp_path):
    d = tmp_path / "new" / "cache"
    (plan,) = eagle.plan.auto([cached_axpy], cache_dir=str(d))
    assert d.is_dir()
    assert (os.stat(d).st_mode & 0o077) == 0
    assert os.path.exists(plan.info["so_path"])
    assert (os.stat(os.path.dirname(plan.info["so_path"])).st_mode & 0o022) == 0


def _subprocess(env_updates, cache_dir=None):
    env = dict(os.environ)
    env.update(env_updates)
    code = PLAN_AND_RUN.format(tests_dir=TESTS_DIR, cache_dir=cache_dir)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_env_var_cache_dir_used_when_cache_dir_is_none(tmp_path):
    env_dir = tmp_path / "env-cache"
    home = tmp_path / "home"
    home.mkdir()
    res = _subprocess({"RAPTOR_CACHE_DIR": str(env_dir), "HOME": str(home)})
    assert res["out"] == [1.0, 3.0, 5.0, 7.0, 9.0]
    assert res["cache_hit"] is False
    assert os.path.realpath(res["so_path"]).startswith(os.path.realpath(env_dir) + os.sep)
    files = [f for _, _, fs in os.walk(env_dir) for f in fs]
    assert any(f.endswith(".so") for f in files) and any(f.endswith(".cpp") for f in files)
    assert not (home / ".cache" / "raptor").exists()  # ~/.cache untouched
    # a second process with the same env finds it there
    res2 = _subprocess({"RAPTOR_CACHE_DIR": str(env_dir), "HOME": str(home)})
    assert res2["cache_hit"] is True and res2["so_path"] == res["so_path"]


def test_explicit_cache_dir_wins_over_env(tmp_path):
    env_dir = tmp_path / "env-cache"
    explicit = tmp_path / "explicit"
    res = _subprocess({"RAPTOR_CACHE_DIR": str(env_dir)}, cache_dir=str(explicit))
    assert os.path.realpath(res["so_path"]).startswith(os.path.realpath(explicit) + os.sep)
    assert not env_dir.exists() or not any(fs for _, _, fs in os.walk(env_dir))


def test_world_writable_env_cache_dir_is_refused(tmp_path):
    env_dir = tmp_path / "env-open"
    env_dir.mkdir()
    os.chmod(env_dir, 0o777)
    try:
        env = dict(os.environ, RAPTOR_CACHE_DIR=str(env_dir))
        code = PLAN_AND_RUN.format(tests_dir=TESTS_DIR, cache_dir=None)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode != 0
        assert str(env_dir) in r.stderr and "writable" in r.stderr
        assert os.listdir(env_dir) == []
    finally:
        os.chmod(env_dir, 0o700)
