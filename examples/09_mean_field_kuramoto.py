"""Mean-field coupling with sums over samples: 4096 Kuramoto oscillators synchronizing.

Each oscillator i has a phase theta_i and a natural frequency omega_i (Lorentzian, width g);
it is pulled toward the ensemble's mean phase by the order parameter
r exp(i psi) = mean_j exp(i theta_j):

    dtheta_i / dt = omega_i + K r sin(psi - theta_i) = omega_i + K (S cos theta_i - C sin theta_i),

with C = mean cos theta, S = mean sin theta. The mean is a reduction over the samples of the
launch, written in the stepping kernel as ``c = hawk.mean(cos(theta))`` into a
``Mutable[Param]`` output (docs/language.md "Sums over samples"): one value per launch, the
same bits whatever the thread count. The same body then reads c and s to step the phases: a
stage boundary (docs/language.md "Stage boundaries"). eagle runs the kernel as two stages
over every oscillator, the means first, then the step that reads them.

The script:

- runs 600 Euler steps (each launch: the means, then the step) for K below and above the
  critical coupling K_c = 2 g, and checks the stationary order parameter against the
  Ott-Antonsen value sqrt(1 - K_c / K) (and r small below K_c);
- runs the same steps in NumPy (np.mean, the same formula) and checks the phases agree;
- writes r(t) for both couplings and the final phases on the circle to ``kuramoto.png``;
- bins the final phases around the mean phase with a scatter-add into a shared table,
  ``hawk.scatter(hist)[bin] += 1.0`` (docs/language.md "Scatter-adds"), checks the histogram
  against ``np.add.at`` and plots it beside them.

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
import hawk.math as hm
from hawk import Mutable, Param, Scalar, Table
from hawk.math import cos, sin

OUT = os.environ.get("RAPTOR_EXAMPLES_OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)

N = 4096
G = 0.5  # Lorentzian half-width of the natural frequencies: K_c = 2 G = 1
DT = 0.05
STEPS = 600


@hawk.kernel
def step(omega: Scalar, k: Param, dt: Param, theta: Mutable[Scalar], c: Mutable[Param], s: Mutable[Param]):
    # the ensemble means of cos and sin over every oscillator of the launch (the phases this
    # step starts from), read back in the same body: a stage boundary
    c = hawk.mean(cos(theta))
    s = hawk.mean(sin(theta))
    theta = theta + dt * (omega + k * (s * cos(theta) - c * sin(theta)))


def run_raptor(k: float, theta0: np.ndarray, omega: np.ndarray, plan) -> tuple[np.ndarray, np.ndarray]:
    theta = theta0.copy()
    cs, ss = np.zeros(1), np.zeros(1)
    bound = plan.bind(omega=omega, k=k, dt=DT, theta=theta, c=cs, s=ss)
    r = np.empty(STEPS)
    for t in range(STEPS):
        bound.launch()  # the means (stage 1), then the step that reads them (stage 2)
        r[t] = np.hypot(cs[0], ss[0])
    return theta, r


def run_numpy(k: float, theta0: np.ndarray, omega: np.ndarray) -> np.ndarray:
    theta = theta0.copy()
    for _ in range(STEPS):
        c, s = np.mean(np.cos(theta)), np.mean(np.sin(theta))
        theta = theta + DT * (omega + k * (s * np.cos(theta) - c * np.sin(theta)))
    return theta


# ---- a histogram of the phases by scatter-adds (docs/language.md "Scatter-adds")
BINS = 48
PI = float(np.pi)
TWO_PI = 2.0 * PI


@hawk.kernel
def phase_histogram(theta: Scalar, psi: Param, hist: Mutable[Table[Scalar]]):
    # the phase from the mean phase psi, in [0, 2 pi), binned: many oscillators add into one bin
    b = min(hm.remainder(theta - psi + PI, TWO_PI) * (BINS / TWO_PI), BINS - 0.5)
    hawk.scatter(hist)[b] += 1.0


def histogram_of(theta: np.ndarray, plan) -> np.ndarray:
    """The oscillators per bin of phase around the mean phase, checked against np.add.at."""
    psi = float(np.arctan2(np.mean(np.sin(theta)), np.mean(np.cos(theta))))
    hist = np.zeros(BINS)
    plan.bind(theta=theta, psi=psi, hist=hist).launch()
    b = np.minimum(np.remainder(theta - psi + np.pi, TWO_PI) * (BINS / TWO_PI), BINS - 0.5)
    want = np.zeros(BINS)
    np.add.at(want, np.floor(b).astype(np.int64), 1.0)
    assert np.array_equal(hist, want) and hist.sum() == len(theta), (hist, want)
    return hist


def main() -> None:
    rng = np.random.default_rng(7)
    # deterministic Lorentzian quantiles (a smooth sample: the mean-field theory's limit)
    u = (np.arange(N) + 0.5) / N
    omega = G * np.tan(np.pi * (u - 0.5))
    rng.shuffle(omega)
    theta0 = rng.uniform(-np.pi, np.pi, N)
    (plan,) = eagle.plan.auto([step], targets=("host",))

    results = {}
    for k in (0.6, 2.0):
        theta, r = run_raptor(k, theta0, omega, plan)
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

    (hplan,) = eagle.plan.auto([phase_histogram], targets=("host",))
    hists = {k: histogram_of(theta, hplan) for k, (theta, _) in results.items()}
    print(f"phase histograms ({BINS} bins) equal np.add.at; K = 2: {hists[2.0].max():.0f} oscillators in the fullest bin")

    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(15, 4))
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
    centers = (np.arange(BINS) + 0.5) * TWO_PI / BINS - np.pi
    for k, h in hists.items():
        a3.step(centers, h, where="mid", label=f"K = {k}")
    a3.set_xlabel("phase - mean phase")
    a3.set_ylabel("oscillators per bin (hawk.scatter)")
    a3.legend()
    fig.tight_layout()
    path = os.path.join(OUT, "kuramoto.png")
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
