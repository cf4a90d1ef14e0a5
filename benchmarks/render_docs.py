"""Renders the performance card's committed results into docs/performance.md and the README,
so a figure in either is never typed by hand.

    python benchmarks/render_docs.py           # rewrites the blocks between the markers
    python benchmarks/render_docs.py --check   # exit 1 when a file and the JSON differ

Both come from benchmarks/results/perf_card_full.json (written by
``benchmarks/perf_card.py --json ...``):

- the table, between ``<!-- perf_card:begin -->`` and ``<!-- perf_card:end -->`` in
  docs/performance.md: the machine, the date, and per cell the median milliseconds of each arm
  with the ratios;
- the summary, between ``<!-- perf_summary:begin -->`` and ``<!-- perf_summary:end -->`` in
  docs/performance.md and in README.md: the ranges of the ratios over the cells (against the
  published eagle, Numba and the C++ compute limit), compaction and set-up costs.

A third block, between ``<!-- random_draws:begin -->`` and ``<!-- random_draws:end -->`` in
docs/performance.md, is the draws-per-second table of benchmarks/results/random_draws.json
(``benchmarks/random_draws.py``); the same table built for AVX2 (``random_draws.py --march
x86-64-v3 --json benchmarks/results/random_draws_x86-64-v3.json``) sits between
``<!-- random_draws_isa:begin -->`` and ``<!-- random_draws_isa:end -->``. A fourth, between ``<!-- perf_card_isa:begin -->`` and
``<!-- perf_card_isa:end -->``, is the card compiled for another ISA on the same machine
(``perf_card.py --march x86-64-v3 --json benchmarks/results/perf_card_x86-64-v3.json``): its
table and the ranges of its ratios. Between ``<!-- perf_targets:begin -->`` and
``<!-- perf_targets:end -->`` the targets of issue 26 are read against the main card, each as
met in how many cells (the other-ISA block says the same of its card). Between
``<!-- peers_host:begin -->`` and ``<!-- peers_host:end -->``, the host rows of
``benchmarks/peers.py --json benchmarks/results/peers_full.json`` (raptor against Numba).
The same run's summary, between ``<!-- peers_summary:begin -->`` and
``<!-- peers_summary:end -->`` in README.md: the range of Numba's time over raptor's and the
rows where raptor is slower beyond the spread, each named.
Between ``<!-- refill_cost:begin -->`` and ``<!-- refill_cost:end -->``, where the refilled
lanes' time goes in each card cell (``benchmarks/refill_cost.py``, one thread, its JSON
benchmarks/results/refill_cost.json). Between ``<!-- stream_stores:begin -->`` and
``<!-- stream_stores:end -->``, plain against non-temporal stores of one launch by size
(``benchmarks/stream_stores.py``, benchmarks/results/stream_stores.json). Between
``<!-- math_functions:begin -->`` and ``<!-- math_functions:end -->``, raptor's own pow, hypot,
tan, asin and acos in a kernel beside Numba's and NumPy's (``benchmarks/math_functions.py``,
benchmarks/results/math_functions.json).

tests/test_docs_claims.py runs the check.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "perf_card_full.json"
DOC = ROOT / "docs" / "performance.md"
README = ROOT / "README.md"
BEGIN, END = "<!-- perf_card:begin -->", "<!-- perf_card:end -->"
SUMMARY_BEGIN, SUMMARY_END = "<!-- perf_summary:begin -->", "<!-- perf_summary:end -->"
DRAWS_RESULTS = ROOT / "benchmarks" / "results" / "random_draws.json"
DRAWS_BEGIN, DRAWS_END = "<!-- random_draws:begin -->", "<!-- random_draws:end -->"
DRAWS_ISA_RESULTS = ROOT / "benchmarks" / "results" / "random_draws_x86-64-v3.json"
DRAWS_ISA_BEGIN, DRAWS_ISA_END = "<!-- random_draws_isa:begin -->", "<!-- random_draws_isa:end -->"
ISA_RESULTS = ROOT / "benchmarks" / "results" / "perf_card_x86-64-v3.json"
ISA_BEGIN, ISA_END = "<!-- perf_card_isa:begin -->", "<!-- perf_card_isa:end -->"
TARGETS_BEGIN, TARGETS_END = "<!-- perf_targets:begin -->", "<!-- perf_targets:end -->"
PEERS_RESULTS = ROOT / "benchmarks" / "results" / "peers_full.json"
PEERS_BEGIN, PEERS_END = "<!-- peers_host:begin -->", "<!-- peers_host:end -->"
PEERS_SUMMARY_BEGIN, PEERS_SUMMARY_END = "<!-- peers_summary:begin -->", "<!-- peers_summary:end -->"
REFILL_RESULTS = ROOT / "benchmarks" / "results" / "refill_cost.json"
REFILL_BEGIN, REFILL_END = "<!-- refill_cost:begin -->", "<!-- refill_cost:end -->"
STREAM_RESULTS = ROOT / "benchmarks" / "results" / "stream_stores.json"
STREAM_BEGIN, STREAM_END = "<!-- stream_stores:begin -->", "<!-- stream_stores:end -->"
MATH_RESULTS = ROOT / "benchmarks" / "results" / "math_functions.json"
MATH_BEGIN, MATH_END = "<!-- math_functions:begin -->", "<!-- math_functions:end -->"
ARMS = ("raptor", "published", "numba", "jax", "cpp")


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if x < 10 else f"{x:.0f}"


def _x(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def render(card: dict) -> str:
    """The markdown block of one perf_card JSON (deterministic in the JSON alone)."""
    m, v = card["machine"], card["versions"]
    failures = [(r["n"], r["cell"], r["dtype"], f["arm"]) for r in card["records"] for f in r.get("failures", [])]
    lines = [
        f"Generated by `benchmarks/render_docs.py` from `{RESULTS.relative_to(ROOT)}`; do not edit.",
        "",
        f"Machine: {m['cpu']} ({', '.join(m['isa'])}; {m['cores']} cores), {card['date'][:10]}; raptor "
        f"{v['raptor']} at {v['raptor_checkout']['commit'][:7]}, the published eagle {v.get('published_eagle', '-')}, "
        f"Numba {v.get('numba', '-')}, JAX {v.get('jax', '-')}. Milliseconds of one run (median over "
        f"{card['protocol']['rounds']} processes of each one's median); ratios are times over raptor's; "
        "\"raptor/cpp\" is raptor's throughput over the hand-written C++ lanes' (the compute limit); "
        "\"compaction\" is raptor's time over its dense time for the cell's sample-steps.",
        "",
        "| N | cell | dtype | raptor | published | Numba | JAX | C++ | published/raptor | raptor/cpp | compaction |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in card["records"]:
        ms = {a: r["arms"].get(a, {}).get("ms") for a in ARMS}
        ratio = r.get("ratios", {})
        lines.append(
            f"| {r['n']:.0e} | {r['cell']} | {r['dtype']} | " + " | ".join(_ms(ms[a]) for a in ARMS)
            + f" | {_x(ratio.get('published/raptor'))} | {_x(ratio.get('raptor/cpp throughput'))} | "
            f"{_x(ratio.get('compaction'))} |")
    if failures:
        lines += ["", "Worker processes that failed (the cell's figure is the median of the others): "
                  + "; ".join(f"{a} at N={n} {c} {d}" for n, c, d, a in failures) + "."]
    return "\n".join(lines)


def _n(n: float) -> str:
    """A sample count as the docs write it: 1e5 for a power of ten, else the number."""
    e = math.log10(n)
    return f"1e{int(e)}" if n > 0 and e == int(e) else f"{n:g}"


def _span(values: list[float], fmt: str = "{:.2f}", unit: str = "x") -> str:
    """``"lo{unit}-hi{unit}"`` of the values (one value: ``"v{unit}"``)."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return f"{lo}{unit}" if lo == hi else f"{lo}{unit}-{hi}{unit}"


