"""Shared fixtures for the raptor Python test suite.

Every plan is compiled into a temporary cache directory (never ~/.cache/raptor): a per-test
one (``cache_dir``) or a per-module one (``module_cache_dir``) for modules that compile all
their kernels once. ``Page`` runs the user's documentation pages cell by cell, as a notebook
does (the page tests of test_jax_pages.py, test_graphs.py and test_reverse.py).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import linecache
import os
import pathlib
import re
import subprocess
import sys
import textwrap
import time
from typing import Any, Callable

import numpy as np
import pytest

import eagle
import eagle.plan
import hawk

DTYPES = (np.float32, np.float64)


@pytest.fixture(autouse=True)
def _no_home_cache(monkeypatch, tmp_path_factory):
    """Point RAPTOR_CACHE_DIR at a temp dir so a test that forgets cache_dir never touches
    ~/.cache. Tests pass cache_dir explicitly anyway."""
    monkeypatch.setenv("RAPTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "env-cache"))


@pytest.fixture
def benchmark_module(monkeypatch) -> Callable[[str], Any]:
    """A loader of ``benchmarks/<name>.py`` as a module, for the benchmarks' smoke tests. Such a
    script puts benchmarks/ first on sys.path when imported; sys.path is restored after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))

    def load(name: str) -> Any:
        path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"{name}_under_test", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def cache_dir(tmp_path) -> str:
    """A fresh cache directory for one test (created by raptor itself, mode 0700)."""
    return str(tmp_path / "raptor-cache")


@pytest.fixture(scope="module")
def module_cache_dir(tmp_path_factory) -> str:
    """One cache directory shared by the tests of a module."""
    return str(tmp_path_factory.mktemp("module") / "raptor-cache")


def plan_kernels(kernels, cache_dir: str) -> dict[str, Any]:
    """Plans kernels (one translation unit) and returns {kernel name: plan}."""
    plans = eagle.plan.auto(list(kernels), targets=("host",), cache_dir=cache_dir)
    return {p.kernel.name: p for p in plans}


def assert_sum_close(actual, terms, rtol: float, *, axis=None, err_msg: str = "") -> None:
    """Checks a computed sum against np.sum(terms) with a tolerance scaled by the terms.

    A sum's rounding error is bounded by a multiple of the sum of its terms' magnitudes, not of
    the sum itself: terms that cancel (tanh over a symmetric grid, zero-mean draws) leave a
    result near 0 whose last bits depend on the order in which the machine added them (the
    vector width, the thread count). So the absolute tolerance is rtol * sum(|terms|), and a
    check never depends on that order.
    """
    terms = np.asarray(terms, dtype=np.float64)
    want = np.sum(terms, axis=axis)
    scale = np.sum(np.abs(terms), axis=axis)
    np.testing.assert_allclose(actual, want, rtol=rtol, atol=float(rtol * np.max(scale)), err_msg=err_msg)


def launch_once(plan, **values):
    """Binds a plan to values, launches once, and returns (bound, finished)."""
    bound = plan.bind(**values)
    finished = bound.launch()
    return bound, finished


@pytest.fixture
def run_kernel(cache_dir) -> Callable[..., Any]:
    """``run_kernel(kernel, **values)``: plans ``kernel`` in the test's cache dir, binds it to
    ``values`` and launches it once; returns the Bound (its arrays are the caller's)."""

    def run(kernel: hawk.Kernel, **values: Any):
        (plan,) = eagle.plan.auto([kernel], targets=("host",), cache_dir=cache_dir)
        bound, _ = launch_once(plan, **values)
        return bound

    return run


def run_on_host_devices(tmp_path: pathlib.Path, source: str, devices: int = 4, timeout: int = 300) -> str:
    """Runs ``source`` as a script file (hawk reads a kernel's source from its file) in a fresh
    Python with JAX on the CPU split into ``devices`` host devices and float64 enabled (the
    sharding tests); asserts that it exits 0 having printed "ok" and returns its stdout."""
    path = tmp_path / "shard.py"
    path.write_text(source)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "1",
           "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ok" in p.stdout, p.stdout[-3000:]
    return p.stdout


