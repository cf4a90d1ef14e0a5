"""The documentation site's sources (scripts/docs.sh builds them): the user's pages as
committed notebooks, their hosted-notebook setup cell, the check of the built pages' printed
lines (docs/_tools/check_pages.py), and the examples read as notebook pages.

The user's pages live in ../shared/seeds next to the repository (as in CI;
RAPTOR_SHARED_DIR overrides). The committed notebooks (docs/tutorials/jax/) are checked
against them: the title, every code line, the setup cell, and every printed line that
check_pages.py expects (or, for a CPU branch, the page's GPU line it replaces).
"""

from __future__ import annotations

import os
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_tools"))
import check_pages  # noqa: E402
import nb_colab_setup  # noqa: E402

PAGES_DIR = ROOT / "docs" / "tutorials" / "jax"
SOURCES = {rel: PAGES_DIR / (pathlib.Path(rel).stem + ".md") for rel in check_pages.PAGES}


def _seeds_dir() -> pathlib.Path | None:
    d = pathlib.Path(os.environ.get("RAPTOR_SHARED_DIR", ROOT.parent / "shared")) / "seeds"
    return d if d.is_dir() else None


def _seed(prefix: str) -> str:
    d = _seeds_dir()
    if d is None:
        pytest.skip("the user's pages (../shared/seeds) are not next to this checkout")
    (path,) = sorted(d.glob(f"{prefix}_*.txt"))
    return path.read_text(encoding="utf-8")


def _norm(line: str) -> str:
    return " ".join(line.split())


def _code_cells(md: str) -> list[tuple[list[str], str]]:
    """(tags, source) of each ``{code-cell}`` of a MyST notebook."""
    cells = []
    for m in re.finditer(r"```\{code-cell\}[^\n]*\n(.*?)\n```\n", md, re.S):
        body, tags = m.group(1), []
        t = re.match(r":tags: \[(.*?)\]\n\n?", body)
        if t:
            tags, body = [x.strip() for x in t.group(1).split(",")], body[t.end():]
        cells.append((tags, body))
    return cells


def test_every_page_has_its_notebook():
    for rel, src in SOURCES.items():
        assert src.is_file(), f"{rel}: no source {src}"
    index = (ROOT / "docs" / "index.md").read_text()
    for src in SOURCES.values():
        assert str(src.relative_to(ROOT / "docs").with_suffix("")) in index


def test_setup_cell_is_one_copy_in_every_page():
    for src in SOURCES.values():
        text = src.read_text()
        assert nb_colab_setup.rendered(text) == text, f"{src}: run python docs/_tools/nb_colab_setup.py"
        tags, body = _code_cells(text)[0]
        assert body + "\n" == nb_colab_setup.CELL and ("hide-input" in tags or "remove-input" in tags)


def test_setup_cell_is_the_pages_cell():
    seed = _seed("001")
    lines = {_norm(ln) for ln in seed.splitlines()}
    for line in nb_colab_setup.CELL.splitlines():
        if line.strip():
            assert _norm(line) in lines, line


@pytest.mark.parametrize("rel", sorted(check_pages.PAGES))
def test_page_notebook_is_the_users_page(rel):
    prefix, title, _, page_lines = check_pages.PAGES[rel]
    seed = _seed(prefix)
    seed_lines = {_norm(ln) for ln in seed.splitlines()}
    md = SOURCES[rel].read_text()
    assert re.search(r"^# (.*)$", md, re.M).group(1) == title
    assert _norm(title) in {_norm(ln.rstrip("#")) for ln in seed.splitlines()[:3]}
    for _, body in _code_cells(md)[1:]:  # the setup cell: test_setup_cell_is_the_pages_cell
        for line in body.splitlines():
            if line.strip():
                assert _norm(line) in seed_lines, f"{rel}: code line not on the page: {line!r}"
    for line in page_lines:
        assert _norm(line) in seed_lines, f"{rel}: printed line not on the page: {line!r}"


def test_cpu_branch_replaces_lines_of_the_pages():
    every = [ln for (_, _, _, lines) in check_pages.PAGES.values() for ln in lines]
    for gpu_line in check_pages.CPU_BRANCH:
        assert gpu_line in every
    assert check_pages.expected_lines(["a", "identical on both", "('eager_stream', 'capture')"]) == ["a", "('host',)"]
    assert check_pages.expected_lines(["identical on both"], gpu=True) == ["identical on both"]


def _built_page(title: str, outputs: list[str], images: int) -> str:
    """A page as MyST-NB writes it: an <h1>, cells with stream / text_plain / stderr outputs."""
    cells = []
    for out in outputs:
        cells.append(
            '<div class="cell docutils container"><div class="cell_input docutils container"><pre>print(1)</pre></div>'
            '<div class="cell_output docutils container"><div class="output stream highlight-myst-ansi notranslate">'
            f'<div class="highlight"><pre><span></span>{out}\n</pre></div></div>'
            '<div class="output stderr highlight-myst-ansi notranslate"><div class="highlight"><pre>W0000 a warning\n'
            "</pre></div></div></div></div>")
    cells += ['<div class="cell docutils container"><div class="cell_output docutils container">'
              '<img alt="_images/x.png" src="x.png" /></div></div>'] * images
    return f'<html><body><h1>{title}<a class="headerlink" href="#">#</a></h1>{"".join(cells)}</body></html>'


