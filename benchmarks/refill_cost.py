"""Where the time of raptor's refilled lanes goes, cell by cell of the performance card.

    python benchmarks/refill_cost.py                        # N = 1e6, both dtypes, every cell
    python benchmarks/refill_cost.py --n 100000 --dtypes float64 --json /tmp/refill.json
    python benchmarks/refill_cost.py --march x86-64-v3      # AVX2 code on any x86-64-v3 machine

The performance card's kernel (``card_rk4`` of benchmarks/kernels.py, fused to 1024 steps as
``eagle.until_done`` fuses it, ``eagle.loop.FUSED``) is taken as raptor generates it
(``kernel.cpp(dtype)``) and compiled, with raptor's own host flags, into a standalone driver
(benchmarks/baselines/refill_harness.cpp) that calls it on one thread over the samples in
``--chunks`` chunks, as the host runtime does, for each cell of perf_card.py (its inputs). A
second build of the same source counts, in statements this script inserts, the lane-steps of
every step loop (each loop adds its lane count ``w``), the periods and the samples due after
each, and reads the clock (rdtsc on x86-64) at each period's end and start: the ticks spent in
the step loops and those spent between periods (the scans for due lanes, the write-backs and
the takes). Each cell's measured time is then split by those shares: the step loops' part
into its sample-steps (the steps themselves) and the lane-steps beyond them (lanes idle to a
period's end, or a step run again masked; a masked lane-step costs what an unmasked one
does), and the time between periods, also per sample. "perfect" is the card's perfect
compaction on one thread: the cell's sample-steps at the dense cell's (uniform1000) measured
time per sample-step.

Checks: the harness's final x, v, k equal, bit for bit, what ``eagle.until_done`` gives for
the same inputs (so the driver runs the kernel as the runtime does); k == min(nstop, S) for
every sample, and the counting build's x, v, k equal the plain build's (the counters change
nothing else). Protocol: ``--rounds`` rounds, each running every (dtype, cell) in a fresh
process of the plain build (``--warmup`` untimed runs, ``--repeat`` timed, the median);
a cell's time is the median over its rounds. Writes the figures and the machine to
``--json`` (default benchmarks/results/refill_cost.json); benchmarks/render_docs.py renders
them into docs/performance.md. A benchmark, not a test. Start reading at ``main``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import machine_info  # noqa: E402
import perf_card  # noqa: E402  (benchmarks/ on the path first)

HARNESS = os.path.join(HERE, "baselines", "refill_harness.cpp")
DEFAULT_JSON = os.path.join(HERE, "results", "refill_cost.json")
CELLS = ("spread10", "spread100", "spread1000", "uniform1000")

# The instrumentation (HostWriter::refill_body's lines it hooks into): a statement before each
# step loop (the `#pragma GCC ivdep` after a `// step r...` comment) counting its lanes, and
# clock reads that charge the time from the first take to each period's `step += R` to the
# stepping, from there to the next period (or the return) to the work between periods.
STEP_COMMENT = re.compile(r"^\s*// step r")
HOOKS = {
    "  for (int j = 0; j < W; ++j) take(j, 0, false);": ("  rc_mark = rc_now();", None),
    "  while (occupied > 0) {": (None, "    { const unsigned long long t = rc_now(); rc_between += t - rc_mark; rc_mark = t; }"),
    "    step += R;": ("    { const unsigned long long t = rc_now(); rc_stepping += t - rc_mark; rc_mark = t; }", None),
    "    const int ran_r = R;": (None, "    ++rc_periods; rc_due += nd;"),
    "  a->finished = finished;": ("  rc_between += rc_now() - rc_mark;", None),
}
# The refills at once after an unmasked step (AVX2 code: HostWriter::eager_refill), charged to
# the work between periods too; one pair per such step loop.
EAGER_HOOKS = {
    "        if (any_fin != 0) {": "          { const unsigned long long t = rc_now(); rc_stepping += t - rc_mark; rc_mark = t; }",
    "          nfin += nf;": "          { const unsigned long long t = rc_now(); rc_between += t - rc_mark; rc_mark = t; }",
}


def instrument(source: str) -> str:
    """``source`` with counters (refill_harness.cpp declares them): each step loop adds its
    lanes ``w`` to rc_lane_steps; each period adds one to rc_periods and its due samples to
    rc_due; clock ticks go to rc_stepping (the periods' step loops) and rc_between (the first
    takes, the scans, write-backs and takes between periods, and the refills at once after an
    unmasked step of AVX2 code). Raises ValueError when the generated code no longer has the
    lines this relies on."""
    out, armed, loops = [], False, 0
    found = dict.fromkeys(HOOKS, 0)
    eager = dict.fromkeys(EAGER_HOOKS, 0)
    for line in source.split("\n"):
        if STEP_COMMENT.match(line):
            armed = True
        if armed and line.strip() == "#pragma GCC ivdep":
            out.append("rc_lane_steps += w;")
            armed, loops = False, loops + 1
        before, after = HOOKS.get(line, (None, None))
        if line in HOOKS:
            found[line] += 1
        if before:
            out.append(before)
        out.append(line)
        if after:
            out.append(after)
        if line in EAGER_HOOKS:
            out.append(EAGER_HOOKS[line])
            eager[line] += 1
    missing = [line.strip() for line, k in found.items() if k != 1]
    if len(set(eager.values())) != 1:
        missing.append("as many lines '" + "' as '".join(h.strip() for h in EAGER_HOOKS) + "'")
    if loops < 2 or missing:
        raise ValueError(f"refill_cost: the generated kernel has {loops} step loops after '// step r' comments "
                         f"(expected 2 or more) and not exactly one of each of {missing}: codegen/host_driver.cpp's "
                         "refill_body changed; update HOOKS")
    return "\n".join(out)


def host_flags(march: str) -> list[str]:
    """raptor's host compile flags ($RAPTOR_CXXFLAGS, else its defaults), for ``march``."""
    flags = os.environ.get("RAPTOR_CXXFLAGS", "").strip() or perf_card.raptor_default_flags(dict(os.environ))
    return perf_card.with_march(shlex.split(flags), march)