def same_output_over_thread_counts(tmp_path: pathlib.Path, source: str,
                                   runs: tuple[tuple[int, tuple[str, ...]], ...] = ((1, ()), (2, ()), (3, ())),
                                   env: dict[str, str] | None = None, timeout: int = 300) -> str:
    """Runs ``source`` as a script file once per ``(threads, extra argv)`` of ``runs``, each a
    fresh Python with RAPTOR_NUM_THREADS = threads and argv ``[cache dir, *extra]`` (one cache
    dir under tmp_path for all); asserts that every run exits 0 and prints the same, and
    returns that output, stripped (the determinism tests: the same bits on any thread count)."""
    path = tmp_path / "threads.py"
    path.write_text(source)
    seen = set()
    for threads, extra in runs:
        run_env = {**os.environ, **(env or {}), "RAPTOR_NUM_THREADS": str(threads)}
        p = subprocess.run([sys.executable, str(path), str(tmp_path / "cache"), *extra],
                           capture_output=True, text=True, env=run_env, timeout=timeout)
        assert p.returncode == 0, p.stderr[-3000:]
        seen.add(p.stdout.strip())
    assert len(seen) == 1, seen
    return seen.pop()


def nvrtc_missing() -> bool:
    """Whether no NVRTC can be loaded here (CUDA emission tests skip then)."""
    from raptor_core import _core

    try:
        _core.nvrtc_check([], "sm_80")
    except RuntimeError as e:
        if "NVRTC not found" in str(e):
            return True
        raise
    return False


def require_jax_normal_reference() -> None:
    """Refuses, by name, a jax whose jax.random.normal is not the one the kernels follow.

    The kernels' normal draws follow jax >= 0.12.1's default erf_inv (jax_accurate_erf_inv=True,
    docs/language.md "Tolerance of normal"); jax <= 0.12.0's default is up to 5.8e-6 away in
    float32 tails, so the reference draws of these tests need the newer one.
    """
    import jax

    version = tuple(int(p) for p in re.findall(r"\d+", jax.__version__)[:3])
    if version < (0, 12, 1) or not jax.config.jax_accurate_erf_inv:
        raise RuntimeError(f"the normal-draw tests compare against jax >= 0.12.1 with its default "
                           f"jax_accurate_erf_inv=True; this is jax {jax.__version__} with "
                           f"jax_accurate_erf_inv={jax.config.jax_accurate_erf_inv}: "
                           f"pip install 'jax>=0.12.1' (the test extra asks for it)")


def outputs_for(kernel: hawk.Kernel, n: int, dtype) -> dict[str, np.ndarray]:
    """Zero arrays for every pure output plane of a kernel (Mutable not read before written)."""
    out = {}
    for s in kernel.slots:
        if s.kind == "mutable" and not s.inout:
            out[s.name] = np.zeros((s.width, n) if s.is_vector else (n,), dtype=dtype)
    return out


class Page:
    """A notebook page of the user's documentation: cells run once each, in order, in one
    namespace. Each cell is registered in linecache, as IPython does, so that
    ``@hawk.kernel`` finds its source; a cell's last expression is printed, as a notebook
    shows it."""

    def __init__(self, name: str, cells: list[str]) -> None:
        self.name = name
        self.cells = [textwrap.dedent(c).strip("\n") + "\n" for c in cells]
        self.ns: dict = {"__name__": f"__{name}__"}
        self.outputs: list[str] = []

    def run(self, upto: int) -> list[str]:
        """Runs every cell up to and including ``upto`` (once each); returns cell upto's
        printed lines."""
        while len(self.outputs) <= upto:
            i = len(self.outputs)
            file = f"<{self.name}-cell-{i}>"
            src = self.cells[i]
            linecache.cache[file] = (len(src), None, src.splitlines(True), file)
            tree = ast.parse(src, file)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(tree, file, "exec"), self.ns)
                if last is not None:  # a notebook shows the value of a cell's last expression
                    value = eval(compile(ast.Expression(last.value), file, "eval"), self.ns)
                    if value is not None:
                        print(repr(value))
            self.outputs.append(buf.getvalue())
        return self.outputs[upto].splitlines()