def _write_site(tmp_path, change=None):
    for rel, (_, title, figures, lines) in check_pages.PAGES.items():
        want = check_pages.expected_lines(lines)
        if change and change[0] == rel:
            want = [change[1] if ln == change[2] else ln for ln in want]
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_built_page(title.replace("'", "&#x27;"), [l.replace("'", "&#x27;") for l in want], figures))


def test_check_pages_passes_the_pages_lines(tmp_path):
    _write_site(tmp_path)
    assert check_pages.problems(tmp_path) == []


def test_check_pages_catches_a_changed_line(tmp_path):
    rel = "tutorials/jax/stepping_loop_in_scan.html"
    _write_site(tmp_path, (rel, "landed after 360 steps: 255 of 256", "landed after 360 steps: 256 of 256"))
    (problem,) = check_pages.problems(tmp_path)
    assert problem.startswith(f"{rel}: printed lines differ from the page's")


def test_check_pages_catches_a_missing_figure_and_page(tmp_path):
    _write_site(tmp_path)
    rel = "tutorials/jax/model_between_launches.html"
    (tmp_path / rel).write_text((tmp_path / rel).read_text().replace("<img", "<span"))
    (tmp_path / "tutorials/jax/inside_your_program.html").unlink()
    assert sorted(check_pages.problems(tmp_path)) == [
        "tutorials/jax/inside_your_program.html: not built",
        f"{rel}: 0 figure(s) in the outputs, the page draws 1",
    ]


@pytest.mark.parametrize("script", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_example_pages_are_the_scripts(script):
    """Each example page is its script: the docstring's first line is the title, and the code
    cells hold every line of the code, in order (only blank lines differ)."""
    pytest.importorskip("jupytext")
    import ast

    import example_reader

    text = script.read_text()
    nb = example_reader.read_example(text)
    setup, intro, *code = nb.cells
    assert setup.metadata["tags"] == ["remove-cell"]
    doc = ast.get_docstring(ast.parse(text))
    assert intro.cell_type == "markdown" and intro.source.startswith("# " + doc.splitlines()[0].rstrip("."))
    assert all(c.cell_type == "code" for c in code) and len(code) >= 2
    body = text.split('"""', 2)[2]
    assert [ln for c in code for ln in c.source.splitlines() if ln.strip()] == [ln for ln in body.splitlines() if ln.strip()]


def test_reference_check_finds_a_name_without_an_entry(tmp_path):
    """docs.sh's check that the built reference has an entry for every public name."""
    import importlib
    import inspect

    import api_check

    (tmp_path / "api").mkdir()
    for module_name in api_check.MODULES:
        mod = importlib.import_module(module_name)
        ids = "".join(f'<dt id="{module_name}.{n}"></dt>' for n in mod.__all__ if not inspect.ismodule(getattr(mod, n)))
        (tmp_path / "api" / f"{module_name}.html").write_text(f"<html>{ids}</html>")
    assert api_check.missing_from_reference(tmp_path) == []
    page = tmp_path / "api" / "hawk.math.html"
    page.write_text(page.read_text().replace('<dt id="hawk.math.sqrt"></dt>', ""))
    assert api_check.missing_from_reference(tmp_path) == ["hawk.math.sqrt"]


def test_docs_kernels_run_over_unix_sockets(monkeypatch):
    """docs/_tools/kernel_ipc.py: a notebook executed the way the docs build executes it
    (jupyter-cache's single_nb_execution, as MyST-NB's cache mode) runs in a kernel whose
    transport is ipc, its socket files in the build's directory, removed when it stops."""
    nbclient = pytest.importorskip("nbclient", reason="the docs extra (pip install '.[docs]') is not installed")
    nbformat = pytest.importorskip("nbformat")
    from jupyter_cache.executors.utils import single_nb_execution

    import kernel_ipc

    monkeypatch.setattr(nbclient.NotebookClient, "create_kernel_manager", nbclient.NotebookClient.create_kernel_manager)
    directory = kernel_ipc.install()
    assert kernel_ipc.install() == directory  # idempotent
    assert len(os.path.join(directory, "k4194304-99-5")) < 100, "a Unix socket path is limited to about 107 bytes"
    cell = (
        "import json\nfrom ipykernel.connect import get_connection_info\n"
        "info = json.loads(get_connection_info())\nprint(info['transport'], info['ip'])"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    result = single_nb_execution(nb, cwd=str(ROOT), timeout=120, allow_errors=False)
    assert result.err is None, result.exc_string
    (output,) = nb.cells[0].outputs
    transport, ip = output["text"].split()
    assert transport == "ipc" and ip.startswith(os.path.join(directory, "k"))
    assert os.listdir(directory) == [], "the kernel's socket files outlived it"
