"""A kernel imported both by the test process and by fresh subprocesses (plan-cache tests).

The generated C++ names this file and the lines of its statements, so both processes must
define the kernel from this very file.
"""

import hawk
from hawk import Mutable, Param, Scalar


@hawk.kernel
def cached_axpy(x: Scalar, y: Scalar, a: Param, out: Mutable[Scalar]):
    out = a * x + y


PLAN_AND_RUN = """
import sys, json
import numpy as np
sys.path.insert(0, {tests_dir!r})
import eagle.plan
from cache_kernels import cached_axpy
kw = {{}} if {cache_dir!r} is None else {{"cache_dir": {cache_dir!r}}}
(plan,) = eagle.plan.auto([cached_axpy], **kw)
x = np.arange(5.0); y = np.ones(5); out = np.zeros(5)
plan.bind(x=x, y=y, a=2.0, out=out).launch()
print(json.dumps({{"cache_hit": plan.info["cache_hit"], "so_path": plan.info["so_path"],
                  "out": out.tolist()}}))
"""
