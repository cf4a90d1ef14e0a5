"""Peers side by side: the same work in raptor, Numba (``@njit(parallel=True)``), NVIDIA Warp
(its CPU backend, and its ``jax_kernel`` inside ``jax.jit``) and plain JAX (jax.numpy).

    python benchmarks/peers.py            # N = 2^10 .. 2^22, every case, both dtypes
    python benchmarks/peers.py --quick    # a few N up to 2^16, fewer rounds (a smoke run)
    python benchmarks/peers.py --systems raptor,jax --n-max 14

Cases (benchmarks/_peers/cases.py): the drag step of page 001 (``drag_step``), one step
of the damped oscillator with its Terminated mask (``osc``) and one step of a driven pendulum
(``pendulum``: a sin and a cos per sample), float64 and float32.

- Host side: raptor's ``plan.bind(...).launch()``, Numba's parallel loop, Warp's
  ``wp.launch(device="cpu")``. Each system runs in processes of its own (workers of this
  script, three per system unless ``--processes`` says otherwise, each stepping its own
  arrays), so thread pools never share a process, and all of them take turns round by
  round: a stretch of a busy machine slows every system's rounds alike. A worker answers a
  round only once its own threads are idle (``_peers/timing.settle``: Numba's OpenMP thread
  spins for milliseconds after its loop, which the next system's round shared a core with
  before). A system's time is
  the median over its processes of each one's best round; the same code differs from
  process to process by several percent where the planes fall between the L2 and the L3
  (where its arrays landed), and a row whose difference is within that spread is marked.
- JAX side: raptor through ``eagle.frameworks.jax.function``, Warp's ``jax_kernel`` and
  jax.numpy, each under ``jax.jit``, in one process, alternating round by round.

Every system's first step is checked against a NumPy reference (float64 1e-12, float32
1e-5, masks exactly) before it is timed; times are the best of several rounds. Prints one
table (raptor's time, every peer relative to it), writes the records to ``--json`` and PNG
plots of throughput against N to benchmarks/out/ (``--out``). Numba and Warp are optional (``pip install
'raptor[bench]'``): a missing one is skipped with a message. docs/performance.md renders a
run's host rows from its JSON (benchmarks/render_docs.py). Start reading at ``main``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import machine_info  # noqa: E402
from _peers import report  # noqa: E402
from _peers.cases import CASES, DTYPES  # noqa: E402

HOST_SYSTEMS = ("raptor", "numba", "warp")
JAX_SYSTEMS = ("raptor-jax", "warp-jax", "jax")
ALL = HOST_SYSTEMS + JAX_SYSTEMS
NEEDS = {"numba": ("numba",), "warp": ("warp",), "raptor-jax": ("jax",), "warp-jax": ("warp", "jax"), "jax": ("jax",)}
PIP = {"numba": "pip install 'raptor[bench]'", "warp": "pip install 'raptor[bench]'", "jax": "pip install 'raptor[jax]'"}


def missing(system: str) -> str | None:
    """Why ``system`` cannot run here (a message naming the package and its install
    command), or None when it can."""
    for module in NEEDS.get(system, ()):
        if importlib.util.find_spec(module) is None:
            package = "warp-lang" if module == "warp" else module
            return f"{system}: {package} not installed: {PIP[module]}"
    return None


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="N = 2^10, 2^13, 2^16 and fewer, shorter rounds")
    p.add_argument("--systems", default=",".join(ALL), help=f"comma-separated, of {','.join(ALL)}")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--n-min", type=int, default=10, help="smallest N as a power of two (default 10)")
    p.add_argument("--n-max", type=int, default=None, help="largest N as a power of two (default 22, --quick 16)")
    p.add_argument("--n-step", type=int, default=None, help="step of the exponent (default 1, --quick 3)")
    p.add_argument("--repeat", type=int, default=None, help="rounds per measurement (default 15, --quick 5)")
    p.add_argument("--min-round", type=float, default=None, help="seconds per round at least (default 0.02, --quick 0.003)")
    p.add_argument("--processes", type=int, default=None,
                   help="host side: processes per system, each with its own arrays (default 3, --quick 1)")
    p.add_argument("--out", default=os.path.join(HERE, "out"), help="folder for the PNG plots (default benchmarks/out)")
    p.add_argument("--json", default=os.path.join(HERE, "results", "peers.json"),
                   help="where the records, the machine and the settings are written (default "
                        "benchmarks/results/peers.json; docs/performance.md renders benchmarks/results/peers_full.json)")
    p.add_argument("--worker", choices=("host", "jax"), help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, action="append", help=argparse.SUPPRESS)
    p.add_argument("--json-out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.n_max = a.n_max if a.n_max is not None else (16 if a.quick else 22)
    a.n_step = a.n_step if a.n_step is not None else (3 if a.quick else 1)
    a.repeat = a.repeat if a.repeat is not None else (5 if a.quick else 15)
    a.min_round = a.min_round if a.min_round is not None else (0.003 if a.quick else 0.02)
    a.processes = a.processes if a.processes is not None else (1 if a.quick else 3)
    if a.processes < 1:
        p.error("--processes: at least 1")
    for name, allowed in (("systems", ALL), ("cases", CASES), ("dtypes", DTYPES)):
        values = [v for v in getattr(a, name).split(",") if v]
        bad = [v for v in values if v not in allowed]
        if bad:
            p.error(f"--{name}: unknown {', '.join(bad)} (choose from {', '.join(allowed)})")
        setattr(a, name, values)
    return a


def worker(a: argparse.Namespace) -> None:
    """In a worker process: serve one host system's rounds (``_peers.host.serve``, requests on
    stdin, replies on the original stdout, whatever else prints going to stderr), or time
    every JAX-side system at every N and write the records as JSON to --json-out."""
    if a.worker == "host":
        from _peers.host import serve

        replies = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)  # a peer's own prints (Warp's banner) must not reach the replies
        sys.stdout = sys.stderr
        (system,) = a.systems
        serve(system, a.min_round, sys.stdin, replies)
        return
    from _peers.jax_side import run_worker as jax_worker

    records = jax_worker(a.systems, a.n, a.cases, a.dtypes, a.repeat, a.min_round)
    with open(a.json_out, "w") as f:
        json.dump(records, f)


def worker_command(kind: str, systems: list[str], a: argparse.Namespace) -> list[str]:
    """The command line of a worker of this script."""
    return [sys.executable, os.path.abspath(__file__), "--worker", kind, "--systems", ",".join(systems),
            "--cases", ",".join(a.cases), "--dtypes", ",".join(a.dtypes), "--repeat", str(a.repeat),
            "--min-round", str(a.min_round)]


class HostWorker:
    """One host system in its own process (``worker``), asked for one thing at a time;
    ``index`` tells a system's processes apart."""

    def __init__(self, system: str, a: argparse.Namespace, env: dict[str, str], tmp: str, index: int = 0) -> None:
        self.system = system
        self.index = index
        self.log = open(os.path.join(tmp, f"host-{system}-{index}.log"), "w+")
        self.proc = subprocess.Popen(worker_command("host", [system], a), env=env, text=True, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log)

    def ask(self, request: dict) -> dict:
        """The worker's reply to ``request``; {"error": ...} with its last words when it died."""
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if line:
            return json.loads(line)
        self.log.seek(0)
        tail = " | ".join(self.log.read().strip().splitlines()[-4:])
        return {"error": f"the worker exited (status {self.proc.poll()}): {tail}"}

    def close(self) -> None:
        """Ends the worker (its input closes) and closes its log; a dead worker too."""
        try:
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it died with a request unread
        self.proc.wait(timeout=60)
        self.log.close()