def _ratios(card: dict, key: str, keep=lambda r: True) -> list[float]:
    return [r["ratios"][key] for r in card["records"] if keep(r) and r.get("ratios", {}).get(key) is not None]


def _dense(dtype: str | None = None):
    """The cells where every sample runs the same count (of ``dtype``, when given)."""
    return lambda r: r["dist"] == "uniform" and (dtype is None or r["dtype"] == dtype)


def _large(cell: str):
    """The cells ``cell`` at N >= 1e5, where the compaction targets are read."""
    return lambda r: r["cell"] == cell and r["n"] >= 1e5


def _fill(text: str) -> str:
    return textwrap.fill(text, width=96, break_on_hyphens=False, break_long_words=False)


def _cpp_compaction(card: dict, cell: str, ns: list[int]) -> list[float]:
    """The C++ lanes' time in the spread ``cell`` over their own dense time for its sample-steps
    (the uniform cell of the same N and dtype), at each N of ``ns``: "compaction" for the
    compute limit."""
    recs = {(r["n"], r["cell"], r["dtype"]): r for r in card["records"]}
    out = []
    for (n, c, dt), r in sorted(recs.items()):
        u = recs.get((n, "uniform1000", dt))
        if c != cell or n not in ns or u is None or "cpp" not in r["arms"] or "cpp" not in u["arms"]:
            continue
        out.append(r["arms"]["cpp"]["ms"] / (r["sample_steps"] * u["arms"]["cpp"]["ms"] / u["sample_steps"]))
    return out


