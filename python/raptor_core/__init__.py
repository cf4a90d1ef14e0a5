"""raptor_core: the compiled C++ core of raptor (nanobind module ``raptor_core._core``), shared by hawk and eagle."""

from ._core import *  # noqa: F401,F403