# --- The NVRTC check of issue 9 (CI, no GPU needed) ----------------------------------------
# Every hawk.Kernel the session creates is recorded (its `_core`, a strong reference); at the
# end each distinct one, and for each one that is not itself derived its tangent and adjoint
# with respect to all its float inputs where those derive, is compiled with NVRTC to a cubin
# in both dtypes (raptor_core._core.nvrtc_check, in batches over threads, with
# --Ofast-compile=max: the front end, NVVM and ptxas all run, with less optimization, about 3x
# faster), for sm_80 or sm_90, alternating batch by batch. The generated code has no
# architecture conditionals, so the two differ only in NVVM's and ptxas's back ends, and both
# cost the same (a batch of 32 random kernels: about 0.08 s per kernel each); compiling every
# kernel for both doubled the check (175-182 s per CI worker). tests/test_cuda_compile.py
# compiles its kernels for both. A kernel a test already compiled to a cubin (its own
# _core.nvrtc_check) is claimed then and not compiled again here (_record_test_compiles).
# A failure fails the session. RAPTOR_SKIP_NVRTC_CHECK=1 skips it.
_NVRTC_ARCHS = ("sm_80", "sm_90")
_SESSION_START = time.perf_counter()
_NVRTC_BATCH = 32
_session_kernels: list[Any] = []
# Kernels made by Kernel.with_steps (eagle's fused stepping passes: 256 and 16 times a
# kernel's steps): compiled as they are, not derived. Their derivatives are the kernel's own
# with more steps, which nothing derives (until_done runs passes forward only, and on the host
# only); the adjoint of the flight kernel's 256-step pass alone took NVRTC 72 s (16 steps:
# 0.7 s), and with them the check took over 200 s on each CI worker, against 123 s and 84 s
# when passes were 64 steps.
_not_derived: set[int] = set()
# Kernels whose derivatives are not compiled at all, by name (tests/linalg_cases.py: the 4x4
# to 6x6 linear algebra): neither derived here nor, when a test derives them (the JAX
# bridge's tangent and adjoint of the 6x6 eigh, and derivatives of those), recorded; their
# rules are the 3x3 kernel's, which is compiled with its derivatives, and
# test_linalg_nvrtc.py compiles the 6x6 eigh's tangent itself. The 6x6 eigh's adjoint alone
# took NVRTC minutes of CPU, its tangent's adjoint (28,205 lines) 562 s.
_underived_names: set[str] = set()
# Kernels whose first derivatives are compiled (derived here, or recorded when a test makes
# them) but not the derivatives of those, by name (tests/linalg_cases.py: diff3, every
# linear algebra function at 3x3). A second or third derivative applies the same rules again
# to a kernel that grows each time: check_grads at order 2 through the JAX bridge made diff3's
# up to 8,821 lines, two batches of them 178-190 s of NVRTC. Second derivatives of matrix
# operations stay compiled (test_matrix.py's, test_derivatives_higher.py's).
_first_order_names: set[str] = set()
# The test that made each recorded kernel (id of its core -> node id), for the check's report
# of its slowest batches.
_made_by: dict[int, str] = {}
_DERIVED_ORIGIN = re.compile(r"^(?:tangent|adjoint|linearized primal|linearized tangent|winner) of (\w+)$")
# The suffixes derived kernels' names carry (hawk.Kernel.tangent, adjoint, linearize, winner).
_DERIVED_SUFFIX = re.compile(r"_(?:tangent|adjoint|jvp_primal|jvp_linear|winner)$")


def _derived_from(origin: str) -> tuple[str, int] | None:
    """For a derived kernel's origin ("adjoint of k_tangent"), the kernel it was derived from
    at the root and the order (here 2: the origin's name is k_tangent, itself derived); None
    for a kernel that is not derived."""
    derived = _DERIVED_ORIGIN.match(origin)
    if not derived:
        return None
    name, order = derived.group(1), 1
    while (m := _DERIVED_SUFFIX.search(name)) is not None:
        name, order = name[: m.start()], order + 1
    return name, order