def build(tmp: str, dtype: str, source: str, symbol: str, flags: list[str], count: bool) -> str:
    """The harness over ``source`` compiled into ``tmp``; the executable's path."""
    tag = f"{dtype}{'-count' if count else ''}"
    tu = os.path.join(tmp, f"kernel-{tag}.cpp")
    with open(tu, "w") as f:
        f.write(instrument(source) if count else source)
    exe = os.path.join(tmp, f"harness-{tag}")
    cxx = shutil.which(os.environ.get("RAPTOR_CXX", "") or os.environ.get("CXX", "g++"))
    cmd = [cxx, *flags, "-std=c++20", f'-DRAPTOR_KERNEL_TU="{tu}"', f"-DRAPTOR_KERNEL_FN={symbol}",
           f"-DRAPTOR_T={'double' if dtype == 'float64' else 'float'}", *(["-DRAPTOR_REFILL_COUNT"] if count else []),
           HARNESS, "-o", exe]
    subprocess.run(cmd, check=True)
    return exe


def write_inputs(tmp: str, n: int, cell: str, dtype: str) -> tuple[str, dict[str, np.ndarray]]:
    """perf_card's inputs of the cell in ``dtype``, as the harness reads them; (path, arrays)."""
    data = perf_card.cast_inputs(perf_card.make_inputs(n, cell), dtype)
    path = os.path.join(tmp, f"in-{cell}-{dtype}.bin")
    np.concatenate([data[k] for k in ("omega", "zeta", "nstop", "x0", "v0")]).tofile(path)
    return path, data