def summary(card: dict) -> str:
    """The summary paragraph of one perf_card JSON (deterministic in the JSON alone): ranges
    over the cells, each said as "ahead in all" only when every cell is."""
    m, v, recs = card["machine"], card["versions"], card["records"]
    spread = lambda r: r["dist"] == "spread"
    pub, numba = _ratios(card, "published/raptor"), _ratios(card, "numba/raptor")
    ns = sorted({r["n"] for r in recs})

    def ahead(values: list[float], who: str) -> str:
        n_ahead = sum(x > 1.0 for x in values)
        head = f"in all {len(values)} cells" if n_ahead == len(values) else f"in {n_ahead} of {len(values)} cells"
        return f"ahead of {who} {head}"

    big = [n for n in ns if n >= 1e5]
    comp = {s: _ratios(card, "compaction", _large(s)) for s in ("spread1000", "spread100", "spread10")}
    def costs(arm: str, key: str, n: int | None = None) -> list[float]:
        return [r["arms"][arm][key] for r in recs if key in r["arms"].get(arm, {}) and n in (None, r["n"])]

    setup, first = costs("raptor", "setup_ms"), costs("raptor", "setup_first_ms")
    reentry = {n: costs("raptor", "reentry_us", n) for n in ns}
    pub_setup, pub_first = costs("published", "setup_ms"), costs("published", "setup_first_ms")
    pub_reentry = costs("published", "reentry_us")
    published_costs = (
        f"; the published eagle's {_span(pub_setup, '{:.2f}', ' ms')} and {_span(pub_first, '{:.1f}', ' ms')}"
        if pub_setup and pub_first else "")
    dense_cpp = {dt: _ratios(card, "raptor/cpp throughput", _dense(dt)) for dt in ("float64", "float32")}
    cpp_comp = {s: _cpp_compaction(card, s, big) for s in ("spread1000", "spread100", "spread10")}
    short = (f" Samples of 1 to 10 steps (spread 10, not on the published card) cost {_span(comp['spread10'])} "
             f"(the C++ lanes {_span(cpp_comp['spread10'])}): taking each sample and writing it back "
             f"costs more than its steps." if comp["spread10"] and cpp_comp["spread10"] else "")
    text = (
        f"Generated by `benchmarks/render_docs.py` from `{RESULTS.relative_to(ROOT)}`; do not edit. "
        f"The performance card (damped oscillators, RK4, each sample stepping until its own step "
        f"count; N = {', '.join(_n(n) for n in ns)}; float64 and float32), run on "
        f"{card['date'][:10]} on {m['cpu']} ({', '.join(m['isa'])}; {m['cores']} cores): raptor is "
        f"{ahead(pub, 'the published eagle ' + v.get('published_eagle', '-'))} "
        f"({_span(_ratios(card, 'published/raptor', _dense('float64')))} in float64 and "
        f"{_span(_ratios(card, 'published/raptor', _dense('float32')))} in float32 where every sample "
        f"runs the same count, {_span(_ratios(card, 'published/raptor', spread))} where samples stop "
        f"early), and {ahead(numba, 'Numba ' + v.get('numba', '-') + ' (`prange`)')} "
        f"({_span(numba)}). Dense stepping reaches {_span(dense_cpp['float64'], unit='')} (float64) and "
        f"{_span(dense_cpp['float32'], unit='')} (float32) of the throughput of a "
        f"hand-written SIMD C++ compute limit. Stepping with samples that stop early costs "
        f"{_span(comp['spread1000'])} the time of perfect compaction for step counts spread over "
        f"1000 and {_span(comp['spread100'])} for a spread of 100 (N >= 1e5; the C++ lanes, which "
        f"refill every step, {_span(cpp_comp['spread1000'])} and {_span(cpp_comp['spread100'])} of "
        f"their own dense rate).{short} Set-up: a warm "
        f"`until_done(...)` costs {_span(setup, '{:.2f}', ' ms')} ({_span(first, '{:.1f}', ' ms')} the first "
        f"time in a process{published_costs}); `run(max_steps=1)` on a finished runner "
        + ", ".join(f"{_span(reentry[n], '{:.0f}', ' us')} at N = {_n(n)}" for n in ns if reentry[n])
        + (f" (the published eagle's {_span(pub_reentry, '{:.0f}', ' us')})" if pub_reentry else "")
        + "."
    )
    return _fill(text)


