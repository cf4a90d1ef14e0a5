"""What a benchmark ran on, as every benchmark's JSON records it: the machine (the CPU model,
the vector ISA flags that decide what the compiled kernels can use, the core count) and the
raptor checkout. One reader of /proc/cpuinfo and of the checkout for perf_card.py, peers.py,
random_draws.py, refill_cost.py and stream_stores.py. Start reading at ``cpu_info``.
"""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The flags a reader of a benchmark needs: which vectors the kernels were compiled for.
ISA_FLAGS = ("avx512f", "avx2", "fma")


def cpu_info() -> dict[str, Any]:
    """The CPU model, its vector ISA flags of interest (``ISA_FLAGS``), the core count and the
    platform; where /proc/cpuinfo is missing, Python's own guess at the model and no flags."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model in ("", platform.machine(), platform.processor()):
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {"cpu": model, "isa": [f for f in ISA_FLAGS if f in flags],
            "cores": os.cpu_count(), "platform": platform.platform()}


def describe(info: dict[str, Any] | None = None) -> str:
    """One line: 'AMD EPYC (avx512f, avx2, fma; 2 cores)'."""
    i = info if info is not None else cpu_info()
    return f"{i['cpu']} ({', '.join(i['isa']) or 'no AVX'}; {i['cores']} cores)"


def raptor_revision() -> dict[str, Any]:
    """The checkout's commit and whether its tracked files differ from it (raptor is
    installed from the working tree), read without touching the index; {} outside a checkout."""
    git = ["git", "--no-optional-locks", "-C", ROOT]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return {}
    dirty = subprocess.run([*git, "diff", "--quiet", "HEAD", "--"], capture_output=True)
    return {"commit": head.stdout.strip(), "modified": dirty.returncode == 1}
