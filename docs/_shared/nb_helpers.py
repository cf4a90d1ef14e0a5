"""Helpers the notebook pages import (docs/tutorials/*/*.md put this folder on sys.path, as
the hosted pages do): one plot style for every page's figures."""

from __future__ import annotations


def plot_style() -> None:
    """Sets matplotlib's defaults for the pages' figures: a light grid, no top or right
    spine, the default colour cycle, and a resolution that reads well on the site."""
    import matplotlib as mpl

    mpl.rcParams.update({
        "figure.dpi": 100,
        "savefig.dpi": 110,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "font.size": 10,
    })
