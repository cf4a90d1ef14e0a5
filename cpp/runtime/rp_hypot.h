/* raptor's own hypot on the host (docs/language.md "hawk.math"): sqrt(x^2 + y^2) without undue
 * overflow or underflow, branch-free, so a sample loop around it vectorizes, correctly rounded
 * but for the rarest ties (within 0.51 ulp measured), the same bits wherever it runs. The
 * generated host code pastes this file into the units whose kernels call hypot
 * (codegen/host_driver, after rp_math.h); the IR interpreter and the fold pass (ir/math_fns.hpp)
 * include it, so a compiled kernel equals the interpreter bit for bit. Host code only: the CUDA
 * emitter's hypot is CUDA's own. Tests: cpp/tests/test_runtime_math.cpp. Start at
 * rp_math_hypot. */
#ifndef RAPTOR_HYPOT_H
#define RAPTOR_HYPOT_H

#ifndef RAPTOR_MATH_H
#include "rp_math.h"
#endif

/* hypot(x, y) in double. With a = max(|x|, |y|) and b = min(|x|, |y|), both scaled by a power of
 * two that brings a into [2^-500, 2^500] (exact, unless b then underflows, where b^2 is below
 * a^2 2^-1000 and cannot matter): S = a^2 + b^2 held exactly as s + l (two exact products,
 * rp_two_prod, and a TwoSum), h = sqrt(s), corrected by (S - h^2) / (2h) with h^2 split exactly, so
 * the one rounding left is the last addition's; scaled back (a subnormal result rounds there a
 * second time). +-inf in either argument gives +inf (a NaN in the other too), a NaN otherwise NaN,
 * hypot(+-0, +-0) = +0: C99 Annex F, glibc's bits. */
RP_MATH_FN double rp_math_hypot(double x, double y) {
  const double ax = x < 0.0 ? -x : x, ay = y < 0.0 ? -y : y;
  const bool xy = ax >= ay;
  const double big = xy ? ax : ay, small = xy ? ay : ax;
  const double down = big > 0x1p500 ? 0x1p-600 : (big < 0x1p-500 ? 0x1p600 : 1.0);
  const double up = big > 0x1p500 ? 0x1p600 : (big < 0x1p-500 ? 0x1p-600 : 1.0);
  const double a = big * down, b = small * down;
  double ea, eb, es;
  const double pa = rp_two_prod(a, a, ea);
  const double pb = rp_two_prod(b, b, eb);
  const double s = rp_two_sum(pa, pb, es);
  const double l = (ea + eb) + es;
  const double h = rp_math_sqrt(s);
  double eh;
  const double hh = rp_two_prod(h, h, eh);
  const double corr = (((s - hh) - eh) + l) / (2.0 * h);  // s - hh exact (Sterbenz)
  const double v = (h + corr) * up;
  const double inf = rp_math_inf();
  const double finite = big == 0.0 ? 0.0 : v;  // 0 / 0 in corr otherwise
  const double nan_or = ((x != x) | (y != y)) ? x + y : finite;
  return ((ax == inf) | (ay == inf)) ? inf : nan_or;
}

/* The float version: sqrt(x^2 + y^2) in double (the squares exact, their sum rounded once, no
 * overflow or underflow), rounded once to float: within half an ulp and a hair. */
RP_MATH_FN float rp_math_hypot(float x, float y) {
  const double xd = static_cast<double>(x), yd = static_cast<double>(y);
  const double v = static_cast<double>(static_cast<float>(rp_math_sqrt(xd * xd + yd * yd)));
  const double inf = rp_math_inf();
  const double ax = xd < 0.0 ? -xd : xd, ay = yd < 0.0 ? -yd : yd;
  const double nan_or = ((xd != xd) | (yd != yd)) ? xd + yd : v;
  return static_cast<float>(((ax == inf) | (ay == inf)) ? inf : nan_or);
}

#endif /* RAPTOR_HYPOT_H */
