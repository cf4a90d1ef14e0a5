"""Mean-field coupling with sums over samples: 4096 Kuramoto oscillators synchronizing.

Each oscillator i has a phase theta_i and a natural frequency omega_i (Lorentzian, width g);
it is pulled toward the ensemble's mean phase by the order parameter
r exp(i psi) = mean_j exp(i theta_j):

    dtheta_i / dt = omega_i + K r sin(psi - theta_i) = omega_i + K (S cos theta_i - C sin theta_i),

with C = mean cos theta, S = mean sin theta. The mean is a reduction over the samples of the
launch, written in a kernel as ``C = hawk.mean(cos(theta))`` into a ``Mutable[Param]`` output
(docs/language.md "Sums over samples"): one value per launch, the same bits whatever the thread
count. A second kernel takes C and S as Params and steps the phases
(reading a sum in the same body, a stage boundary, is not supported yet: two kernels it is).

The script:

- runs 600 Euler steps (a sum launch and a step launch each) for K below and above the
  critical coupling K_c = 2 g, and checks the stationary order parameter against the
  Ott-Antonsen value sqrt(1 - K_c / K) (and r small below K_c);
- runs the same steps in NumPy (np.mean, the same formula) and checks the phases agree;
- writes r(t) for both couplings and the final phases on the circle to ``kuramoto.png``.

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 09_mean_field_kuramoto.py
"""

import os
import tempfile

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar
from hawk.math import cos, sin

OUT = os.environ.get("RAPTOR_EXAMPLES_OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)

N = 4096
G = 0.5  # Lorentzian half-width of the natural frequencies: K_c = 2 G = 1
DT = 0.05
STEPS = 600


@hawk.kernel
def order(theta: Scalar, c: Mutable[Param], s: Mutable[Param]):
    # the ensemble means of cos and sin over the samples of the launch
    c = hawk.mean(cos(theta))
    s = hawk.mean(sin(theta))


@hawk.kernel
def step(omega: Scalar, c: Param, s: Param, k: Param, dt: Param, theta: Mutable[Scalar]):
    theta = theta + dt * (omega + k * (s * cos(theta) - c * sin(theta)))


def run_raptor(k: float, theta0: np.ndarray, omega: np.ndarray, plans: dict) -> tuple[np.ndarray, np.ndarray]:
    theta = theta0.copy()
    cs, ss = np.zeros(1), np.zeros(1)
    o = plans["order"].bind(theta=theta, c=cs, s=ss)
    r = np.empty(STEPS)
    for t in range(STEPS):
        o.launch()
        r[t] = np.hypot(cs[0], ss[0])
        plans["step"].bind(omega=omega, c=float(cs[0]), s=float(ss[0]), k=k, dt=DT, theta=theta).launch()
    return theta, r


def run_numpy(k: float, theta0: np.ndarray, omega: np.ndarray) -> np.ndarray:
    theta = theta0.copy()
    for _ in range(STEPS):
        c, s = np.mean(np.cos(theta)), np.mean(np.sin(theta))
        theta = theta + DT * (omega + k * (s * np.cos(theta) - c * np.sin(theta)))
    return theta


def main() -> None:
    rng = np.random.default_rng(7)
    # deterministic Lorentzian quantiles (a smooth sample: the mean-field theory's limit)
    u = (np.arange(N) + 0.5) / N
    omega = G * np.tan(np.pi * (u - 0.5))
    rng.shuffle(omega)
    theta0 = rng.uniform(-np.pi, np.pi, N)
    plans = {p.kernel.name: p for p in eagle.plan.auto([order, step], targets=("host",))}

    results = {}
    for k in (0.6, 2.0):
        theta, r = run_raptor(k, theta0, omega, plans)
        ref = run_numpy(k, theta0, omega)
        diff = float(np.max(np.abs(theta - ref)))
        r_end = float(np.mean(r[-100:]))
        r_oa = np.sqrt(1.0 - 2.0 * G / k) if k > 2.0 * G else 0.0
        print(f"K = {k}: r(t -> end) = {r_end:.4f} (Ott-Antonsen {r_oa:.4f}), "
              f"max |theta - numpy| = {diff:.2e}")
        assert diff < 1e-8, diff  # the same steps; sums added in another order than np.mean
        if k > 2.0 * G:
            assert abs(r_end - r_oa) < 0.03, (r_end, r_oa)
        else:
            assert r_end < 0.15, r_end  # incoherent: finite-N fluctuations only
        results[k] = (theta, r)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    t = DT * np.arange(STEPS)
    for k, (_, r) in results.items():
        a1.plot(t, r, label=f"K = {k}")
    a1.axhline(np.sqrt(1.0 - 2.0 * G / 2.0), ls="--", c="gray", label="Ott-Antonsen, K = 2")
    a1.set_xlabel("time")
    a1.set_ylabel("order parameter r")
    a1.legend()
    th = results[2.0][0]
    a2.scatter(np.cos(th), np.sin(th), s=2, alpha=0.4, c=omega, cmap="coolwarm", vmin=-2, vmax=2)
    a2.set_aspect("equal")
    a2.set_title("phases at the end, K = 2 (colour: natural frequency)")
    fig.tight_layout()
    path = os.path.join(OUT, "kuramoto.png")
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
