"""What the derivative kernels of a long loop cost, against the loop itself, in one process.

    python benchmarks/loop_adjoint.py        # prints a table of times and ratios

A kernel whose `for` has 100,000 iterations and leaves after about n of them
(``s = s * a`` until s passes e, from s = 1 with a = 1 + 1/n), on 1024 samples, for n = 100,
1000 and 10,000. Rounds alternate the primal launch, its tangent kernel and its adjoint
kernel (docs/language.md "Long loops", derivatives); each cell is the best of the rounds.
The adjoint recomputes each iteration from a checkpoint every floor(sqrt(n)) + 1 iterations
and stores nothing per iteration, so its time grows as about 2 n sqrt(n) body evaluations:
the ratio to the primal grows as sqrt(n). The tangent carries one more value and stays near
the primal's time. The results are checked against the closed form (dy/dx = y/x,
dy/da = n_taken * y / a) before anything is timed.
"""

from __future__ import annotations

import tempfile
import time

import numpy as np

import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar


@hawk.kernel
def grow(x: Scalar, a: Param, lim: Param, y: Mutable[Scalar], n: Mutable[Scalar]):
    s = x
    c = 0.0
    for _ in range(100000):
        s = s * a
        c = c + 1.0
        if s > lim:
            break
    y = s
    n = c


N = 1024
ROUNDS = 3


def main() -> None:
    tk, ak = grow.tangent(["x", "a"]), grow.adjoint(["x", "a"])
    plans = eagle.plan.auto([grow, tk, ak], targets=("host",), cache_dir=tempfile.mkdtemp())
    p, pt, pa = plans
    print(f"{'iterations':>10} {'primal ms':>10} {'tangent ms':>11} {'adjoint ms':>11} "
          f"{'tangent/primal':>15} {'adjoint/primal':>15}")
    for n_it in (100, 1000, 10000):
        a = 1.0 + 1.0 / n_it
        lim = float(np.e)
        x = np.linspace(1.0, 1.01, N)
        y, n = np.zeros(N), np.zeros(N)
        yt, nt, yd, nd = (np.zeros(N) for _ in range(4))
        xb, ab = np.zeros(N), np.zeros(1)
        b = p.bind(x=x, a=a, lim=lim, y=y, n=n)
        bt = pt.bind(x=x, a=a, lim=lim, x_dot=np.ones(N), a_dot=0.0, y=yt, n=nt, y_dot=yd, n_dot=nd)
        ba = pa.bind(x=x, a=a, lim=lim, y_bar=np.ones(N), n_bar=np.zeros(N), x_bar=xb, a_bar=ab)
        b.launch(), bt.launch(), ba.launch()
        np.testing.assert_allclose(yd, y / x, rtol=1e-10)
        np.testing.assert_allclose(xb, y / x, rtol=1e-10)
        np.testing.assert_allclose(ab[0], np.sum(n * y / a), rtol=1e-10)
        times: dict[str, list[float]] = {"p": [], "t": [], "a": []}
        for _ in range(ROUNDS):
            for key, bound in (("p", b), ("t", bt), ("a", ba)):
                t0 = time.perf_counter()
                bound.launch()
                times[key].append(time.perf_counter() - t0)
        tp, tt, ta = (min(times[k]) for k in ("p", "t", "a"))
        print(f"{int(n.mean()):>10} {tp * 1e3:>10.3f} {tt * 1e3:>11.3f} {ta * 1e3:>11.3f} "
              f"{tt / tp:>15.2f} {ta / tp:>15.1f}")


if __name__ == "__main__":
    main()
