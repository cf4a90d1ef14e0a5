/* raptor's own inverse trigonometric functions on the host (docs/language.md "hawk.math"): atan,
 * atan2, asin and acos, fdlibm's s_atan.c, e_atan2.c, e_asin.c and e_acos.c (Sun Microsystems,
 * 1993) restated branch-free, so a sample loop around them vectorizes (x86-64-v3 and up), within
 * an ulp of the exact value, the same bits wherever they run. atan2 is more accurate than
 * fdlibm's (1.5 ulps): its quotient's rounding is carried into atan's last rounding, and x < 0
 * with |y| >= |x| is pi/2 + atan(|x / y|). The generated host code pastes this file into the
 * units whose kernels call one of them (codegen/host_driver, after rp_math.h, whose helpers it
 * uses); the IR interpreter and the fold pass (ir/math_fns.hpp, passes/eval.cpp) include it, so
 * a compiled kernel equals the interpreter bit for bit. Host code only: the CUDA emitter's are
 * CUDA's own. Tests: cpp/tests/test_runtime_math.cpp. Start at rp_math_atan2. */
#ifndef RAPTOR_ATAN_H
#define RAPTOR_ATAN_H

#ifndef RAPTOR_MATH_H
#include "rp_math.h"
#endif

/* atan(a) + corr for a >= 0 and a small corr (atan2's first-order correction for the rounding
 * of its quotient, 0 for atan): fdlibm's s_atan.c (Sun Microsystems, 1993) branch-free. Below
 * 7/16 its polynomial of a; above, atan(h) + atan(t) with (h, t) = (1/2, (2a - 1) / (2 + a))
 * below 11/16, (1, (a - 1) / (a + 1)) below 19/16, (3/2, (a - 1.5) / (1 + 1.5a)) below 39/16
 * and (inf, -1 / a) above, atan(h) = hi + lo: each form's operands selected, one division;
 * corr joins the small terms before the last rounding. */
RP_MATH_FN double rp_atan_pos(double a, double corr) {
  const bool r0 = a < 0.6875, r1 = a < 1.1875, r2 = a < 2.4375;
  const double num = r0 ? 2.0 * a - 1.0 : (r1 ? a - 1.0 : (r2 ? a - 1.5 : -1.0));
  const double den = r0 ? 2.0 + a : (r1 ? a + 1.0 : (r2 ? 1.0 + 1.5 * a : a));
  const double hi =
      r0 ? 0x1.dac670561bb4fp-2
         : (r1 ? 0x1.921fb54442d18p-1 : (r2 ? 0x1.f730bd281f69bp-1 : 0x1.921fb54442d18p+0));
  const double lo =
      r0 ? 0x1.a2b7f222f65e2p-56
         : (r1 ? 0x1.1a62633145c07p-55 : (r2 ? 0x1.007887af0cbbdp-56 : 0x1.1a62633145c07p-54));
  const bool near = a < 0.4375;
  const double t = near ? a : num / den;
  const double z = t * t, w = z * z;
  const double s1 = z * (0x1.555555555550dp-2 +
                         w * (0x1.24924920083ffp-3 +
                              w * (0x1.745cdc54c206ep-4 +
                                   w * (0x1.10d66a0d03d51p-4 +
                                        w * (0x1.97b4b24760debp-5 + w * 0x1.0ad3ae322da11p-6)))));
  const double s2 =
      w *
      (-0x1.999999998ebc4p-3 +
       w * (-0x1.c71c6fe231671p-4 +
            w * (-0x1.3b0f2af749a6dp-4 + w * (-0x1.dde2d52defd9ap-5 + w * -0x1.2b4442c6a6c2fp-5))));
  const double at_near = a - (a * (s1 + s2) - corr);
  const double at_far = hi - ((t * (s1 + s2) - (lo + corr)) - t);
  const double v = near ? at_near : at_far;
  return a < 0x1p-27 ? a + corr : v;
}

/* atan(x) in double: rp_atan_pos of |x| with x's sign (odd; +-0 gives +-0), +-inf +-pi/2,
 * NaN NaN. Measured within 0.84 ulp (glibc's: 0.52) over 4e6 random arguments. */
RP_MATH_FN double rp_math_atan(double x) {
  const double a = x < 0.0 ? -x : x;
  const double r = rp_atan_pos(a, 0.0);
  // r >= 0: x's sign bit onto it (odd; -0 gives -0)
  uint64_t bx, br;
  RP_F64_TO_BITS(bx, x);
  RP_F64_TO_BITS(br, r);
  br |= bx & 0x8000000000000000ull;
  double out;
  RP_F64_FROM_BITS(out, br);
  return x != x ? x : out;
}

