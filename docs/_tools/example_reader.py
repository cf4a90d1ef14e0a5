"""Reads an examples/*.py script as a notebook page of the documentation site (MyST-NB's
``nb_custom_formats`` in docs/conf.py), so the scripts stay the single source.

- The module docstring becomes the page's markdown: its first line the title, the rest the
  introduction (an indented block after a line ending in ``:`` becomes a code block).
- The code after it is split into cells by jupytext (the "light" format: paragraphs); a
  paragraph that does not start with a ``#`` comment joins the cell before it, so each cell
  is a commented step of the script, as it reads top to bottom.
- A first cell, removed from the page, makes plots visible: the scripts draw with the Agg
  backend and save PNGs into ``$RAPTOR_EXAMPLES_OUT``; after each cell, every PNG new in that
  folder is displayed as that cell's output.
"""

from __future__ import annotations

import ast
import re

import jupytext
import nbformat

SHOW_PNGS = '''\
# docs build only (removed from the page): show the PNGs each cell writes as its output
import os as _os, pathlib as _pathlib, tempfile as _tempfile
from IPython import get_ipython as _get_ipython
from IPython.display import Image as _Image, display as _display

_out = _pathlib.Path(_tempfile.mkdtemp(prefix="raptor-docs-"))
_os.environ["RAPTOR_EXAMPLES_OUT"] = str(_out)
_shown = set()


def _show_new_pngs(result):
    for png in sorted(_out.glob("*.png")):
        if png not in _shown:
            _shown.add(png)
            _display(_Image(filename=str(png)))


_get_ipython().events.register("post_run_cell", _show_new_pngs)
'''


def _docstring_markdown(doc: str) -> str:
    """The page's markdown from a module docstring: title, then the text, with RST-style
    indented blocks after ``...:`` turned into fenced code."""
    lines = doc.strip("\n").splitlines()
    title = lines[0].strip().rstrip(".")
    out = [f"# {title}", ""]
    i = 1
    while i < len(lines):
        line = lines[i]
        if line.startswith("    ") and out and out[-1].rstrip().endswith(":"):
            block = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["", "```bash", *block, "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out).strip() + "\n"


def read_example(text: str, **_: object) -> nbformat.NotebookNode:
    """An examples/*.py script as a notebook (markdown from its docstring, code cells)."""
    tree = ast.parse(text)
    doc = ast.get_docstring(tree, clean=True)
    body = text
    cells = []
    if doc is not None:
        first = tree.body[0]
        body = "\n".join(text.splitlines()[first.end_lineno:])
        cells.append(nbformat.v4.new_markdown_cell(_docstring_markdown(doc)))
    setup = nbformat.v4.new_code_cell(SHOW_PNGS)
    setup.metadata["tags"] = ["remove-cell"]
    cells.insert(0, setup)

    merged: list[str] = []
    for cell in jupytext.reads(body, fmt="py:light").cells:
        src = cell.source.strip("\n")
        if not src.strip():
            continue
        if cell.cell_type != "code":  # a comment block jupytext read as markdown: keep it as code
            src = "\n".join("# " + ln if ln else "#" for ln in src.splitlines())
        if merged and not src.lstrip().startswith("#"):
            merged[-1] += "\n\n" + src
        else:
            merged.append(src)
    cells += [nbformat.v4.new_code_cell(re.sub(r"\n{3,}", "\n\n\n", src)) for src in merged]

    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb
