"""Sphinx configuration of raptor's documentation site (built by scripts/docs.sh).

Sources: the markdown pages of docs/, the user's notebook pages (docs/tutorials/, MyST
markdown notebooks), the examples (docs/examples is a link to ../examples: each
examples/*.py is read through jupytext by docs/_tools/example_reader.py, so the scripts stay
the single source) and the API reference (docs/api/, autodoc over each module's __all__).
Every notebook is executed at build time; a cell that raises is a warning with its traceback,
and scripts/docs.sh turns every warning into an error.
"""

from __future__ import annotations

import os
import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_tools"))

import api_check  # noqa: E402  (docs/_tools/api_check.py)
import kernel_ipc  # noqa: E402  (docs/_tools/kernel_ipc.py)

project = "raptor"
author = "the raptor authors"
copyright = "2026, the raptor authors"
release = version = "0.6.0"

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]

# Only these are pages: conf.py, docs/_tools and docs/_shared are Python files but not pages.
include_patterns = ["index.md", "*.md", "tutorials/**/*.md", "examples/*.py", "api/*.md"]
exclude_patterns = ["_build", "_tools", "_shared", "examples/out", "**/.ipynb_checkpoints"]

html_theme = "furo"
html_title = "raptor 0.6.0"
html_static_path: list[str] = []

# --- MyST and MyST-NB ---------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3
nb_custom_formats = {".py": ["example_reader.read_example", {}, False]}
nb_execution_mode = os.environ.get("RAPTOR_DOCS_EXECUTE", "cache")  # scripts/docs.sh: cache
nb_execution_cache_path = os.environ.get("RAPTOR_DOCS_CACHE", str(ROOT / "build" / "docs" / "jupyter_cache" / "default"))
nb_execution_timeout = 600
# A cell that raises is a warning carrying the cell's traceback, which -W (scripts/docs.sh) makes
# an error at the end of the build; raising at once would lose the traceback in a parallel build.
nb_execution_raise_on_error = False
nb_execution_show_tb = True
nb_merge_streams = True
nb_kernel_rgx_aliases = {".*": "python3"}
# The notebooks' kernels use Unix sockets, not TCP ports: parallel readers' kernels chose
# colliding ports (a kernel dying with "Address already in use"); docs/_tools/kernel_ipc.py.
kernel_ipc.install()

# --- autodoc ------------------------------------------------------------------------------------
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False

suppress_warnings = ["myst.header"]  # the docs' own pages start at level-1 headings; fine


def setup(app):
    """Fails the build (a warning, which scripts/docs.sh makes an error) when a public name of
    a documented module has no docstring: docs/_tools/api_check.py."""
    app.connect("builder-inited", api_check.warn_undocumented)