/* atan2(y, x) in double: fdlibm's e_atan2.c branch-free, more accurate. w = atan(|y / x|), or
 * for x < 0 and |y| >= |x| pi/2 + atan(|x / y|) (fdlibm's pi - atan(|y / x|) there lost up to
 * 1.5 ulp), with the quotient's rounding carried (rp_math_div_residual) into rp_atan_pos's last
 * rounding; pi - w for x < 0 otherwise; y's sign. Zeros, infinities and NaNs as C99 Annex F
 * (glibc's bits on each). Measured within 0.84 ulp (glibc's: 0.52) over 4e6 random pairs. */
RP_MATH_FN double rp_math_atan2(double y, double x) {
  const double pi = 0x1.921fb54442d18p+1, pi_lo = 0x1.1a62633145c07p-53;
  const double pi_2 = 0x1.921fb54442d18p+0, pi_4 = 0x1.921fb54442d18p-1;
  uint64_t bx, by;
  RP_F64_TO_BITS(bx, x);
  RP_F64_TO_BITS(by, y);
  const bool nx = (bx >> 63) != 0;
  const double ax = x < 0.0 ? -x : x, ay = y < 0.0 ? -y : y;
  // x < 0 and |y| >= |x|: pi/2 + atan(|x / y|), whose atan (at most pi/4) is then small
  // beside the result; otherwise atan(|y / x|), and pi minus it for x < 0
  const bool swap = nx & (ay >= ax);
  const double n = swap ? ax : ay, d = swap ? ay : ax;
  const double q = n / d;
  // atan(n / d) = atan(q) + r / (d (1 + q^2)) to first order in r = n - q d (exact)
  const double w = rp_atan_pos(q, rp_math_div_residual(q, d, n) / (d + q * n));
  const double z = nx ? (swap ? pi_2 + (w + 0.5 * pi_lo) : pi - (w - pi_lo)) : w;
  // |y / x| above 2^60 (the exponents' difference, fdlibm's k): pi/2; below 2^-60 with x < 0:
  // pi (fdlibm's cut-offs, where q and its correction would overflow or underflow; either side
  // of them the result rounds the same)
  const int32_t k = static_cast<int32_t>(static_cast<uint32_t>((by >> 32) & 0x7FFFFFFFu) -
                                         static_cast<uint32_t>((bx >> 32) & 0x7FFFFFFFu)) >>
                    20;
  const double zk = k > 60 ? pi_2 : ((nx & (k < -60)) ? pi : z);
  // atan2 is odd in y (zeros and infinities too): its magnitude here, y's sign bit below.
  // x = +-inf: y infinite pi/4 or 3pi/4, else 0 or pi; y = +-0: 0 or pi; x = +-0 or y = +-inf:
  // pi/2
  const double inf = rp_math_inf();
  const bool xinf = ax == inf, yinf = ay == inf;
  const double by_x = nx ? pi : 0.0;
  const double both_inf = nx ? 0x1.2d97c7f3321d2p+1 : pi_4;
  const double m0 = (ax == 0.0) ? pi_2 : zk;
  const double m1 = yinf ? pi_2 : m0;
  const double m2 = (ay == 0.0) ? by_x : m1;
  const double m3 = xinf ? (yinf ? both_inf : by_x) : m2;
  uint64_t bm;
  RP_F64_TO_BITS(bm, m3);
  bm |= by & 0x8000000000000000ull;
  double v;
  RP_F64_FROM_BITS(v, bm);
  return ((x != x) | (y != y)) ? x + y : v;
}

/* fdlibm's R(t) = p(t) / q(t) of e_asin.c and e_acos.c: asin(v) = v + v R(v^2) for |v| <= 0.5. */
RP_MATH_FN double rp_asin_r(double t) {
  const double p = t * (0x1.5555555555555p-3 +
                        t * (-0x1.4d61203eb6f7dp-2 +
                             t * (0x1.9c1550e884455p-3 +
                                  t * (-0x1.48228b5688f3bp-5 +
                                       t * (0x1.9efe07501b288p-11 + t * 0x1.23de10dfdf709p-15)))));
  const double q =
      1.0 +
      t * (-0x1.33a271c8a2d4bp+1 +
           t * (0x1.02ae59c598ac8p+1 + t * (-0x1.6066c1b8d0159p-1 + t * 0x1.3b8c5b12e9282p-4)));
  return p / q;
}

