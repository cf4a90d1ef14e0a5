"""Non-temporal stores against plain ones, launch by launch, on this machine.

    python benchmarks/stream_stores.py                      # 2^16 .. 2^22 samples, both dtypes
    python benchmarks/stream_stores.py --log2n 18,20 --dtypes float64 --json /tmp/stream.json

A host launch whose planes (read and written) take at least ``default_stream_bytes()`` bytes
writes its pure outputs past the cache (docs/runtime.md): a store to a line not in cache
first reads it, and a launch larger than the cache gains nothing from that read. Where the
planes fit the cache the plain stores leave the outputs there for the next read, and the
streamed ones send every byte to memory. Where the two cross depends on the machine (its
cache, its memory, its neighbours on a shared host); this script measures it. The drag step
of benchmarks/kernels.py (a (3, N) plane in, one out, as peers.py and triad.py time it) is
bound once per (dtype, N) and launched back to back, on every core, alternating between
plain stores and streamed ones on the same bound launch (``Bound.stream_bytes``: never, or
always) for ``--rounds`` rounds, each a batch of launches after one untimed launch; the
figure is the median of each mode's rounds. Checks: both modes give the same bits, and
NumPy's step (peers.py's reference and check, ``_peers.cases``). It reports what the default does at each size: the threshold
(``raptor_core._core.default_stream_bytes()``: $RAPTOR_STREAM_BYTES, else a quarter of the
last-level cache as glibc's sysconf reports it) and the caches as Linux's sysfs lists them.
Writes ``--json`` (default benchmarks/results/stream_stores.json); benchmarks/render_docs.py
renders it into docs/performance.md. A benchmark, not a test. Start reading at ``main``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import machine_info  # noqa: E402  (benchmarks/ on the path first)
from _peers.cases import CD, DT, G, check, make_inputs, reference  # noqa: E402
from _peers.host import aligned_copy  # noqa: E402

DEFAULT_JSON = os.path.join(HERE, "results", "stream_stores.json")
NEVER = 1 << 62  # a stream_bytes no launch reaches
MODES = (("plain", NEVER), ("stream", 0))  # (name, Bound.stream_bytes)
SECONDS_PER_ROUND = 0.02


def caches() -> dict[str, Any]:
    """CPU 0's caches as sysfs lists them (level, type, size text) and glibc's sysconf L2/L3."""
    out: dict[str, Any] = {"sysfs": [], "sysconf_l2": None, "sysconf_l3": None}
    base = "/sys/devices/system/cpu/cpu0/cache"
    for i in range(32):
        d = os.path.join(base, f"index{i}")
        if not os.path.isdir(d):
            break
        try:
            fields = [open(os.path.join(d, f)).read().strip() for f in ("level", "type", "size")]
        except OSError:
            continue
        out["sysfs"].append({"level": int(fields[0]), "type": fields[1], "size": fields[2]})
    for key, name in (("sysconf_l2", "LEVEL2_CACHE_SIZE"), ("sysconf_l3", "LEVEL3_CACHE_SIZE")):
        try:  # getconf asks glibc's sysconf, as the runtime does (Python's os.sysconf lacks these)
            text = subprocess.run(["getconf", name], capture_output=True, text=True, timeout=10).stdout.strip()
            out[key] = int(text) if text.isdigit() and int(text) > 0 else None
        except (OSError, subprocess.SubprocessError):
            pass
    return out


def measure(plan: Any, dtype: np.dtype, log2n: int, rounds: int) -> dict[str, Any]:
    """One (dtype, N): the medians of both modes' rounds, after the checks."""
    n = 1 << log2n
    inputs = make_inputs("drag", n, dtype.name, seed=log2n)
    v = aligned_copy(inputs["v"], place=0)
    out = aligned_copy(np.zeros((3, n), dtype), place=1)
    bound = plan.bind(v=v, cd=CD, dt=DT, g=G, v_next=out)
    core = bound._core
    got = {}
    for mode, limit in MODES:
        core.stream_bytes = limit
        out[...] = 0
        bound.launch()
        got[mode] = out.copy()
    if not np.array_equal(got["plain"].view(np.uint8), got["stream"].view(np.uint8)):
        raise SystemExit(f"stream_stores: {dtype.name} N = 2^{log2n}: streamed outputs differ from plain ones")
    check("raptor", "drag", dtype.name, n, {"v_next": got["plain"]}, reference("drag", inputs))
    calls = max(3, int(SECONDS_PER_ROUND / (n * 2e-9)))
    times: dict[str, list[float]] = {"plain": [], "stream": []}
    for _ in range(rounds):
        for mode, limit in MODES:
            core.stream_bytes = limit
            bound.launch()
            t0 = time.perf_counter()
            for _ in range(calls):
                bound.launch()
            times[mode].append((time.perf_counter() - t0) / calls)
    core.stream_bytes = -1
    plain, stream = statistics.median(times["plain"]), statistics.median(times["stream"])
    return {"dtype": dtype.name, "log2n": log2n, "plane_bytes": 2 * 3 * n * dtype.itemsize,
            "plain_us": plain * 1e6, "stream_us": stream * 1e6, "plain_over_stream": plain / stream,
            "calls_per_round": calls}


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2n", default="16,17,18,19,20,21,22", help="comma-separated exponents of N")
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--rounds", type=int, default=15, help="rounds per mode and size (default 15)")
    ap.add_argument("--json", default=DEFAULT_JSON)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    import eagle.plan
    from kernels import drag_step
    from raptor_core import _core

    (plan,) = eagle.plan.auto([drag_step], targets=("host",), cache_dir=os.environ.get("RAPTOR_CACHE_DIR"))
    threshold = int(_core.default_stream_bytes())
    rows = []
    for name in a.dtypes.split(","):
        for e in (int(x) for x in a.log2n.split(",")):
            r = measure(plan, np.dtype(name), e, a.rounds)
            r["default_streams"] = r["plane_bytes"] >= threshold
            rows.append(r)
            print(f"{r['dtype']} N = 2^{e} ({r['plane_bytes'] / 2**20:.1f} MiB of planes): plain {r['plain_us']:.1f} us, "
                  f"streamed {r['stream_us']:.1f} us, plain/streamed {r['plain_over_stream']:.2f}; the default "
                  f"{'streams' if r['default_streams'] else 'does not stream'}", flush=True)
    res = {"benchmark": "stream_stores", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "machine": {**machine_info.cpu_info(), "caches": caches()}, "raptor_checkout": machine_info.raptor_revision(),
           "default_stream_bytes": threshold, "env_stream_bytes": os.environ.get("RAPTOR_STREAM_BYTES"),
           "rounds": a.rounds, "rows": rows}
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    tmp = a.json + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, a.json)  # never a half-written file
    print(f"default threshold {threshold / 2**20:.1f} MiB of planes; wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
