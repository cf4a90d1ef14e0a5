#!/usr/bin/env python3
"""Differential fuzzing of the hawk compiler, the long run (issue 10 item 5).

Generates random well-typed kernels (tests/kernelgen.py) and checks each: compiled C++ in
both dtypes against the reference interpreter (bitwise, sums included: the interpreter adds
them in a launch's order), its tangent against central differences, the adjoint identity, and (unless --no-xla)
the JAX bridge's "xla" lowering against the interpreter and jax.jvp / jax.vjp through the
bridge on both lowerings against the interpreter's tangent and adjoint kernels, float32
calls with their jax.jvp on "ffi", and jax.vmap over two input sets on both lowerings
against the calls, with vmap of jax.jvp and jax.vjp, vmap of vmap and the "ffi" vmap in
float32, and staged kernels through the bridge against their launch (the first
--xla-count kernels: a few XLA compiles each; tests/kernelgen.py check_xla, check_jax_ad,
check_jax_vmap, check_jax_staged); unless --ir-only, every kernel with a Terminated mask
stepped by eagle.until_done, by the device loop's plan on the CPU and by eagle.simulate
against its plain loop of launches, its tangent kernel likewise (check_loop), and the
reverse sweep of a recorded run against the tangent kernel's loop (check_reverse). Kernels are
compiled in batches (one translation unit per batch) by worker processes, each of which runs
a bounded number of batches (loaded modules are never unloaded) in its own scratch cache.

    PYTHONPATH=build/dev/site .venv/bin/python scripts/fuzz_kernels.py --seconds 60
    ... --count 1000 --start 5000          # seeds 5000..5999
    ... --seconds 600 --ir-only            # no C++ build: derivative checks on the IR, the "xla" lowering (no jvp/vjp/vmap checks)
    ... --cxxflags=-O0                      # faster builds (RAPTOR_CXXFLAGS), same checks
    ... --jobs 1                            # one worker process at a time (default: one per CPU)
    ... --xla-count 500                     # the first 500 also through the JAX bridge checks (default 60)
    ... --no-xla                            # without the JAX bridge checks (--xla-count 0)

Prints one line per worker and a summary; exits 1 when a mismatch was found, each printed
with its seed and the kernel source (rerun one seed with --start SEED --count 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import IO

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))


def worker(start: int, count: int, batch: int, ir_only: bool, deadline: float, xla_until: int = 0) -> int:
    """Checks seeds start..start+count-1 (stopping at `deadline`), the ones below `xla_until`
    also through the JAX "xla" lowering; prints the mismatches and one JSON line of counts."""
    import kernelgen

    total = kernelgen.Stats()
    seed = start
    with tempfile.TemporaryDirectory(prefix="raptor-fuzz-") as cache:
        os.environ["RAPTOR_CACHE_DIR"] = cache  # the JAX bridge's builds (check_jax_ad) too
        while seed < start + count and time.time() < deadline:
            seeds = range(seed, min(seed + batch, start + count))
            if seed < xla_until < seeds.stop:  # the batch straddles the last xla seed
                seeds = range(seed, xla_until)
            # (--ir-only builds no C++: not the bridge's "ffi" kernels either, so no check_jax_ad
            # or check_jax_vmap)
            bridge = ("xla",) if ir_only else ("xla", "jax", "vmap")
            checks = ("interp", "tangent", "adjoint") + (() if ir_only else ("loop", "reverse")) + (bridge if seed < xla_until else ())
            st = kernelgen.check_batch(seeds, cache, checks=checks, compiled=not ir_only)
            total.add(st)
            for m in st.mismatches:
                print(m, flush=True)
            seed = seeds.stop
            for name in os.listdir(cache):  # keep the scratch cache small: builds are not reused
                path = os.path.join(cache, name)
                if os.path.isdir(path):
                    subprocess.run(["rm", "-rf", path], check=False)
    counts = {f: getattr(total, f) for f in kernelgen.COUNTS}
    counts["mismatches"] = len(total.mismatches)
    counts["next_seed"] = seed
    print("RESULT " + json.dumps(counts), flush=True)
    return 0


def main() -> int:
    import kernelgen  # (the workers import it themselves)

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=None, help="stop starting new batches after this long")
    ap.add_argument("--count", type=int, default=None, help="kernels to check (default: unbounded with --seconds)")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--batch", type=int, default=20, help="kernels per translation unit")
    ap.add_argument("--per-worker", type=int, default=400, help="kernels per worker process")
    ap.add_argument("--ir-only", action="store_true", help="no C++ build: tangent and adjoint kernels run by the interpreter")
    ap.add_argument("--xla-count", type=int, default=60,
                    help="check the first this many kernels also through the JAX bridge: the 'xla' lowering against the "
                         "interpreter, jax.jvp / jax.vjp on both lowerings, float32 calls, jax.vmap (default 60: a few XLA compiles "
                         "and a bridge build each, ~5 s; -1: all)")
    ap.add_argument("--no-xla", action="store_true", help="no JAX bridge checks (--xla-count 0)")
    ap.add_argument("--cxxflags", default=None, help="RAPTOR_CXXFLAGS for the builds (e.g. -O0 for speed)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--xla-until", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--jobs", type=int, default=None,
                    help="worker processes at once (default: the number of CPUs); each has its own chunk of seeds")
    args = ap.parse_args()
    if args.cxxflags is not None:
        os.environ["RAPTOR_CXXFLAGS"] = args.cxxflags
    if args.worker:
        return worker(args.start, args.count, args.batch, args.ir_only, args.deadline or float("inf"), args.xla_until)
    if args.seconds is None and args.count is None:
        ap.error("give --seconds or --count")
    jobs = max(1, args.jobs or os.cpu_count() or 1)
    t0 = time.time()
    deadline = t0 + args.seconds if args.seconds is not None else float("inf")
    end = args.start + args.count if args.count is not None else None
    xla_count = 0 if args.no_xla else args.xla_count
    xla_until = 2**62 if xla_count < 0 else args.start + xla_count
    totals: dict[str, int] = {}
    unchecked: list[tuple[int, int]] = []  # seed ranges a worker stopped before (the deadline)
    running: list[tuple[subprocess.Popen, IO[str], IO[str], int, int]] = []
    seed = args.start

    def finish(proc: subprocess.Popen, out_file: IO[str], err_file: IO[str], lo: int, n: int) -> None:
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read(), err_file.read()
        out_file.close()
        err_file.close()
        result = None
        for line in out.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
        text = out.split("RESULT ")[0].strip()
        if text:
            print(text, flush=True)
        if result is None:  # the worker died (a crash in a kernel or the compiler)
            print(f"MISMATCH worker for seeds {lo}..{lo + n - 1} died (rc {proc.returncode}):\n{err[-4000:]}", flush=True)
            totals["mismatches"] = totals.get("mismatches", 0) + 1
            return
        for key, v in result.items():
            if key != "next_seed":
                totals[key] = totals.get(key, 0) + v
        if result["next_seed"] < lo + n:
            unchecked.append((result["next_seed"], lo + n))
        el = time.time() - t0
        print(f"[fuzz] seeds {lo}..{lo + n - 1} done: {totals['kernels']} kernels in {el:.0f} s "
              f"({totals['kernels'] / el:.2f}/s), {totals.get('mismatches', 0)} mismatches", flush=True)

    # Chunks of seeds go to up to `jobs` worker processes at once, in seed order; a free CPU
    # takes the next chunk as soon as any worker ends (kernels differ in build time by 10x, so
    # chunks do not end in order). A worker writes to files, not pipes: a long report of
    # mismatches cannot block it while another worker is awaited.
    while running or (time.time() < deadline and (end is None or seed < end)):
        while len(running) < jobs and time.time() < deadline and (end is None or seed < end):
            n = args.per_worker if end is None else min(args.per_worker, end - seed)
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--start", str(seed), "--count", str(n),
                   "--batch", str(args.batch), "--deadline", repr(deadline)] + (["--ir-only"] if args.ir_only else []) + [
                       "--xla-until", str(xla_until)]
            out_file = tempfile.TemporaryFile("w+", encoding="utf-8")
            err_file = tempfile.TemporaryFile("w+", encoding="utf-8")
            running.append((subprocess.Popen(cmd, stdout=out_file, stderr=err_file, text=True), out_file, err_file, seed, n))
            seed += n
        done = [r for r in running if r[0].poll() is not None]
        if not done:
            time.sleep(0.2)
            continue
        for r in done:
            running.remove(r)
            finish(*r)
    el = time.time() - t0
    k = totals.get("kernels", 0)
    mode = "IR only (interpreter)" if args.ir_only else f"compiled (RAPTOR_CXXFLAGS={os.environ.get('RAPTOR_CXXFLAGS', 'default')}) and interpreter"
    gaps = "" if not unchecked else f" (not reached before the deadline: {', '.join(f'{lo}..{hi - 1}' for lo, hi in unchecked)})"
    counts = kernelgen.Stats(**{f: totals.get(f, 0) for f in kernelgen.COUNTS})
    print(f"[fuzz] done: {mode}, seeds {args.start}..{seed - 1}{gaps} with {jobs} workers, {el:.0f} s, "
          f"{k / max(el, 1e-9):.2f} kernels/s: {counts.summary(totals.get('mismatches', 0))}", flush=True)
    return 1 if totals.get("mismatches", 0) else 0


if __name__ == "__main__":
    sys.exit(main())