/* What asin and acos share (e_asin.c's and e_acos.c's forms): t = x^2 below |x| = 0.5,
 * (1 - |x|) / 2 above (exact there), R(t), s = sqrt(t), s's high part f and c = (t - f^2) /
 * (s + f), so that f + c = s to far more than 53 bits (0 / 0 at |x| = 1, where the callers
 * select other forms). */
struct rp_asin_parts {
  double ax, r, s, f, c;
  bool small;
};
RP_MATH_FN rp_asin_parts rp_asin_reduce(double x) {
  const double ax = x < 0.0 ? -x : x;
  const bool small = ax < 0.5;
  const double t = small ? x * x : (1.0 - ax) * 0.5;
  const double s = rp_math_sqrt(t);
  const double f = rp_math_high(s);
  return rp_asin_parts{ax, rp_asin_r(t), s, f, (t - f * f) / (s + f), small};
}

/* v where |x| <= 1; beyond, glibc's quiet NaN; a NaN x itself (quieted). */
RP_MATH_FN double rp_asin_domain(double x, double ax, double v) {
  const uint64_t nan_bits = 0x7FF8000000000000ull;
  double nan_v;
  RP_F64_FROM_BITS(nan_v, nan_bits);
  const double in_range = ax > 1.0 ? nan_v : v;
  return x != x ? x + x : in_range;
}

/* asin(x) in double: fdlibm's e_asin.c branch-free (rp_asin_reduce's parts). |x| < 0.5:
 * x + x R(x^2); above, pi/2 - 2 (s + s R(t)), below |x| = 0.975 with f + c for s; x's sign.
 * |x| > 1 gives NaN, +-1 +-pi/2, NaN NaN. */
RP_MATH_FN double rp_math_asin(double x) {
  const double pio2_hi = 0x1.921fb54442d18p+0, pio2_lo = 0x1.1a62633145c07p-54;
  const double pio4_hi = 0x1.921fb54442d18p-1;
  const rp_asin_parts p = rp_asin_reduce(x);
  const double at_small = x + x * p.r;
  const double far = pio2_hi - (2.0 * (p.s + p.s * p.r) - pio2_lo);
  const double mid = pio4_hi - ((2.0 * p.s * p.r - (pio2_lo - 2.0 * p.c)) - (pio4_hi - 2.0 * p.f));
  const double big = p.ax > 0x1.f3333p-1 ? far : mid;  // 0.975
  const double big_signed = x < 0.0 ? -big : big;
  const double v = p.small ? (p.ax < 0x1p-27 ? x : at_small) : big_signed;
  return rp_asin_domain(x, p.ax, v);
}

/* acos(x) in double: fdlibm's e_acos.c branch-free (rp_asin_reduce's parts). |x| < 0.5:
 * pi/2 - (x + x R(x^2)) with pi/2's low part; x < -0.5: pi - 2 (s + s R(t)); x > 0.5:
 * 2 (f + (s R(t) + c)). acos(1) = +0, acos(-1) = pi, |x| > 1 NaN, NaN NaN. */
RP_MATH_FN double rp_math_acos(double x) {
  const double pio2_hi = 0x1.921fb54442d18p+0, pio2_lo = 0x1.1a62633145c07p-54;
  const double pi = 0x1.921fb54442d18p+1;
  const rp_asin_parts p = rp_asin_reduce(x);
  const double at_small = pio2_hi - (x - (pio2_lo - x * p.r));
  const double at_neg = pi - 2.0 * (p.s + (p.r * p.s - pio2_lo));
  const double at_pos = 2.0 * (p.f + (p.r * p.s + p.c));
  const double big = x < 0.0 ? at_neg : (x == 1.0 ? 0.0 : at_pos);
  const double v = p.small ? at_small : big;
  return rp_asin_domain(x, p.ax, v);
}

/* The float versions: the double function of the float arguments, rounded once to float. */
RP_MATH_FN float rp_math_atan(float x) {
  return static_cast<float>(rp_math_atan(static_cast<double>(x)));
}
RP_MATH_FN float rp_math_atan2(float y, float x) {
  return static_cast<float>(rp_math_atan2(static_cast<double>(y), static_cast<double>(x)));
}

RP_MATH_FN float rp_math_asin(float x) {
  return static_cast<float>(rp_math_asin(static_cast<double>(x)));
}
RP_MATH_FN float rp_math_acos(float x) {
  return static_cast<float>(rp_math_acos(static_cast<double>(x)));
}

#endif /* RAPTOR_ATAN_H */