def _draws_machine(m: dict) -> str:
    """The CPU model, ISA and date of a random_draws JSON (older ones recorded the architecture only)."""
    if "cpu" not in m:
        return m["machine"]
    return f"{m['cpu']} ({', '.join(m['isa'])}; {m['cores']} cores), {m['date']}"


def render_draws(res: dict, path: pathlib.Path = DRAWS_RESULTS) -> str:
    """The markdown block of one random_draws JSON written at ``path`` (deterministic in the
    JSON alone)."""
    m = res["meta"]
    n = res["rows"][0]["n"] if res["rows"] else 0
    march = m.get("march", "native")
    built = "" if march == "native" else f"; raptor's kernels compiled with `-march={march}` (`--march {march}`)"
    lines = [
        f"Generated by `benchmarks/render_docs.py` from `{path.relative_to(ROOT)}`; do not edit.",
        "",
        f"Machine: {_draws_machine(m)}{built}; JAX {m['jax']}; {m['threads']} thread each side; N = {n} samples x "
        f"{res['rows'][0]['draws_per_sample'] if res['rows'] else 0} draws ({m['protocol']}). Millions of draws "
        "per second; the ratio is raptor's rate over jax.random's.",
        "",
        "| distribution | dtype | raptor Mdraws/s | jax.random Mdraws/s | raptor / jax |",
        "|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        lines.append(f"| {r['dist']} | {r['dtype']} | {r['raptor_draws_per_s'] / 1e6:.1f} | "
                     f"{r['jax_draws_per_s'] / 1e6:.1f} | {r['ratio']:.2f} |")
    return "\n".join(lines)


def targets(card: dict) -> str:
    """Issue 26's targets read against one perf_card JSON (deterministic in the JSON alone):
    each said as met in how many of its cells, with the range of its figure."""
    def count(key: str, keep, ok) -> str:
        got = _ratios(card, key, keep)
        if not got:
            return "not measured"
        n_ok = sum(ok(x) for x in got)
        head = f"met in all {len(got)} cells" if n_ok == len(got) else f"met in {n_ok} of {len(got)} cells"
        return f"{head} ({_span(got, unit='' if key == 'raptor/cpp throughput' else 'x')})"
    parts = [
        "at least the published eagle's speed: "
        + count("published/raptor", lambda r: True, lambda x: x >= 1.0),
        "dense stepping at >= 0.85 of the C++ lanes' throughput: "
        + count("raptor/cpp throughput", _dense(), lambda x: x >= 0.85),
        "spread 1000 within 1.25x of perfect compaction (N >= 1e5): "
        + count("compaction", _large("spread1000"), lambda x: x <= 1.25),
        "spread 100 likewise: " + count("compaction", _large("spread100"), lambda x: x <= 1.25),
    ]
    return "Targets (issue 26): " + "; ".join(parts) + "."


