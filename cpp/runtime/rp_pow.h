/* raptor's own pow on the host (docs/language.md "hawk.math"; the kernel language's x ** y for a
 * y that is not a constant integer): fdlibm's e_pow.c (Sun Microsystems, 1993) restated
 * branch-free, so a sample loop around it vectorizes, within an ulp of the exact value, the same
 * bits wherever it runs. The generated host code pastes this file into the units whose kernels
 * call pow (codegen/host_driver, after rp_math.h, whose helpers it uses); the IR interpreter and
 * the fold pass (passes/eval.cpp) include it, so a compiled kernel equals the interpreter bit for
 * bit. Host code only: the CUDA emitter's pow is CUDA's own. Tests:
 * cpp/tests/test_runtime_math.cpp. Start at rp_math_pow. */
#ifndef RAPTOR_POW_H
#define RAPTOR_POW_H

#ifndef RAPTOR_MATH_H
#include "rp_math.h"
#endif

/* log2(a) = t1 + t2 for a finite a > 0, to about 2^-64 relative, t1 of 21 significant bits
 * (e_pow.c's first part). a = 2^n m (rp_log_reduce, a subnormal a scaled by 2^53 first), m
 * moved into [sqrt(3)/2, sqrt(3)) by doubling it below sqrt(3)/2; b = 1.5 where m is at or above
 * sqrt(3/2), else 1; s = (m - b) / (m + b) = s_h + s_l (s_h 21 bits, s_l from the exact
 * remainder); log2(m) = log2(b) + (2 / (3 ln2)) (3 s + s^3 + 3 s^5 R(s^2)), each product formed
 * in parts of 21 bits so that its leading part is exact. */
RP_MATH_FN void rp_pow_log2(double a, double& t1, double& t2) {
  const bool sub = a < 0x1p-1022;
  const rp_log_parts p = rp_log_reduce(sub ? a * 0x1p53 : a);
  const bool low = p.m < 0x1.bb67ae8584caap-1;  // sqrt(3) / 2
  const double m = low ? 2.0 * p.m : p.m;
  const double n = (low ? p.k - 1.0 : p.k) - (sub ? 53.0 : 0.0);
  const bool k1 = m >= 0x1.3988e1409212ep+0;  // sqrt(3/2)
  const double b = k1 ? 1.5 : 1.0;
  const double dp_h = k1 ? 0x1.2b80340000000p-1 : 0.0;  // log2(1.5) = dp_h + dp_l
  const double dp_l = k1 ? 0x1.cfdeb43cfd006p-27 : 0.0;
  const double u = m - b;  // exact (Sterbenz)
  const double v = 1.0 / (m + b);
  const double ss = u * v;
  const double s_h = rp_math_high(ss);
  const double t_h = rp_math_high(m + b);
  const double t_l = m - (t_h - b);  // m + b = t_h + t_l exactly
  const double s_l = v * ((u - s_h * t_h) - s_h * t_l);
  double s2 = ss * ss;
  double r = s2 * s2 *
             (0x1.3333333333303p-1 +
              s2 * (0x1.b6db6db6fabffp-2 +
                    s2 * (0x1.55555518f264dp-2 +
                          s2 * (0x1.17460a91d4101p-2 +
                                s2 * (0x1.d864a93c9db65p-3 + s2 * 0x1.a7e284a454eefp-3)))));
  r += s_l * (s_h + ss);
  s2 = s_h * s_h;
  const double th = rp_math_high(3.0 + s2 + r);
  const double tl = r - ((th - 3.0) - s2);
  const double uu = s_h * th;  // (s_h + s_l)(th + tl) = uu + vv
  const double vv = s_l * th + tl * ss;
  const double ph = rp_math_high(uu + vv);
  const double pl = vv - (ph - uu);
  // times 2 / (3 ln2) = cp = cp_h + cp_l
  const double cp = 0x1.ec709dc3a03fdp-1, cp_h = 0x1.ec709e0000000p-1,
               cp_l = -0x1.e2fe0145b01f5p-28;
  const double z_h = cp_h * ph;
  const double z_l = cp_l * ph + pl * cp + dp_l;
  t1 = rp_math_high(((z_h + z_l) + dp_h) + n);
  t2 = z_l - (((t1 - n) - dp_h) - z_h);
}

/* |x|^y = 2^z for a finite a = |x| > 0 and a finite y, |y| <= 2^64, in double: z = y log2(a)
 * formed as p_h + p_l (y split into 21 bits and the rest, times rp_pow_log2's parts: p_h exact),
 * 2^z = 2^k exp((z - k) ln2) with k the integer nearest z, exp by e_exp.c's rational form with
 * the second part of (z - k) ln2 carried and 1 + zz - r rounded once, times 2^k in two factors
 * (rp_math_scale: a subnormal result rounds once). z above 1024 gives +inf, below -1076 0. */
