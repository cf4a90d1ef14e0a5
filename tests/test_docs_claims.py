"""The performance figures in docs/performance.md and the README are rendered from the
committed benchmark results (benchmarks/render_docs.py): this fails when the text and the JSON
differ, so a figure is never typed by hand or left behind by a new run."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _render_docs():
    spec = importlib.util.spec_from_file_location("render_docs", ROOT / "benchmarks" / "render_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _dense_f64_span(rd, card: dict) -> str:
    """The README's range of published/raptor over the dense float64 cells, as rendered."""
    values = [r["ratios"]["published/raptor"] for r in card["records"]
              if r["dist"] == "uniform" and r["dtype"] == "float64" and r["ratios"].get("published/raptor")]
    span = rd._span(values)
    assert span in rd.README.read_text()
    return span


def test_performance_docs_are_the_rendered_results():
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    draws = json.loads(rd.DRAWS_RESULTS.read_text())
    isa = json.loads(rd.ISA_RESULTS.read_text())
    peers = json.loads(rd.PEERS_RESULTS.read_text())
    refill = json.loads(rd.REFILL_RESULTS.read_text())
    stream = json.loads(rd.STREAM_RESULTS.read_text())
    draws_isa = json.loads(rd.DRAWS_ISA_RESULTS.read_text())
    math_fns = json.loads(rd.MATH_RESULTS.read_text())
    doc = rd.DOC.read_text()
    assert rd.rendered_doc(doc, card, draws, isa, peers, refill, stream, draws_isa, math_fns) == doc, \
        "run python benchmarks/render_docs.py after a new benchmark run"


def test_the_streamed_stores_prose_quotes_its_run():
    """The figures the prose under the streamed stores' table quotes by hand are its JSON's: the
    two 48 MiB rows, the range from 96 MiB, and the threshold."""
    rd = _render_docs()
    stream = json.loads(rd.STREAM_RESULTS.read_text())
    rows = {(r["dtype"], r["plane_bytes"] >> 20): r["plain_over_stream"] for r in stream["rows"]}
    doc = " ".join(rd.DOC.read_text().split())  # as read, whatever the line breaks
    assert f"({rows[('float64', 48)]:.2f} and {rows[('float32', 48)]:.2f} in the run above" in doc
    beyond = [v for (_, mib), v in rows.items() if mib >= 96]
    assert f"and {min(beyond):.2f}x-{max(beyond):.2f}x faster from 96 MiB" in doc
    fitting = [1 / v for (_, mib), v in rows.items() if mib <= 24]
    assert f"it is {min(fitting):.1f}x-{max(fitting):.1f}x slower while the planes fit it" in doc
    middle = [1 / v for (_, mib), v in rows.items() if 8 <= mib <= 24]
    assert f"made launches of 8-24 MiB {min(middle):.1f}x-{max(middle):.1f}x slower" in doc
    assert stream["default_stream_bytes"] == 80 << 20 and "the default streams from 80 MiB of planes here" in doc


def test_a_changed_refill_figure_is_caught():
    """The work between periods of one cell twice as long changes its row of the rendered table."""
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    refill = json.loads(rd.REFILL_RESULTS.read_text())
    doc = rd.rendered_doc(rd.DOC.read_text(), card, refill=refill)
    (row,) = [r for r in refill["rows"] if r["dtype"] == "float64" and r["cell"] == "spread100"]
    row["between_ns_per_sample"] *= 2
    assert rd.rendered_doc(doc, card, refill=refill) != doc


def test_a_changed_math_functions_figure_is_caught():
    """Numba twice as slow in one row of the math functions' run changes that row in the table."""
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    math_fns = json.loads(rd.MATH_RESULTS.read_text())
    doc = rd.rendered_doc(rd.DOC.read_text(), card, math_fns=math_fns)
    math_fns["rows"][0]["us"]["numba"] *= 2
    assert rd.rendered_doc(doc, card, math_fns=math_fns) != doc


def test_a_changed_peers_figure_is_caught():
    """Numba twice as slow in one row changes that row's ratio in the rendered table."""
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    peers = json.loads(rd.PEERS_RESULTS.read_text())
    doc = rd.rendered_doc(rd.DOC.read_text(), card, peers=peers)
    (rec,) = [r for r in peers["records"] if r["system"] == "numba" and r["case"] == "drag"
              and r["dtype"] == "float64" and r["n"] == 1 << 14]
    rec["seconds"] *= 2
    assert rd.rendered_doc(doc, card, peers=peers) != doc


def test_a_changed_figure_is_caught():
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    doc = rd.DOC.read_text()
    card["records"][0]["arms"]["raptor"]["ms"] *= 2
    assert rd.rendered_doc(doc, card) != doc