def render_isa(card: dict) -> str:
    """The markdown block of a perf_card JSON run with ``--march`` (deterministic in the JSON
    alone): what was compiled for which ISA, the ranges of the ratios, and the table."""
    m, v, p = card["machine"], card["versions"], card["protocol"]
    march = p.get("march", "native")
    recs = card["records"]
    arms = [a for a in ("raptor", "published", "numba", "cpp") if a in card["arms"]]
    said = []
    pub = _ratios(card, "published/raptor")
    if pub:
        n_ahead = sum(x > 1.0 for x in pub)
        said.append(f"raptor is ahead of the published eagle {v.get('published_eagle', '-')} in {n_ahead} of "
                    f"{len(pub)} cells ({_span(pub)})")
    numba = _ratios(card, "numba/raptor")
    if numba:
        said.append(f"ahead of Numba {v.get('numba', '-')} in {sum(x > 1.0 for x in numba)} of {len(numba)} "
                    f"({_span(numba)})")
    for dt in ("float64", "float32"):
        got = _ratios(card, "raptor/cpp throughput", _dense(dt))
        if got:
            said.append(f"dense {dt} at {_span(got, unit='')} of the C++ lanes' throughput")
    for cell in ("spread1000", "spread100", "spread10"):
        got = _ratios(card, "compaction", _large(cell))
        if got:
            said.append(f"{cell} at {_span(got)} of perfect compaction (N >= 1e5)")
    lines = [
        f"Generated by `benchmarks/render_docs.py` from `{ISA_RESULTS.relative_to(ROOT)}`; do not edit.",
        "",
        _fill(f"Machine: {m['cpu']} ({', '.join(m['isa'])}; {m['cores']} cores), {card['date'][:10]}; raptor "
        f"{v['raptor']} at {v['raptor_checkout']['commit'][:7]}. Compiled with `-march={march}`: raptor's "
        f"kernels (`{p.get('raptor_cxxflags')}`), the C++ lanes ({p.get('cpp_lanes')}), Numba "
        f"(`NUMBA_CPU_NAME={march}`) and the published eagle's kernels (its compiler through a wrapper "
        f"that replaces `-march=native`). Medians over {p['rounds']} processes. "
        + "; ".join(said) + "."),
        "",
        _fill(targets(card)),
        "",
        "| N | cell | dtype | " + " | ".join({"cpp": "C++"}.get(a, a) for a in arms)
        + " | published/raptor | numba/raptor | raptor/cpp | compaction |",
        "|---|---|---|" + "---|" * (len(arms) + 4),
    ]
    for r in recs:
        ratio = r.get("ratios", {})
        lines.append(
            f"| {r['n']:.0e} | {r['cell']} | {r['dtype']} | "
            + " | ".join(_ms(r["arms"].get(a, {}).get("ms")) for a in arms)
            + f" | {_x(ratio.get('published/raptor'))} | {_x(ratio.get('numba/raptor'))} | "
            f"{_x(ratio.get('raptor/cpp throughput'))} | {_x(ratio.get('compaction'))} |")
    return "\n".join(lines)