def run_harness(exe: str, inputs: str, n: int, s: int, a: argparse.Namespace, out: str,
                warmup: int | None = None, repeat: int | None = None) -> dict[str, Any]:
    """One process of the harness; its JSON reply."""
    r = subprocess.run([exe, inputs, str(n), str(s), str(a.chunks), str(a.warmup if warmup is None else warmup),
                        str(a.repeat if repeat is None else repeat), out], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def read_state(path: str, n: int, dtype: str) -> dict[str, np.ndarray]:
    flat = np.fromfile(path, dtype=dtype)
    return {"x": flat[:n], "v": flat[n:2 * n], "k": flat[2 * n:]}


def check_state(label: str, got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    for key in ("x", "v", "k"):
        if not np.array_equal(got[key], want[key]):
            bad = int(np.flatnonzero(got[key] != want[key])[0])
            raise SystemExit(f"refill_cost: {label}: {key}[{bad}] = {got[key][bad]!r}, expected {want[key][bad]!r}")


def until_done_state(data: dict[str, np.ndarray], s: int, dtype: str) -> dict[str, np.ndarray]:
    """x, v, k after raptor's eagle.until_done over the same inputs (perf_card's raptor arm)."""
    arm = perf_card.raptor_arm(data, s, dtype)
    arm.run()
    return {k: np.array(v) for k, v in arm.result().items()}


def split(row: dict[str, Any]) -> dict[str, float]:
    """The row's measured time by part, in milliseconds: the share of the counting build's
    clock ticks spent between periods, the rest (the step loops) split between the sample-steps
    and the lane-steps beyond them (every lane-step costs the same: a masked step and an
    unmasked one take the same time)."""
    stepping = row["ticks_stepping"] / (row["ticks_stepping"] + row["ticks_between"])
    useful = row["sample_steps"] / row["lane_steps"]
    return {"steps": row["ms"] * stepping * useful, "idle": row["ms"] * stepping * (1 - useful),
            "between": row["ms"] * (1 - stepping)}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=float, default=1e6, help="samples per cell (default 1e6)")
    p.add_argument("--dtypes", default="float64,float32")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--chunks", type=int, default=4, help="chunks of samples (the runtime's 4 per thread)")
    p.add_argument("--march", default="native")
    p.add_argument("--json", default=DEFAULT_JSON)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    from eagle.loop import FUSED
    from kernels import card_rk4

    n = int(a.n)
    dtypes = [d for d in a.dtypes.split(",") if d]
    flags = host_flags(a.march)
    # The variant until_done runs (eagle.loop.fused_plans_of: the kernel's steps times FUSED[0]).
    fused = card_rk4.with_steps(card_rk4.steps * FUSED[0])
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="refill_cost-") as tmp:
        exes, inputs = {}, {}
        for dtype in dtypes:
            source = fused.cpp(dtype)
            symbol = re.findall(r"RAPTOR_EXPORT void (\w+)\(", source)
            if len(symbol) != 1:
                raise SystemExit(f"refill_cost: expected one kernel in the {dtype} source, found {symbol}")
            for count in (False, True):
                exes[dtype, count] = build(tmp, dtype, source, symbol[0], flags, count)
            for cell in CELLS:
                s = perf_card.sample_steps_cap(cell)
                path, data = write_inputs(tmp, n, cell, dtype)
                inputs[dtype, cell] = path
                out_plain, out_count = os.path.join(tmp, "plain.bin"), os.path.join(tmp, "count.bin")
                run_harness(exes[dtype, False], path, n, s, a, out_plain, warmup=0, repeat=1)
                counted = run_harness(exes[dtype, True], path, n, s, a, out_count, warmup=0, repeat=1)
                plain = read_state(out_plain, n, dtype)
                check_state(f"{cell} {dtype}: the harness against eagle.until_done", plain,
                            until_done_state(data, s, dtype))
                check_state(f"{cell} {dtype}: the counting build against the plain one",
                            read_state(out_count, n, dtype), plain)
                want_k = np.minimum(data["nstop"], s)
                if not np.array_equal(plain["k"], want_k):
                    raise SystemExit(f"refill_cost: {cell} {dtype}: k differs from min(nstop, {s})")
                rows.append({"dtype": dtype, "cell": cell, "n": n, "sample_steps": counted["sample_steps"],
                             "lane_steps": counted["lane_steps"], "periods": counted["periods"],
                             "due": counted["due"], "finished": counted["finished"],
                             "ticks_stepping": counted["ticks_stepping"], "ticks_between": counted["ticks_between"],
                             "runs_ms": []})
        for rnd in range(a.rounds):
            order = rows if rnd % 2 == 0 else rows[::-1]
            for row in order:
                s = perf_card.sample_steps_cap(row["cell"])
                reply = run_harness(exes[row["dtype"], False], inputs[row["dtype"], row["cell"]], n, s, a,
                                    os.path.join(tmp, "timed.bin"))
                row["runs_ms"].append(statistics.median(reply["ms"]))
    for dtype in dtypes:
        mine = [r for r in rows if r["dtype"] == dtype]
        for r in mine:
            r["ms"] = statistics.median(r["runs_ms"])
            r["split_ms"] = split(r)
            r["between_ns_per_sample"] = r["split_ms"]["between"] * 1e6 / r["n"]
        dense = next((r for r in mine if r["cell"] == "uniform1000"), None)
        for r in mine:
            if dense is not None:
                r["perfect_ms"] = r["sample_steps"] * dense["ms"] / dense["sample_steps"]
                r["compaction"] = r["ms"] / r["perfect_ms"]
    print(f"{'dtype':8} {'cell':12} {'ms':>8} {'perfect':>8} {'compact.':>8} {'lane/sample-steps':>17} "
          f"{'periods':>8} {'steps':>6} {'idle':>6} {'between':>7} {'ns/sample':>9}")
    for r in rows:
        part = {k: 100 * v / r["ms"] for k, v in r["split_ms"].items()}
        print(f"{r['dtype']:8} {r['cell']:12} {r['ms']:8.3f} {r.get('perfect_ms', float('nan')):8.3f} "
              f"{r.get('compaction', float('nan')):8.2f} {r['lane_steps'] / r['sample_steps']:17.3f} "
              f"{r['periods']:8d} {part['steps']:5.0f}% {part['idle']:5.0f}% {part['between']:6.0f}% "
              f"{r['between_ns_per_sample']:9.2f}")
    result = {"benchmark": "refill_cost", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": machine_info.cpu_info(), "raptor_checkout": machine_info.raptor_revision(), "flags": flags,
              "march": a.march, "n": n, "rounds": a.rounds, "repeat": a.repeat, "warmup": a.warmup,
              "chunks": a.chunks, "threads": 1, "fused_steps": fused.steps, "rows": rows}
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    tmp_json = a.json + ".tmp"
    with open(tmp_json, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp_json, a.json)
    print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