def host_side(host: list[str], ns: list[int], a: argparse.Namespace, env: dict[str, str], tmp: str) -> list[dict]:
    """Times every host system at every (case, dtype, N): each system in ``a.processes``
    processes of its own, each process stepping its own arrays, rounds alternating between
    all of them; each process's best round is kept, and a system's time is the median over
    its processes. ``spread`` is the slowest of those processes' times over the fastest: how
    much the same code moves from process to process (where its arrays landed in memory and
    cache), what a difference between two systems must exceed to mean something. A process
    that fails an item (or dies) is reported and skipped for it (for the rest of the run, when
    dead)."""
    started = [HostWorker(s, a, env, tmp, i) for i in range(a.processes) for s in host]
    workers = list(started)
    records: list[dict] = []
    try:
        for n in ns:
            for case in a.cases:
                for dtype in a.dtypes:
                    ready = []
                    for w in workers:
                        reply = w.ask({"cmd": "prepare", "case": case, "dtype": dtype, "n": n})
                        if "error" in reply:
                            print(f"  {w.system}, {case} {dtype} N={n} failed: {reply['error']}", flush=True)
                        else:
                            ready.append(w)
                    best = {w: float("inf") for w in ready}
                    for _ in range(a.repeat):
                        for w in list(ready):
                            reply = w.ask({"cmd": "round"})
                            if "error" in reply:
                                print(f"  {w.system}, {case} {dtype} N={n} failed: {reply['error']}", flush=True)
                                ready.remove(w)
                                del best[w]
                            else:
                                best[w] = min(best[w], reply["seconds"])
                    for s in host:
                        times = sorted(t for w, t in best.items() if w.system == s)
                        if times:
                            records.append({"side": "host", "system": s, "case": case, "dtype": dtype, "n": n,
                                            "seconds": statistics.median(times), "spread": times[-1] / times[0],
                                            "processes": len(times)})
                    workers = [w for w in workers if w.proc.poll() is None]
            print(f"  host side, N = {n}: done", flush=True)
    finally:
        for w in started:  # a dead one too: its log file
            w.close()
    return records


