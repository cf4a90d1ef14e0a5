"""The performance figures in docs/performance.md are rendered from the committed benchmark
results (benchmarks/render_docs.py): this fails when the text and the JSON differ, so a
figure is never typed by hand or left behind by a new run."""

from __future__ import annotations

import importlib.util
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _render_docs():
    spec = importlib.util.spec_from_file_location("render_docs", ROOT / "benchmarks" / "render_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_performance_docs_are_the_rendered_results():
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    draws = json.loads(rd.DRAWS_RESULTS.read_text())
    doc = rd.DOC.read_text()
    assert rd.rendered_doc(doc, card, draws) == doc, "run python benchmarks/render_docs.py after a new benchmark run"


def test_a_changed_figure_is_caught():
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    doc = rd.DOC.read_text()
    card["records"][0]["arms"]["raptor"]["ms"] *= 2
    assert rd.rendered_doc(doc, card) != doc


def test_a_changed_draws_figure_is_caught():
    rd = _render_docs()
    card = json.loads(rd.RESULTS.read_text())
    draws = json.loads(rd.DRAWS_RESULTS.read_text())
    doc = rd.DOC.read_text()
    assert rd.DRAWS_BEGIN in doc and "| gamma | float64 |" in doc
    draws["rows"][0]["raptor_draws_per_s"] *= 2
    assert rd.rendered_doc(doc, card, draws) != doc