_kernel_init = hawk.Kernel.__init__


def _recording_init(self, core: Any, *args: Any, **kwargs: Any) -> None:
    _kernel_init(self, core, *args, **kwargs)
    derived = _derived_from(str(getattr(self, "_origin", "")))
    if derived and (derived[0] in _underived_names or (derived[0] in _first_order_names and derived[1] > 1)):
        return
    # A staged kernel is never built as one kernel: its stages are (cpp/passes/stages.hpp).
    made = core.stages() if core.staged else [core]
    _session_kernels.extend(made)
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0] or "a test module's import"
    for c in made:
        _made_by.setdefault(id(c), test)
    if " with steps=" in str(getattr(self, "_origin", "")):  # Kernel.with_steps's origin
        _not_derived.add(id(core))


hawk.Kernel.__init__ = _recording_init  # type: ignore[method-assign]


def _float_inputs(core: Any) -> list[str]:
    """The names of a kernel's float inputs: Params, planes, Tables and in-out Mutables."""
    return [
        name
        for name, kind, _w, _v, inout, _t in core.slots()
        if kind in ("param", "plane", "table") or (kind == "mutable" and inout)
    ]


_SYMBOL = re.compile(r"\braptor_\w+?_[0-9a-f]{16}_f(?:32|64)\b")


def _cuda_structure(core: Any) -> str:
    """A kernel's CUDA code as NVRTC compiles it, less what cannot change whether it compiles:
    the shared prelude, comment lines (the kernel's name, file and source lines) and its
    symbol. Kernels that differ only there (the same body defined in several tests, or
    under several names) compile as one. A comment that could matter stays: one ending in a
    backslash (it splices the next line into the comment) or with non-ASCII text."""
    src = core.cuda("float64")
    body = src[src.find("// ---- kernel ") :]
    lines = [
        ln
        for ln in body.splitlines()
        if not ln.lstrip().startswith("//") or ln.endswith("\\") or not ln.isascii()
    ]
    return _SYMBOL.sub("raptor_k", "\n".join(lines))


def _nvrtc_kernels(cores: list[Any]) -> tuple[list[Any], int]:
    """Each structurally distinct kernel once (see _cuda_structure; kernels with one digest
    are one), followed by the derivable tangent and adjoint of each that is not itself
    derived, deduplicated the same way; and
    how many distinct digests those were."""
    from raptor_core import _core

    out: list[Any] = []
    seen_digests: set[str] = set()
    seen: set[str] = set()

    def add(core: Any) -> None:
        digest = core.digest("float64")
        if digest in seen_digests:
            return
        seen_digests.add(digest)
        key = _cuda_structure(core)
        if key not in seen:
            seen.add(key)
            out.append(core)

    for core in list(cores):
        add(core)
    for core in list(out):
        wrt = _float_inputs(core)
        # Derived kernels the tests made are compiled as they are, not derived again: the
        # derivatives of a derivative are the same rules once more, and orders 3 to 5 took
        # two thirds of the check's time (RAPTOR_NVRTC_PROFILE).
        if not wrt or id(core) in _not_derived or any(role != "p" for role, _ in core.slot_roles()):
            continue
        for derive in (lambda c: c.tangent(wrt, True), lambda c: c.adjoint(wrt)):
            try:
                derived = derive(core)
                _made_by.setdefault(id(derived), _made_by.get(id(core), "?") + " (derived here)")
                add(derived)
            except (_core.KernelError, hawk.KernelError, ValueError):
                pass  # not derivable with respect to all of them: nothing to compile
    return out, len(seen_digests)


def _nvrtc_failures(batch: list[Any], arch: str) -> list[str]:
    """Compiles one batch; when NVRTC rejects it, each of its kernels alone, so the message
    names the kernels that fail (with NVRTC's log). Empty when all compile."""
    from raptor_core import _core

    try:
        (_nvrtc_compile or _core.nvrtc_check)(batch, arch, True)
        return []
    except RuntimeError as e:
        if "NVRTC not found" in str(e) or len(batch) == 1:
            return [str(e)]
    return [err for core in batch for err in _nvrtc_failures([core], arch)]


