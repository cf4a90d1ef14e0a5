"""Faults of the on-disk plan cache (issue 10 item 6, second half): a compile killed with
SIGKILL midway, a torn shared object, a full cache disk, and 2 processes x 4 threads
compiling and launching the same and different kernels into one cache directory.

Each scenario runs plan.auto in fresh subprocesses (an in-process registry would hide what
the disk holds); kernels come from small module files written into the test's directory
(hawk reads a kernel's source from its file), with constants no other test uses, so every
build is a real compile. Numbers are checked against NumPy (x * c + d is exact IEEE
arithmetic in both). Start at ``_module`` and ``_RUN``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TIMEOUT = 180


def _module(dir: Path, tag: str, consts: list[tuple[float, float]]) -> Path:
    """A module `tag`.py defining kernels k0, k1, ... with y = x * c + d."""
    lines = ["import hawk", "from hawk import Mutable, Scalar", ""]
    for i, (c, d) in enumerate(consts):
        lines += ["@hawk.kernel", f"def k{i}(x: Scalar, y: Mutable[Scalar]):", f"    y = x * {c!r} + {d!r}", ""]
    path = dir / f"{tag}.py"
    path.write_text("\n".join(lines))
    return path


# Plans and runs kernels `names` of module `mod` into `cache`; prints one JSON line.
_RUN = r"""
import json, sys, threading
import numpy as np
sys.path.insert(0, {dir!r})
import eagle.plan
mod = __import__({mod!r})
consts = {consts!r}
def run(names):
    ks = [getattr(mod, n) for n in names]
    plans = eagle.plan.auto(ks, cache_dir={cache!r})
    bad = []
    for n, p in zip(names, plans):
        c, d = consts[int(n[1:])]
        for dtype in (np.float64, np.float32):
            x = np.linspace(-3.0, 3.0, 1000).astype(dtype)
            y = np.zeros_like(x)
            p.bind(x=x, y=y).launch()
            want = x * dtype(c) + dtype(d)
            if not np.array_equal(y, want):
                bad.append(f"{{n}} {{dtype.__name__}}: {{y[:3]}} != {{want[:3]}}")
    return bad, [p.info["cache_hit"] for p in plans]
try:
    bad, hits = run({names!r})
    print(json.dumps({{"ok": not bad, "bad": bad, "cache_hit": hits}}))
except Exception as err:
    print(json.dumps({{"ok": False, "error": type(err).__name__, "message": str(err)}}))
"""


def _code(dir: Path, mod: Path, consts, cache: Path, names) -> str:
    return _RUN.format(dir=str(dir), mod=mod.stem, consts=consts, cache=str(cache), names=list(names))


def _run(code: str) -> dict:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _cache_files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file())


def _assert_no_partial_files(cache: Path, expected_cpp: str | None = None) -> None:
    """No temporary file; every shared object matches its digest sidecar; every generated
    source is whole."""
    files = _cache_files(cache)
    assert not [p for p in files if ".tmp-" in p.name], files
    for so in (p for p in files if p.suffix == ".so"):
        side = so.with_suffix(".sha256")
        assert side.exists(), f"{so} without its sidecar"
        assert hashlib.sha256(so.read_bytes()).hexdigest() == side.read_text()[:64], f"{so} does not match its sidecar"
    if expected_cpp is not None:
        for cpp in (p for p in files if p.suffix == ".cpp"):
            assert cpp.read_text() == expected_cpp, f"{cpp} is not the whole source"


# ---------------------------------------------------------------- SIGKILL midway


def test_a_compile_killed_with_sigkill_leaves_a_cache_the_next_process_uses(tmp_path):
    consts = [(3.0625, -0.171875)]
    mod = _module(tmp_path, "fault_kill", consts)
    cache = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-c", _code(tmp_path, mod, consts, cache, ["k0"])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + TIMEOUT
    started = False
    while time.time() < deadline and proc.poll() is None:
        files = _cache_files(cache) if cache.exists() else []
        if any(".so.tmp-" in p.name for p in files):  # the compiler is running: its output's temp file exists
            started = True
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert started, "the compile finished (or failed) before it could be killed"
    assert proc.returncode == -signal.SIGKILL
    assert not [p for p in _cache_files(cache) if p.suffix == ".so"], "killed before the shared object was renamed into place"
    res = _run(_code(tmp_path, mod, consts, cache, ["k0"]))
    assert res["ok"], res
    assert res["cache_hit"] == [False]  # rebuilt: the killed compile left nothing that passes for a build
    res = _run(_code(tmp_path, mod, consts, cache, ["k0"]))
    assert res["ok"] and res["cache_hit"] == [True], res


def test_a_killed_compile_leaves_no_stale_temporary_file(tmp_path):
    """The compiler a SIGKILLed process started outlives it and finishes (or leaves) its
    '<key>.so.tmp-XXXXXX'. The next process to take the entry's lock removes every temporary
    of that entry (only a lock holder writes them); a later cache hit tidies what the orphan
    wrote after that, when the lock is free (CacheEntryLock in cpp/runtime/compiler.hpp)."""
    consts = [(3.1875, 0.296875)]
    mod = _module(tmp_path, "fault_kill_tmp", consts)
    cache = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-c", _code(tmp_path, mod, consts, cache, ["k0"])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + TIMEOUT
    while time.time() < deadline and proc.poll() is None:
        if cache.exists() and any(".so.tmp-" in p.name for p in _cache_files(cache)):
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert _run(_code(tmp_path, mod, consts, cache, ["k0"]))["ok"]  # meanwhile the orphan finishes
    time.sleep(2.0)
    assert _run(_code(tmp_path, mod, consts, cache, ["k0"]))["ok"]
    assert not [p for p in _cache_files(cache) if ".tmp-" in p.name]


def test_a_torn_shared_object_is_rebuilt_not_loaded(tmp_path):
    """What a kill in the middle of a non-atomic write would leave: a truncated .so beside
    its sidecar. The digest check refuses it and the next process rebuilds."""
    consts = [(1.8125, 0.40625)]
    mod = _module(tmp_path, "fault_torn", consts)
    cache = tmp_path / "cache"
    assert _run(_code(tmp_path, mod, consts, cache, ["k0"]))["ok"]
    (so,) = [p for p in _cache_files(cache) if p.suffix == ".so"]
    data = so.read_bytes()
    so.write_bytes(data[: len(data) // 2])
    res = _run(_code(tmp_path, mod, consts, cache, ["k0"]))
    assert res["ok"] and res["cache_hit"] == [False], res
    assert so.read_bytes() == data or hashlib.sha256(so.read_bytes()).hexdigest() == so.with_suffix(".sha256").read_text()[:64]


# ---------------------------------------------------------------- a full disk


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 KiB tmpfs (mode 0700) mounted at tmp_path/'disk'; skipped where mount is refused."""
    disk = tmp_path / "disk"
    disk.mkdir()
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(disk)],
                           capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired) as err:
        pytest.skip(f"cannot mount a small tmpfs: {err}")
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (needs root): {r.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True, timeout=30)