def test_readme_figures_are_the_rendered_results():
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    readme = rd.README.read_text()
    assert rd.rendered_readme(readme, card) == readme, "run python benchmarks/render_docs.py after a new perf_card run"
    assert rd.summary(card) in readme and rd.summary(card) in rd.DOC.read_text()


def test_a_changed_figure_is_caught_in_the_readme():
    """Halving raptor's time in the fastest dense float64 cell moves the README's range."""
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    readme = rd.README.read_text()
    (rec,) = [r for r in card["records"] if r["n"] == 100000 and r["cell"] == "uniform1000" and r["dtype"] == "float64"]
    rec["ratios"]["published/raptor"] *= 2
    assert rd.rendered_readme(readme, card) != readme
    assert rd.rendered_doc(rd.DOC.read_text(), card) != rd.DOC.read_text()


def test_a_hand_edited_readme_figure_is_caught():
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    readme = rd.README.read_text()
    figure = _dense_f64_span(rd, card)
    # the rendered text may wrap between the figure and "in float64"
    edited = re.sub(re.escape(figure) + r"(\s+)in float64", r"0.1x-0.2x\1in float64", readme, count=1)
    assert edited != readme
    assert rd.rendered_readme(edited, card) == readme


def test_summary_counts_cells_behind():
    """A cell where raptor is slower is said as such, not hidden in "all"."""
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    for r in card["records"]:
        r["ratios"]["numba/raptor"] = 1.5
    numba = f"Numba {card['versions']['numba']} (`prange`)"
    cells = len(card["records"])
    assert f"ahead of {numba} in all {cells} cells" in rd.summary(card).replace("\n", " ")
    card["records"][0]["ratios"]["numba/raptor"] = 0.9
    assert f"ahead of {numba} in {cells - 1} of {cells} cells" in rd.summary(card).replace("\n", " ")


def test_check_mode_fails_on_a_drift(tmp_path, monkeypatch):
    rd = _render_docs()
    readme = tmp_path / "README.md"
    figure = _dense_f64_span(rd, json.loads(rd.RESULTS.read_text()))
    readme.write_text(rd.README.read_text().replace(figure, "0.1x-0.2x", 1))
    doc = tmp_path / "performance.md"
    doc.write_text(rd.DOC.read_text())
    monkeypatch.setattr(rd, "README", readme)
    monkeypatch.setattr(rd, "DOC", doc)
    monkeypatch.setattr("sys.argv", ["render_docs.py", "--check"])
    assert rd.main() == 1
    monkeypatch.setattr("sys.argv", ["render_docs.py"])
    assert rd.main() == 0 and figure in readme.read_text() and "0.1x-0.2x" not in readme.read_text()
    monkeypatch.setattr("sys.argv", ["render_docs.py", "--check"])
    assert rd.main() == 0


def test_a_changed_draws_figure_is_caught():
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    draws = json.loads(rd.DRAWS_RESULTS.read_text())
    doc = rd.DOC.read_text()
    assert rd.DRAWS_BEGIN in doc and "| gamma | float64 |" in doc
    draws["rows"][0]["raptor_draws_per_s"] *= 2
    assert rd.rendered_doc(doc, card, draws) != doc


def test_a_changed_isa_figure_is_caught():
    """The AVX2 card's block: rendered from its JSON, says which ISA, and a changed time moves it."""
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    isa = json.loads(rd.ISA_RESULTS.read_text())
    doc = rd.DOC.read_text()
    assert rd.ISA_BEGIN in doc and f"-march={isa['protocol']['march']}" in doc
    assert isa["protocol"]["march"] != "native" and isa["ok"]
    isa["records"][0]["arms"]["raptor"]["ms"] *= 2
    assert rd.rendered_doc(doc, card, None, isa) != doc


def test_the_readme_says_the_numba_run_as_rendered():
    """The README's sentences on benchmarks/peers.py are its JSON's, and a row where Numba turns
    faster beyond the spread is named there."""
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    peers = json.loads(rd.PEERS_RESULTS.read_text())
    readme = rd.README.read_text()
    assert rd.rendered_readme(readme, card, peers) == readme, "run python benchmarks/render_docs.py"
    assert rd.peers_summary(peers) in readme
    (raptor,) = [r for r in peers["records"] if r["system"] == "raptor" and r["case"] == "osc"
                 and r["dtype"] == "float64" and r["n"] == 1 << 12]
    raptor["seconds"] *= 10  # Numba 10x faster than raptor in that row, far beyond the spread
    changed = rd.peers_summary(peers)
    assert "osc float64 at 2^12 (" in " ".join(changed.split())
    assert rd.rendered_readme(readme, card, peers) != readme