def _nvrtc_profile(kernels: list[Any], path: str) -> None:
    """Compiles each kernel alone for sm_80 and writes `seconds name lines` per kernel,
    slowest first, to `path` (RAPTOR_NVRTC_PROFILE=path): where the check's time goes."""

    from raptor_core import _core

    rows = []
    for core in kernels:
        t = time.perf_counter()
        _core.nvrtc_check([core], "sm_80", True)
        rows.append((time.perf_counter() - t, core.name, core.cuda("float64").count("\n")))
    rows.sort(reverse=True)
    with open(path, "w") as f:
        for sec, name, lines in rows:
            f.write(f"{sec:.3f} {name} {lines}\n")


# Under pytest-xdist the workers often define the same kernels (shared test modules, the
# pages' kernels): each structure is compiled by the first worker to claim it, a file created
# exclusively in a directory the controller makes (RAPTOR_NVRTC_CLAIMS, inherited by the
# workers), batch by batch as each batch's turn comes, so workers that reach the check at
# about the same time share the work. A claimed kernel that fails is reported by the worker
# that claimed it.
_CLAIMS_ENV = "RAPTOR_NVRTC_CLAIMS"


def pytest_configure(config: pytest.Config) -> None:
    """The controller (or a run without xdist) makes the claims directory."""
    if not hasattr(config, "workerinput") and _CLAIMS_ENV not in os.environ:
        import tempfile

        config._raptor_claims = tempfile.mkdtemp(prefix="raptor-nvrtc-claims-")  # type: ignore[attr-defined]
        os.environ[_CLAIMS_ENV] = config._raptor_claims  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    claims = getattr(config, "_raptor_claims", None)
    if claims is not None:
        import shutil

        shutil.rmtree(claims, ignore_errors=True)
        os.environ.pop(_CLAIMS_ENV, None)