def spawn_jax(systems: list[str], ns: list[int], a: argparse.Namespace, env: dict[str, str], tmp: str) -> list[dict]:
    """Runs the JAX-side worker in a new process; its records, or [] with the reason printed
    when it failed."""
    out = os.path.join(tmp, "jax.json")
    cmd = worker_command("jax", systems, a) + ["--json-out", out] + [x for n in ns for x in ("--n", str(n))]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        tail = "\n    ".join((r.stderr or r.stdout).strip().splitlines()[-6:])
        print(f"  {','.join(systems)} failed (exit {r.returncode}):\n    {tail}", flush=True)
        return []
    with open(out) as f:
        return json.load(f)


def versions(systems: list[str]) -> dict[str, str | None]:
    """The installed version of numpy, raptor and each peer measured (None: not installed)."""
    from importlib import metadata

    dists = {"numba": "numba", "warp": "warp-lang", "warp-jax": "warp-lang", "jax": "jax", "raptor-jax": "jax"}
    out: dict[str, str | None] = {}
    for name in ["numpy", "raptor"] + [dists[s] for s in systems if s in dists]:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    if a.worker:
        worker(a)
        return 0
    systems = []
    for s in a.systems:
        why = missing(s)
        if why:
            print(f"skipped {why}", flush=True)
        else:
            systems.append(s)
    ns = [1 << e for e in range(a.n_min, a.n_max + 1, a.n_step)]
    print(f"peers: {', '.join(systems)}; cases {', '.join(a.cases)}; {', '.join(a.dtypes)}; "
          f"N = 2^{a.n_min} .. 2^{a.n_max} step 2^{a.n_step}; {a.repeat} rounds; "
          f"{a.processes} process{'es' if a.processes > 1 else ''} per host system", flush=True)
    before = report.machine()
    records: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="raptor-peers-") as tmp:
        # Every worker shares fresh compile caches: raptor, Numba and Warp each compile once.
        env = dict(os.environ, RAPTOR_CACHE_DIR=os.path.join(tmp, "raptor"), NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                   WARP_CACHE_PATH=os.path.join(tmp, "warp"))
        host = [s for s in HOST_SYSTEMS if s in systems]
        if host:
            records += host_side(host, ns, a, env, tmp)
        on_jax = [s for s in JAX_SYSTEMS if s in systems]
        if on_jax:
            records += spawn_jax(on_jax, ns, a, env, tmp)
            print("  JAX side: done", flush=True)
    after = report.machine()
    measured = [s for s in systems if any(r["system"] == s for r in records)]
    print()
    print(f"before: {before}")
    print(f"after:  {after}")
    threads = [f"{k}={os.environ[k]}" for k in ("RAPTOR_NUM_THREADS", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS") if k in os.environ]
    print(f"threads: {' '.join(threads) if threads else 'every system at its default (all cores)'}")
    print(report.table(records, measured))
    if records:
        result = {"benchmark": "peers", "before": before, "after": after, "threads": threads, "systems": measured,
                  "machine": machine_info.cpu_info(), "versions": versions(measured),
                  "raptor_checkout": machine_info.raptor_revision(),
                  "settings": {k: getattr(a, k) for k in ("cases", "dtypes", "n_min", "n_max", "n_step", "repeat",
                                                           "min_round", "processes")},
                  "records": records}
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {a.json}")
        note = after.split(";")[0] + "; load average " + after.rsplit("load average ", 1)[1]
        for path in report.plots(records, a.out, note):
            print(f"wrote {path}")
    return 0 if records else 1


if __name__ == "__main__":
    sys.exit(main())
