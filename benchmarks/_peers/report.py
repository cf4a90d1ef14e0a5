"""What benchmarks/peers.py shows: one table of times relative to raptor (per case, dtype and
N; host peers against raptor's launch(), JAX-side peers against raptor inside jit) and PNG
plots of throughput (samples per second) against N, one per case and dtype.
Start reading at ``table``; ``plots`` draws the same records.
"""

from __future__ import annotations

import os
import time

import machine_info

HOST = ("raptor", "numba", "warp")
JAX = ("raptor-jax", "warp-jax", "jax")
HEAD = {"raptor": "raptor us", "numba": "Numba", "warp": "Warp CPU",
        "raptor-jax": "raptor-jit us", "warp-jax": "Warp jax_k", "jax": "jax.numpy"}
LABEL = {"raptor": "raptor launch()", "numba": "Numba @njit(parallel)", "warp": "Warp CPU wp.launch",
         "raptor-jax": "raptor in jax.jit", "warp-jax": "Warp jax_kernel in jax.jit", "jax": "jax.numpy in jax.jit"}


def machine() -> str:
    """One line: the date (UTC), CPU model, vector ISA, cores and the load average now."""
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine_info.describe()}; "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _index(records: list[dict], field: str = "seconds") -> dict[tuple, float]:
    return {(r["system"], r["case"], r["dtype"], r["n"]): r[field] for r in records if field in r}


def within_spread(ratio: float, spread_a: float | None, spread_b: float | None) -> bool:
    """Whether two systems' times, ``ratio`` apart, differ by less than either system's own
    process-to-process spread (peers.host_side): the run cannot tell them apart."""
    spreads = [s for s in (spread_a, spread_b) if s is not None]
    if not spreads:
        return False
    widest = max(spreads)
    return 1.0 / widest <= ratio <= widest


def versus_raptor(records: list[dict], peer: str) -> dict[tuple, tuple[float, bool]]:
    """Per (case, dtype, n) both measured: ``peer``'s time over raptor's on the same side
    (above 1.00: raptor is faster), and whether the two are within either one's spread
    (host side only; ``within_spread``)."""
    t, spread = _index(records), _index(records, "spread")
    base = "raptor" if peer in HOST else "raptor-jax"
    out = {}
    for (system, case, dtype, n), mine in t.items():
        ref = t.get((base, case, dtype, n))
        if system != peer or ref is None:
            continue
        ratio = mine / ref
        tie = peer in HOST and within_spread(ratio, spread.get((peer, case, dtype, n)), spread.get((base, case, dtype, n)))
        out[(case, dtype, n)] = (ratio, tie)
    return out


def table(records: list[dict], systems: list[str]) -> str:
    """The table: raptor's time in microseconds on each side, every peer as its time over
    raptor's on the same side (above 1.00: raptor is faster), '-' where not measured."""
    t = _index(records)
    spread = _index(records, "spread")
    versus = {c: versus_raptor(records, c) for c in systems if c not in ("raptor", "raptor-jax")}
    cols = [s for s in HOST + JAX if s in systems]
    keys = sorted({(r["case"], r["dtype"], r["n"]) for r in records},
                  key=lambda k: (("drag", "osc").index(k[0]) if k[0] in ("drag", "osc") else 9, k[1] != "float64", k[2]))
    lines = [f"{'case':<6}{'dtype':<9}{'N':>9} " + "".join(f"{HEAD[c]:>14}" for c in cols)]
    for case, dtype, n in keys:
        cells = []
        for c in cols:
            base = "raptor" if c in HOST else "raptor-jax"
            mine, ref = t.get((c, case, dtype, n)), t.get((base, case, dtype, n))
            if mine is None:
                cells.append("-")
            elif c == base:
                cells.append(f"{mine * 1e6:.1f}")
            elif ref is None:
                cells.append(f"{mine * 1e6:.1f}us")
            else:
                ratio, tie = versus[c][(case, dtype, n)]
                cells.append(f"{ratio:.2f}x" + ("~" if tie else ""))
        lines.append(f"{case:<6}{dtype:<9}{'2^' + str(n.bit_length() - 1) if n & (n - 1) == 0 else n:>9} "
                     + "".join(f"{c:>14}" for c in cells))
    lines.append("raptor us / raptor-jit us: raptor's time per step in microseconds (host launch / inside jax.jit);")
    lines.append("other columns: that system's time over raptor's on the same side (above 1.00x: raptor is faster).")
    if spread:
        worst = {s: max(v for k, v in spread.items() if k[0] == s) for s in {k[0] for k in spread}}
        lines.append("host side: each system's median over its processes; ~: the two differ by less than either one's "
                     "spread between its own processes (the same code, other arrays), so this run cannot tell them apart.")
        lines.append("widest spread between one system's processes: "
                     + ", ".join(f"{HEAD[s] if s != 'raptor' else 'raptor'} {w:.2f}x" for s, w in sorted(worst.items())))
    return "\n".join(lines)


def plots(records: list[dict], out_dir: str, title_note: str) -> list[str]:
    """One PNG per (case, dtype): samples per second against N for every system measured.
    Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for case, dtype in sorted({(r["case"], r["dtype"]) for r in records}):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for system in HOST + JAX:
            pts = sorted((r["n"], r["n"] / r["seconds"]) for r in records
                         if r["system"] == system and r["case"] == case and r["dtype"] == dtype)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o" if system in HOST else "--s",
                        label=LABEL[system], markersize=4)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("N (samples)")
        ax.set_ylabel("throughput (samples / s)")
        ax.set_title(f"{case} step, {dtype}\n{title_note}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"peers_{case}_{dtype}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