# Free space left on the 64 KiB disk, and what runs out there: the generated source, the
# link of the shared object, its sidecar, the kernel manifests written after the build.
@pytest.mark.parametrize("free_kb", [4, 12, 24, 28])
def test_a_full_cache_disk_gives_a_named_error_and_no_partial_file(tmp_path, small_tmpfs, free_kb):
    consts = [(2.71875, -1.0 - free_kb / 1024)]
    mod = _module(tmp_path, f"fault_full_{free_kb}", consts)
    ok_cache = tmp_path / "ok-cache"  # the same build where there is room: the whole source
    assert _run(_code(tmp_path, mod, consts, ok_cache, ["k0"]))["ok"]
    (cpp,) = [p for p in _cache_files(ok_cache) if p.suffix == ".cpp"]
    filler = small_tmpfs / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * ((64 - free_kb) * 1024))
    cache = small_tmpfs / "cache"
    res = _run(_code(tmp_path, mod, consts, cache, ["k0"]))
    assert not res["ok"] and res["error"] == "RuntimeError", res
    assert "No space left on device" in res["message"], res["message"]
    assert "rejected the code" not in res["message"], res["message"]  # not a codegen bug
    _assert_no_partial_files(cache, cpp.read_text())
    filler.unlink()  # room again: the same cache directory works
    res = _run(_code(tmp_path, mod, consts, cache, ["k0"]))
    assert res["ok"], res
    _assert_no_partial_files(cache, cpp.read_text())


# ---------------------------------------------------------------- 2 processes x 4 threads


_THREADS = r"""
import json, os, sys, threading, time
sys.path.insert(0, {dir!r})
{run_defs}
p = {proc}
while not os.path.exists({go!r}):
    time.sleep(0.002)
results = [None] * 4
def work(t):
    out = []
    i = 4 * p + t
    # one build all 8 threads race for; one kernel all share beside its own and a neighbour's
    for names in (["k8"], ["k8", f"k{{i}}", f"k{{(i + 1) % 8}}"], ["k8"], ["k8", f"k{{i}}", f"k{{(i + 1) % 8}}"]):
        try:
            out.append(run(names))
        except Exception as err:
            out.append(([f"{{type(err).__name__}}: {{err}}"], []))
    results[t] = out
threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
for th in threads: th.start()
for th in threads: th.join()
print(json.dumps(results))
"""


def test_two_processes_of_four_threads_compile_and_launch_into_one_cache(tmp_path):
    consts = [(1.0 + i / 64, -0.5 + i / 32) for i in range(9)]  # k0..k7 own, k8 shared
    mod = _module(tmp_path, "fault_race", consts)
    cache = tmp_path / "cache"
    go = tmp_path / "go"
    run_defs = _RUN.format(dir=str(tmp_path), mod=mod.stem, consts=consts, cache=str(cache), names=[]).split("try:")[0]
    procs = [subprocess.Popen([sys.executable, "-c", _THREADS.format(dir=str(tmp_path), run_defs=run_defs, proc=p, go=str(go))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in range(2)]
    time.sleep(1.0)  # both processes imported and waiting
    go.write_text("go")
    outs = [pr.communicate(timeout=TIMEOUT) for pr in procs]
    for pr, (out, err) in zip(procs, outs):
        assert pr.returncode == 0, err[-3000:]
        results = json.loads(out.strip().splitlines()[-1])
        assert len(results) == 4
        for per_thread in results:
            assert len(per_thread) == 4
            for bad, hits in per_thread:
                assert not bad, bad
                assert len(hits) in (1, 3)
    _assert_no_partial_files(cache)
    assert len([p for p in _cache_files(cache) if p.suffix == ".so"]) >= 1