def _claimed_here(kernels: list[Any]) -> list[Any]:
    """The kernels this process claims (all of them without a claims directory)."""
    import hashlib

    claims = os.environ.get(_CLAIMS_ENV)
    if not claims or not os.path.isdir(claims):
        return kernels
    mine = []
    for core in kernels:
        name = hashlib.sha256(_cuda_structure(core).encode()).hexdigest()[:40]
        try:
            os.close(os.open(os.path.join(claims, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        mine.append(core)
    return mine


_nvrtc_compile: Any = None  # raptor_core._core.nvrtc_check itself (see _record_test_compiles)


def _record_test_compiles() -> None:
    """Kernels a test compiles to a cubin itself (``_core.nvrtc_check``: test_cuda_compile.py,
    the linear algebra, stage and reduction tests) are claimed when that succeeds, so the
    session-end check does not compile the same structure again, in this worker or another."""
    from raptor_core import _core

    global _nvrtc_compile
    original = _core.nvrtc_check
    if getattr(original, "_raptor_recording", False):
        return
    _nvrtc_compile = original  # the session check's own batches: claimed already

    def nvrtc_check(cores: list[Any], arch: str, *args: Any) -> int:
        compiled = original(cores, arch, *args)
        _claimed_here(list(cores))
        return compiled

    nvrtc_check._raptor_recording = True  # type: ignore[attr-defined]
    _core.nvrtc_check = nvrtc_check


_record_test_compiles()


def _nvrtc_check() -> tuple[list[str], bool]:
    """Compiles this process's session kernels (and their derivatives) to cubin: the lines to
    report and whether the check failed."""
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.perf_counter()
    kernels, digests = _nvrtc_kernels(_session_kernels)
    t_derived = time.perf_counter() - t0
    profile = os.environ.get("RAPTOR_NVRTC_PROFILE")
    if profile:
        _nvrtc_profile(kernels, profile)
        return [f"nvrtc: profile of {len(kernels)} kernels written to {profile}"], False
    distinct = len(kernels)
    compiled: list[int] = []
    timed: list[tuple[float, str]] = []  # (seconds, the batch's largest kernel): the slowest are reported

    def run(i: int, batch: list[Any]) -> list[str]:
        # Claimed when its turn comes, so a worker that reaches this check later shares the
        # batches still unclaimed instead of finding them all taken.
        mine = _claimed_here(batch)
        compiled.append(len(mine))
        t = time.perf_counter()
        failures = _nvrtc_failures(mine, _NVRTC_ARCHS[i % len(_NVRTC_ARCHS)]) if mine else []
        if mine:
            lines, big = max((c.cuda("float64").count("\n"), i) for i, c in enumerate(mine))
            timed.append((time.perf_counter() - t, f"{len(mine)} kernels; the largest, {mine[big].name}, "
                          f"{lines} lines, from {_made_by.get(id(mine[big]), '?')}"))
        return failures

    batches = [kernels[i : i + _NVRTC_BATCH] for i in range(0, len(kernels), _NVRTC_BATCH)]
    # Batches in threads: nvrtc_check releases the GIL while NVRTC compiles.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        failures = [f for fs in pool.map(run, range(len(batches)), batches) for f in fs]
    done = sum(compiled)
    if any("NVRTC not found" in f for f in failures):
        return ["nvrtc: NVRTC not found, the cubin check did not run"], False
    if failures:
        return [f"nvrtc: FAILED: {f}" for f in failures], True
    return [
        f"nvrtc: {done} kernels compiled to cubin for {' or '.join(_NVRTC_ARCHS)} (alternating by batch) "
        f"({digests} distinct digests with derivatives, deduplicated by structure to {distinct}, "
        f"{distinct - done} of those compiled by another worker or by a test; {time.perf_counter() - t0:.1f} s, "
        f"of which {t_derived:.1f} s deriving and deduplicating; the session's tests ran "
        f"{t0 - _SESSION_START:.1f} s before it)",
        *(f"nvrtc: slowest batch {sec:.1f} s ({what})" for sec, what in sorted(timed, reverse=True)[:3]),
    ], False


# Under pytest-xdist (scripts/test.sh runs `-n`), each worker checks the kernels its tests
# made and hands its lines to the controller in `workeroutput`; the controller prints them
# and fails the session when a worker's check failed.
_worker_reports: list[tuple[list[str], bool]] = []


def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist controller: keeps a finished worker's NVRTC report."""
    report = getattr(node, "workeroutput", {}).get("raptor_nvrtc")
    if report is not None:
        _worker_reports.append((list(report[0]), bool(report[1])))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Compiles every kernel the session defined (and its derivatives) to cubin (issue 9)."""
    if os.environ.get("RAPTOR_SKIP_NVRTC_CHECK") == "1":
        return
    reports = list(_worker_reports)
    if _session_kernels:
        reports.append(_nvrtc_check())
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:  # an xdist worker: the controller reports
        if reports:
            worker_output["raptor_nvrtc"] = reports[-1]
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    say = reporter.write_line if reporter is not None else print
    if reporter is not None and reports:
        reporter.write("\n")  # after the progress dots
    for lines, failed in reports:
        for line in lines:
            say(line)
        if failed:
            session.exitstatus = 1


# Where the suite's time goes, for balancing the xdist workers (scripts/test.sh, --dist
# loadfile): the controller adds up each test file's setup, call and teardown seconds as the
# workers report them, and the terminal summary names the slowest files and each worker's
# total. (Imports at collection are not in these reports: a module that compiles at import
# shows it in its first test's setup only when it compiles in a fixture.)
_file_seconds: dict[str, float] = {}
_worker_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    _file_seconds[path] = _file_seconds.get(path, 0.0) + report.duration
    node = getattr(report, "node", None)
    worker = getattr(getattr(node, "gateway", None), "id", "main")
    _worker_seconds[worker] = _worker_seconds.get(worker, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _file_seconds:
        return
    top = sorted(_file_seconds.items(), key=lambda kv: -kv[1])[:15]
    terminalreporter.write_line(
        "timing: test seconds by worker: " + ", ".join(f"{w} {s:.0f}" for w, s in sorted(_worker_seconds.items())))
    terminalreporter.write_line(
        "timing: slowest files (setup + call + teardown): " + ", ".join(f"{p} {s:.0f} s" for p, s in top))