RP_MATH_FN double rp_pow_core(double a, double y) {
  double t1, t2;
  rp_pow_log2(a, t1, t2);
  const double y1 = rp_math_high(y);
  const double p_l0 = (y - y1) * t1 + y * t2;
  const double p_h0 = y1 * t1;  // exact
  const double z0 = p_l0 + p_h0;
  // beyond these 2^z overflows or rounds to 0; within, k is in [-1076, 1024] and 2^k e rounds
  // to +inf, a subnormal or 0 by itself (the lanes beyond compute something unselected)
  const bool over = z0 > 1024.0, under = z0 < -1076.0;
  const double k = (z0 + 0x1.8p52) - 0x1.8p52;  // the integer nearest z
  const double p_h = p_h0 - k;                  // exact
  const double t = rp_math_high(p_l0 + p_h);
  // (z - k) ln2 = zz + w, t ln2_h exact
  const double lg2 = 0x1.62e42fefa39efp-1, lg2_h = 0x1.62e4300000000p-1,
               lg2_l = -0x1.05c610ca86c39p-29;
  const double uu = t * lg2_h;
  const double vv = (p_l0 - (t - p_h)) * lg2 + t * lg2_l;
  const double zz = uu + vv;
  const double w = vv - (zz - uu);
  const double tt = zz * zz;
  const double c =
      zz - tt * (0x1.555555555553ep-3 +
                 tt * (-0x1.6c16c16bebd93p-9 +
                       tt * (0x1.1566aaf25de2cp-14 +
                             tt * (-0x1.bbd41c5d26bf1p-20 + tt * 0x1.6376972bea4d0p-25))));
  const double r = (zz * c) / (c - 2.0) - (w + zz * w);
  // 1 + zz - r with one rounding of note: 1 + zz = s + es exactly (e_pow.c's 1 - (r - zz)
  // rounds r - zz too, up to 0.13 ulp more)
  double es;
  const double s = rp_two_sum(1.0, zz, es);
  const double e = s + (es - r);
  const double scaled = rp_math_scale(e, k);  // computed first: work inside a select's arm
  return over ? rp_math_inf() : (under ? 0.0 : scaled);  // would leave control flow
}

/* pow(x, y) from mag = |x|^y (the core's value for a finite x != 0 and a finite y clamped to
 * +-2^64; anything where those fail), C99 Annex F's values on the special arguments (glibc's
 * bits): y = +-0 or x = 1 give 1 (a NaN too); otherwise a NaN gives NaN; x < 0 with a y that is
 * not an integer NaN; x = +-0 or +-inf give 0 or +inf by the signs, -0 and -inf keep their sign
 * for an odd integer y; the sign negative for x < 0 and an odd integer y. */
RP_MATH_FN double rp_pow_select(double x, double y, double mag) {
  const double inf = rp_math_inf();
  const double ax = x < 0.0 ? -x : x;
  const double ay = y < 0.0 ? -y : y;
  // y an integer (every |y| >= 2^52 is), and an odd one: |y| / 2 an integer and a half (|y| <
  // 2^53; its distance to the integer nearest squared, as GCC 12 does not vectorize the & of
  // two such tests here)
  const double shift = 0x1p52;
  const double ayc = ay < shift ? ay : shift;  // NaN gives 2^52, unselected below
  const bool y_int = ((ayc + shift) - shift) == ayc;
  const double hy = ay < 0x1p53 ? 0.5 * ay : shift;
  const double hd = ((hy + shift) - shift) - hy;
  const bool y_odd = hd * hd == 0.25;
  // x = +-0 or +-inf: 0 or +inf by the signs of y and of log|x|
  const double edge = (ax == 0.0) == (y < 0.0) ? inf : 0.0;
  const bool x_edge = (ax == 0.0) | (ax == inf);
  const double m1 = x_edge ? edge : mag;
  // the sign: x's sign bit for an odd integer y (-0 and -inf too)
  // (a select of doubles: GCC 12 does not vectorize one of integers under a double's mask)
  const double sign_of = y_odd ? x : 1.0;
  uint64_t bs, bm;
  RP_F64_TO_BITS(bs, sign_of);
  RP_F64_TO_BITS(bm, m1);
  bm |= bs & 0x8000000000000000ull;
  double v;
  RP_F64_FROM_BITS(v, bm);
  // x < 0 (finite, not zero) with a y that is not an integer: NaN; a NaN argument: NaN
  const uint64_t nan_bits = 0xFFF8000000000000ull;  // x86's default NaN, glibc's (x - x) / (x - x)
  double nan_v;
  RP_F64_FROM_BITS(nan_v, nan_bits);
  const double m2 = ((x < 0.0) & !x_edge & !y_int) ? nan_v : v;
  const double m3 = ((x != x) | (y != y)) ? x + y : m2;
  return ((y == 0.0) | (x == 1.0)) ? 1.0 : m3;
}

/* pow(x, y) in double: rp_pow_core of |x| and y clamped to +-2^64 (any |x| other than 1
 * overflows or underflows from there on), then rp_pow_select. Measured within 0.66 ulp for
 * normal results (0.75 for subnormal ones, which round twice) over 1.2e7 random pairs
 * (cpp/tests/test_runtime_math.cpp); integer powers of integers exact where representable. */
RP_MATH_FN double rp_math_pow(double x, double y) {
  const double ax = x < 0.0 ? -x : x;
  const double yc = y > 0x1p64 ? 0x1p64 : (y < -0x1p64 ? -0x1p64 : y);
  return rp_pow_select(x, y, rp_pow_core(ax, yc));
}

/* pow(x, y) in float: exp(y log|x|) in double (rp_math_exp, rp_log_f64: |y log|x|| is below 104
 * wherever the float result is neither 0 nor +inf, so the double value is within 2^-44 of the
 * exact one, relative), rounded once to float; rp_pow_select's special values. */
RP_MATH_FN float rp_math_pow(float x, float y) {
  const double xd = static_cast<double>(x), yd = static_cast<double>(y);
  const double ax = xd < 0.0 ? -xd : xd;  // a float's magnitude: normal in double
  const double yc = yd > 0x1p64 ? 0x1p64 : (yd < -0x1p64 ? -0x1p64 : yd);
  return static_cast<float>(rp_pow_select(xd, yd, rp_math_exp(yc * rp_log_f64(ax))));
}

#endif /* RAPTOR_POW_H */
