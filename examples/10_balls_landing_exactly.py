"""Page 002's 256 balls with drag, each stopped exactly where it lands, and the derivative of
their mean range with respect to drag including the landing time.

Page 002 stops each ball at the end of the step in which it went below the ground, and its
gradient holds each ball's landing step fixed ("the landing step is a switch"). Here the same
flight (the page's launch speeds, angles and headings from jax.random, dt = 0.02, cd =
0.004) runs with ``eagle.simulate``:

1. ``events="step"``: the page's loop; the mean range is the page's 67.477918 m;
2. ``events="refine", record=True``: every ball is moved back inside its last step to the
   instant its height crosses zero (Newton on the step's tangent in dt; docs/runtime.md,
   "Stops located inside the step"), so every ball ends on the ground, and
   ``eagle.diff.reverse`` gives d(mean range)/d(cd) with the landing time's part (implicit
   function theorem), checked against central differences of the refined ranges: -3655.73 m
   (the mean range is 67.325791 m, every ball at |z| <= 1e-16 m, in the same 331 launches);
3. the page's slope, with each landing step held, is the recorded ``events="step"`` run's:
   -2759.4 m as the page prints;
4. writes ``landing.png``: the last step of 12 balls (where the step ends below ground and
   where the crossing is) and the mean range against cd with both slopes.

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 10_balls_landing_exactly.py
"""

import os
import tempfile

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import eagle
import eagle.diff
import hawk
from hawk import Mutable, Param, Scalar, Terminated, Vector
from hawk.math import norm, vec

jax.config.update("jax_enable_x64", True)

OUT = os.environ.get("RAPTOR_EXAMPLES_OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)

N, STEPS, DT, G, CD = 256, 360, 0.02, 9.81, 0.004


@hawk.kernel(steps=1, time="t", time_step="dt")
def flight(cd: Param, dt: Param, g: Param, terminated: Terminated, r: Mutable[Vector[3]], v: Mutable[Vector[3]],
           t: Mutable[Scalar]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v  # page 002's flight, its state updated in place
    v = v + dt * a
    r = r + dt * v
    t = t + dt
    terminated = r[2] < 0.0


# The page's balls.
k = jax.random.split(jax.random.key(0), 3)
speed = np.asarray(20 + 20 * jax.random.uniform(k[0], (N,)))
elevation = np.asarray(np.radians(20) + np.radians(50) * jax.random.uniform(k[1], (N,)))
heading = np.asarray(2 * np.pi * jax.random.uniform(k[2], (N,)))
V0 = np.stack([speed * np.cos(elevation) * np.cos(heading), speed * np.cos(elevation) * np.sin(heading),
               speed * np.sin(elevation)])
R0 = np.zeros((3, N))
R0[2] = 1.0


def fly(cd, events, record=False):
    res = eagle.simulate(flight, cd=cd, dt=DT, g=G, r=R0.copy(), v=V0.copy(), t=np.zeros(N), max_steps=STEPS,
                         events=events, record=record)
    assert res.done
    return res, np.hypot(res.r[0], res.r[1])


def slope(res, ranges):
    """d(mean range)/d(cd) by the reverse sweep of a recorded run."""
    seed = np.stack([res.r[0] / ranges, res.r[1] / ranges, np.zeros(N)]) / N
    return float(eagle.diff.reverse(res.record, {"r": seed})["flight.cd"])


# 1. the page's loop
step, step_ranges = fly(CD, "step", record=True)
print(f"events='step':   mean range {step_ranges.mean():.6f} m (page 002: 67.477918 m), "
      f"lowest ball at z = {step.r[2].min():.3f} m")
assert abs(step_ranges.mean() - 67.477918) < 1e-6

# 2. every ball stopped where it lands
exact, ranges = fly(CD, "refine", record=True)
print(f"events='refine': mean range {ranges.mean():.6f} m, |z| at landing <= {np.abs(exact.r[2]).max():.1e} m, "
      f"landing times {exact.t_stop.min():.4f} .. {exact.t_stop.max():.4f} s, same {exact.steps} launches")
assert np.abs(exact.r[2]).max() < 1e-12 and exact.steps == step.steps

with_event = slope(exact, ranges)
h = 1e-7
fd = (fly(CD + h, "refine")[1].mean() - fly(CD - h, "refine")[1].mean()) / (2 * h)
print(f"d range / d cd with the landing time: {with_event:.4f} m (central differences of the refined ranges: {fd:.4f})")
assert abs(with_event - fd) < 1e-6 * abs(fd)

# 3. the page's slope: landing steps held
held = slope(step, step_ranges)
print(f"d range / d cd with each landing step held (page 002: -2759.4 m): {held:.1f} m")
assert abs(held - (-2759.4)) < 0.05

# 4. the plot
fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
# The record keeps each refinement (by launch): the samples it moved and the state their last
# step started from.
refinements = [ref for launch in exact.record.events.values() for _node, _model, ref in launch]
for i, colour in zip(range(12), plt.cm.viridis(np.linspace(0, 1, 12))):
    (ref,) = [r for r in refinements if i in r.idx.tolist()]
    j = ref.idx.tolist().index(i)
    r_start = ref.start["r"][:, j]
    x0 = np.hypot(r_start[0], r_start[1])
    ax.plot([x0, step_ranges[i]], [r_start[2], step.r[2, i]], color=colour, lw=1.2)
    ax.plot(step_ranges[i], step.r[2, i], "x", color=colour)
    ax.plot(ranges[i], exact.r[2, i], "o", color=colour, ms=4)
ax.axhline(0.0, color="0.5", lw=0.8)
ax.set(xlabel="range (m)", ylabel="height (m)", title="last step of 12 balls: x step end, o landing")
cds = np.linspace(0.002, 0.006, 9)
means = [fly(c, "refine")[1].mean() for c in cds]
bx.plot(cds, means, "k.-", label="mean range (landing exactly)")
span = np.array([CD - 0.0012, CD + 0.0012])
bx.plot(span, ranges.mean() + with_event * (span - CD), color="C0", label=f"slope with landing time {with_event:.0f} m")
bx.plot(span, ranges.mean() + held * (span - CD), color="C3", ls="--", label=f"slope, landing step held {held:.0f} m")
bx.set(xlabel="drag cd", ylabel="mean range (m)", title="d range / d cd")
bx.legend(fontsize=8)
plt.tight_layout()
path = os.path.join(OUT, "landing.png")
fig.savefig(path, dpi=110)
print("wrote", path)