def render_peers(res: dict) -> str:
    """The host rows of a benchmarks/peers.py run (its JSON alone): the table peers.py prints
    for raptor and each host peer, and the range of each peer's time over raptor's."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _peers import report

    host = [s for s in report.HOST if s in res["systems"]]
    recs = [r for r in res["records"] if r["system"] in host]
    spans = []
    for peer in host[1:]:
        versus = report.versus_raptor(recs, peer).values()
        behind = sum(ratio < 1.0 and not tie for ratio, tie in versus)
        spans.append(f"{report.HEAD[peer]}'s time over raptor's {_span([ratio for ratio, _ in versus])} in its "
                     f"{len(versus)} rows; raptor slower beyond both systems' process-to-process spread in {behind}")
    s = res["settings"]
    lines = [
        f"Generated by `benchmarks/render_docs.py` from `{PEERS_RESULTS.relative_to(ROOT)}`; do not edit. "
        f"`python benchmarks/peers.py --systems {','.join(res['systems'])} --n-max {s['n_max']} "
        f"--json {PEERS_RESULTS.relative_to(ROOT)}`, {s['processes']} processes per system, run "
        f"{res['before']} to {res['after'].split(';')[0]}; threads: {' '.join(res['threads']) or 'each system at its default (all cores)'}. "
        + "; ".join(spans) + ".",
        "",
        "```",
        report.table(recs, host),
        "```",
    ]
    return _fill(lines[0]) + "\n" + "\n".join(lines[1:])


def _case_words(cases) -> str:
    """The cases of a benchmarks/peers.py run in words (its settings' ``cases``)."""
    words = {"drag": "the drag step", "osc": "the masked oscillator step",
             "pend": "the driven pendulum's step (a sin and a cos)"}
    named = [words.get(c, c) for c in (cases.split(",") if isinstance(cases, str) else cases)]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def peers_summary(res: dict) -> str:
    """README.md's sentences on a benchmarks/peers.py run (its JSON alone): per host peer, the
    range of its time over raptor's, and each row where raptor is slower beyond both systems'
    process-to-process spread, by name."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _peers import report

    host = [p for p in report.HOST if p in res["systems"]]
    recs = [r for r in res["records"] if r["system"] in host]
    ns = sorted({r["n"] for r in recs})
    m = res.get("machine")
    where = (f"{m['cpu']} ({', '.join(m['isa'])}; {m['cores']} cores)" if m else res["before"].split("; ")[1])
    vs = res.get("versions", {})
    out = []
    for peer in host[1:]:
        versus = report.versus_raptor(recs, peer)
        name = report.HEAD[peer] + (f" {vs[peer]}" if vs.get(peer) else "")
        behind = [f"{case} {dtype} at 2^{n.bit_length() - 1} ({ratio:.2f}x)"
                  for (case, dtype, n), (ratio, tie) in sorted(versus.items()) if ratio < 1.0 and not tie]
        ties = sum(tie for _, tie in versus.values())
        out.append(
            f"One kernel step launched on the host (`plan.bind(...).launch()`), against {name}'s `prange` loop "
            f"(`benchmarks/peers.py`: {_case_words(res['settings']['cases'])}, float64 and float32, "
            f"2^{ns[0].bit_length() - 1}-2^{ns[-1].bit_length() - 1} samples, {res['settings']['processes']} "
            f"processes per system taking turns), run {res['before'].split(';')[0]} on {where}: {name}'s time "
            f"over raptor's is {_span([r for r, _ in versus.values()])} in its {len(versus)} rows, "
            f"{ties} of them within the two systems' process-to-process spread; "
            + (f"raptor slower beyond that spread in {len(behind)}: {', '.join(behind)}."
               if behind else "raptor slower beyond that spread in none."))
    return _fill(" ".join(out))


def render_refill(res: dict) -> str:
    """The table of a benchmarks/refill_cost.py run: per dtype and cell its time on one thread,
    perfect compaction, and the shares of the steps, the idle lane-steps and the work between
    periods."""
    m = res["machine"]
    lines = [
        f"Generated by `benchmarks/render_docs.py` from `{REFILL_RESULTS.relative_to(ROOT)}`; do not edit. "
        f"`python benchmarks/refill_cost.py` on {m.get('cpu', '?')} ({', '.join(m.get('isa', [])) or 'no vector ISA listed'}), "
        f"{res['date'][:10]}, raptor at {res['raptor_checkout'].get('commit', '?')[:7]}; one thread, "
        f"N = {_n(res['n'])}, `-march={res['march']}`, median of {res['rounds']} processes.",
        "",
        "| dtype | cell | ms | perfect ms | compaction | lane-steps / sample-steps | steps | idle lanes | between periods | between, ns per sample |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        part = {k: f"{100 * v / r['ms']:.0f}%" for k, v in r["split_ms"].items()}
        lines.append(f"| {r['dtype']} | {r['cell']} | {_ms(r['ms'])} | {_ms(r.get('perfect_ms'))} | "
                     f"{_x(r.get('compaction'))} | {r['lane_steps'] / r['sample_steps']:.3f} | {part['steps']} | "
                     f"{part['idle']} | {part['between']} | {r['between_ns_per_sample']:.1f} |")
    return _fill(lines[0]) + "\n" + "\n".join(lines[1:])


def _mib(b: float) -> str:
    return f"{b / 2**20:.1f} MiB" if b < 2**30 else f"{b / 2**30:.1f} GiB"


def render_stream(res: dict) -> str:
    """The table of a benchmarks/stream_stores.py run: per dtype and N the drag step's launch
    with plain and with non-temporal stores, their ratio, and what the default does; with the
    threshold in effect and the caches sysfs and sysconf report."""
    m = res["machine"]
    c = m.get("caches", {})
    llc = max(c.get("sysfs", []), key=lambda e: e["level"] if e["type"] != "Instruction" else 0, default=None)
    where = f"sysfs's L{llc['level']} {llc['size']}" if llc else "no sysfs cache listed"
    l3 = c.get("sysconf_l3")
    env = res.get("env_stream_bytes")
    lines = [
        f"Generated by `benchmarks/render_docs.py` from `{STREAM_RESULTS.relative_to(ROOT)}`; do not edit. "
        f"`python benchmarks/stream_stores.py` on {m.get('cpu', '?')} ({', '.join(m.get('isa', [])) or 'no vector ISA listed'}; "
        f"{m.get('cores', '?')} cores; {where}, glibc's sysconf L3 {_mib(l3) if l3 else 'not given'}), {res['date'][:10]}, "
        f"raptor at {res['raptor_checkout'].get('commit', '?')[:7]}; median of {res['rounds']} rounds per mode. "
        f"The default streams from {_mib(res['default_stream_bytes'])} of planes"
        + (f" (RAPTOR_STREAM_BYTES={env})." if env else "."),
        "",
        "| dtype | N | planes | plain us | streamed us | plain / streamed | the default |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        lines.append(f"| {r['dtype']} | 2^{r['log2n']} | {_mib(r['plane_bytes'])} | {r['plain_us']:.1f} | "
                     f"{r['stream_us']:.1f} | {r['plain_over_stream']:.2f} | "
                     f"{'streamed' if r['default_streams'] else 'plain'} |")
    return _fill(lines[0]) + "\n" + "\n".join(lines[1:])


def render_math(res: dict) -> str:
    """The table of a benchmarks/math_functions.py run: per function, dtype and N the median
    microseconds of each system's kernel and the others' times over raptor's."""
    m, systems = res["machine"], res["systems"]
    names = {"raptor": "raptor", "numba": "Numba", "numpy": "NumPy"}
    others = [s for s in systems if s != "raptor"]
    lines = [
        f"Generated by `benchmarks/render_docs.py` from `{MATH_RESULTS.relative_to(ROOT)}`; do not edit. "
        f"`python benchmarks/math_functions.py` on {m.get('cpu', '?')} "
        f"({', '.join(m.get('isa', [])) or 'no vector ISA listed'}; {m.get('cores', '?')} cores), {res['date']}, "
        f"raptor at {res['raptor'].get('commit', '?')[:7]}; `y = f(x) + y`, the median of {res['rounds']} "
        f"processes per system taking turns.",
        "",
        "| function | dtype | N | " + " | ".join(f"{names[s]} us" for s in systems) + " | "
        + " | ".join(f"{names[s]} / raptor" for s in others) + " |",
        "|---|---|---|" + "---|" * (len(systems) + len(others)),
    ]
    for r in res["rows"]:
        us = r["us"]
        lines.append(f"| `{r['function']}` | {r['dtype']} | 2^{int(math.log2(r['n']))} | "
                     + " | ".join(f"{us[s]:.1f}" for s in systems) + " | "
                     + " | ".join(f"{us[s] / us['raptor']:.2f}" for s in others) + " |")
    return _fill(lines[0]) + "\n" + "\n".join(lines[1:])


def _replace_block(text: str, begin: str, end: str, body: str, where: pathlib.Path) -> str:
    head, sep, rest = text.partition(begin)
    if not sep or end not in rest:
        raise ValueError(f"{where}: no {begin} ... {end} block")
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def rendered_doc(doc: str, card: dict, draws: dict | None = None, isa: dict | None = None,
                 peers: dict | None = None, refill: dict | None = None, stream: dict | None = None,
                 draws_isa: dict | None = None, math_fns: dict | None = None) -> str:
    """docs/performance.md's text ``doc`` with its table and summary blocks rendered from ``card``
    and, given, its draws block from ``draws``, its other-ISA block from ``isa``, its
    Numba block from ``peers``, its refilled lanes' block from ``refill`` and its streamed
    stores' block from ``stream``, its draws block built for AVX2 from ``draws_isa``, its math
    functions' block from ``math_fns``."""
    doc = _replace_block(doc, BEGIN, END, render(card), DOC)
    doc = _replace_block(doc, SUMMARY_BEGIN, SUMMARY_END, summary(card), DOC)
    doc = _replace_block(doc, TARGETS_BEGIN, TARGETS_END, _fill(targets(card)), DOC)
    if draws is not None:
        doc = _replace_block(doc, DRAWS_BEGIN, DRAWS_END, render_draws(draws), DOC)
    if draws_isa is not None:
        doc = _replace_block(doc, DRAWS_ISA_BEGIN, DRAWS_ISA_END, render_draws(draws_isa, DRAWS_ISA_RESULTS), DOC)
    if isa is not None:
        doc = _replace_block(doc, ISA_BEGIN, ISA_END, render_isa(isa), DOC)
    if peers is not None:
        doc = _replace_block(doc, PEERS_BEGIN, PEERS_END, render_peers(peers), DOC)
    if refill is not None:
        doc = _replace_block(doc, REFILL_BEGIN, REFILL_END, render_refill(refill), DOC)
    if stream is not None:
        doc = _replace_block(doc, STREAM_BEGIN, STREAM_END, render_stream(stream), DOC)
    if math_fns is not None:
        doc = _replace_block(doc, MATH_BEGIN, MATH_END, render_math(math_fns), DOC)
    return doc


def rendered_readme(readme: str, card: dict, peers: dict | None = None) -> str:
    """README.md's text with its summary block rendered from ``card`` and, given, its Numba
    sentences from ``peers``."""
    readme = _replace_block(readme, SUMMARY_BEGIN, SUMMARY_END, summary(card), README)
    if peers is not None:
        readme = _replace_block(readme, PEERS_SUMMARY_BEGIN, PEERS_SUMMARY_END, peers_summary(peers), README)
    return readme


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a file differs from the JSON")
    a = ap.parse_args()
    card = json.loads(RESULTS.read_text())
    draws = json.loads(DRAWS_RESULTS.read_text())
    isa = json.loads(ISA_RESULTS.read_text())
    peers = json.loads(PEERS_RESULTS.read_text())
    refill = json.loads(REFILL_RESULTS.read_text())
    stream = json.loads(STREAM_RESULTS.read_text())
    draws_isa = json.loads(DRAWS_ISA_RESULTS.read_text())
    math_fns = json.loads(MATH_RESULTS.read_text())
    stale = []
    for path, render_file in ((DOC, lambda text, c: rendered_doc(text, c, draws, isa, peers, refill, stream,
                                                                draws_isa, math_fns)),
                              (README, lambda text, c: rendered_readme(text, c, peers))):
        text = path.read_text()
        want = render_file(text, card)
        if want != text:
            if a.check:
                stale.append(path)
            else:
                path.write_text(want)
    for path in stale:
        print(f"{path} differs from {RESULTS}: run python benchmarks/render_docs.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
