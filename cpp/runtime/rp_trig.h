/* raptor's own sin, cos and tan on the host (docs/language.md "hawk.math"): branch-free, with an
 * exact range reduction for every argument, so a sample loop around them vectorizes (from x86-64-v3
 * on, where the table reads below are gathers and the fma an instruction), within an ulp of the
 * exact value, the same bits wherever they run. The generated host code pastes this file into
 * the units whose kernels call sin, cos or tan (codegen/host_driver, after rp_math.h, whose helpers
 * it uses); the IR interpreter and the fold pass (passes/eval.cpp) include it, so a compiled
 * kernel equals the interpreter bit for bit. Host code only: the CUDA emitter's sin, cos and tan
 * are CUDA's own. Tests: cpp/tests/test_runtime_math.cpp (accuracy), tests/test_math_numpy.py (the
 * tables, recomputed). Start at rp_math_sin. */
#ifndef RAPTOR_TRIG_H
#define RAPTOR_TRIG_H

#ifndef RAPTOR_MATH_H
#include "rp_math.h"
#endif

/* sin and cos in double.
 *
 * x = n pi/2 + r, |r| <= pi/4 (about), r as a double-double y0 + y1 accurate to far more than
 * 53 bits even where x is within 2^-60 of a multiple of pi/2; then fdlibm's kernels (k_sin.c,
 * k_cos.c) on r, picked by n mod 4. Two reductions, both computed for every argument and the
 * right one selected (no branch, so a sample loop around sin / cos vectorizes):
 * - |x| < 2^20 pi/2: Cody-Waite, n = rint(x 2/pi) < 2^20 and pi/2 in four parts (33, 33, 33
 *   and 53 bits: fdlibm's e_rem_pio2.c constants), each n P_i exact, the subtractions exact
 *   or their errors kept (TwoSum): about 150 bits of pi/2, always all four (fdlibm takes the
 *   later ones only when it sees cancellation);
 * - every finite x: Payne-Hanek in 32-bit integer limbs. x = M 2^E (M an integer of 53 bits);
 *   bits of 2/pi above weight 2^(1-E) give multiples of 4 (whole turns) and are skipped, the
 *   next 192 bits are read from rp_two_over_pi (an exponent-indexed window, a gather), their
 *   product with M formed exactly in the bits that matter (2 bits of n, 126 of the fraction),
 *   the fraction rounded to the nearest quadrant and times pi/2 in double-double (one fma).
 * Within an ulp of the exact value (cpp/tests/test_runtime_math.cpp checks against long
 * double). sin(+-0) = +-0, sin(+-inf) = cos(+-inf) = NaN, NaN in NaN out. */

/* 2/pi in 64-bit words, most significant first, after a zero word (the window of an x below
 * 2^54 starts before the binary point): 2176 bits, enough for the window of any 11-bit
 * exponent (the largest double's ends at bit 1224, in word 19). Computed from pi by Machin's
 * formula in exact integers; tests/test_math_numpy.py recomputes it. */
// clang-format off
static const uint64_t rp_two_over_pi[35] = {
    0x0000000000000000ull, 0xA2F9836E4E441529ull, 0xFC2757D1F534DDC0ull, 0xDB6295993C439041ull,
    0xFE5163ABDEBBC561ull, 0xB7246E3A424DD2E0ull, 0x06492EEA09D1921Cull, 0xFE1DEB1CB129A73Eull,
    0xE88235F52EBB4484ull, 0xE99C7026B45F7E41ull, 0x3991D639835339F4ull, 0x9C845F8BBDF9283Bull,
    0x1FF897FFDE05980Full, 0xEF2F118B5A0A6D1Full, 0x6D367ECF27CB09B7ull, 0x4F463F669E5FEA2Dull,
    0x7527BAC7EBE5F17Bull, 0x3D0739F78A5292EAull, 0x6BFB5FB11F8D5D08ull, 0x56033046FC7B6BABull,
    0xF0CFBC209AF4361Dull, 0xA9E391615EE61B08ull, 0x6599855F14A06840ull, 0x8DFFD8804D732731ull,
    0x06061556CA73A8C9ull, 0x60E27BC08C6B47C4ull, 0x19C367CDDCE8092Aull, 0x8359C4768B961CA6ull,
    0xDDAF44D15719053Eull, 0xA5FF07053F7E33E8ull, 0x32C2DE4F98327DBBull, 0xC33D26EF6B1E5EF8ull,
    0x9F3A1F35CAF27F1Dull, 0x87F121907C7C246Aull, 0xFA6ED5772D30433Bull,
};
// clang-format on

struct rp_trig_parts {
  double y0, y1;  // r = y0 + y1
  uint64_t n;     // quadrant: x = n pi/2 + r (mod 2 pi), n mod 4 meaningful
};

/* A 32-bit unsigned integer (in a uint64_t) as a double, from bits: (2^52 + u) - 2^52, exact.
 * GCC vectorizes that on every ISA; a conversion from a 64-bit integer needs AVX-512DQ. */
RP_MATH_FN double rp_u32_to_f64(uint64_t u) {
  const uint64_t b = u | 0x4330000000000000ull;
  double d;
  RP_F64_FROM_BITS(d, b);
  return d - 0x1p52;
}

/* Cody-Waite for |x| < 2^20 pi/2 (n below 2^20). */
RP_MATH_FN rp_trig_parts rp_trig_reduce_medium(double x) {
  const double shift = 0x1.8p52;
  const double t = x * 0x1.45f306dc9c883p-1 + shift;  // x 2/pi + 1.5 2^52: n in the low bits
  uint64_t tb;
  RP_F64_TO_BITS(tb, t);
  const double fn = t - shift;
  const double r = x - fn * 0x1.921fb544p0;  // exact: fn P1 exact, then Sterbenz
  double e1, e2;
  const double s1 = rp_two_sum(r, -(fn * 0x1.0b4611a6p-34), e1);
  const double s2 = rp_two_sum(s1, -(fn * 0x1.3198a2ep-69), e2);
  const double tail = (e1 + e2) - fn * 0x1.b839a252049c1p-104;
  const double y0 = s2 + tail;
  return rp_trig_parts{y0, tail - (y0 - s2), tb};
}

/* Payne-Hanek for |x| (see above), |x| clamped to [2^20 pi/2, the largest double] first (the
 * caller selects the medium reduction below, NaN after): as a max and a min of x's bits, not
 * selects of constants, so GCC keeps one path (it would thread a select of a constant into a
 * path of its own and the table reads of the other into masked gathers, which it does not
 * vectorize). */
RP_MATH_FN rp_trig_parts rp_trig_reduce_large(double x) {
  uint64_t bits;
  RP_F64_TO_BITS(bits, x);
  const uint64_t least = 0x413921FB54442D18ull, most = 0x7FEFFFFFFFFFFFFFull;
  const uint64_t mag = bits & 0x7FFFFFFFFFFFFFFFull;
  const uint64_t at_least = mag < least ? least : mag;
  const uint64_t ix = at_least > most ? most : at_least;
  const uint64_t m = (ix & 0x000FFFFFFFFFFFFFull) | 0x0010000000000000ull;
  const uint64_t m0 = m & 0xFFFFFFFFu, m1 = m >> 32;
  // the window's first bit: 2/pi's bit E - 1 (weight 2^(1-E)); bit i is bit i + 63 of the table
  // (masked to 11 bits: every exponent's window lies inside the table, so GCC reads it with a
  // plain gather; only exponents 1043 .. 2046 reach here)
  const uint64_t g0 = ((ix >> 52) - 1013u) & 2047u;
  const uint64_t q = g0 >> 6, s = g0 & 63u;
  // the window in three 64-bit words, bits g0 .. g0 + 191, then in six 32-bit limbs w0 (least
  // significant) .. w5; written out, not as loops over arrays (GCC 12 leaves such loops rolled
  // in a large kernel, and their array stores keep the sample loop scalar)
  const uint64_t t0 = rp_two_over_pi[q], t1 = rp_two_over_pi[q + 1];
  const uint64_t t2 = rp_two_over_pi[q + 2], t3 = rp_two_over_pi[q + 3];
  const uint64_t inv = 63u - s;  // (t >> 1) >> (63 - s): t's top s bits, also for s = 0
  const uint64_t top_word = (t0 << s) | ((t1 >> 1) >> inv);
  const uint64_t mid_word = (t1 << s) | ((t2 >> 1) >> inv);
  const uint64_t low_word = (t2 << s) | ((t3 >> 1) >> inv);
  const uint64_t mask = 0xFFFFFFFFu;
  const uint64_t w5 = top_word >> 32, w4 = top_word & mask, w3 = mid_word >> 32;
  const uint64_t w2 = mid_word & mask, w1 = low_word >> 32, w0 = low_word & mask;
  // M w by 32-bit limbs; limb c (bits 32c .. 32c + 31) of the product, for c = 2 .. 5: the low
  // halves of m0 w_c and m1 w_(c-1), the high halves of m0 w_(c-1) and m1 w_(c-2), and the
  // carry. Limbs 0 and 1 are left out (their carry is at most 2 units of limb 2: 2^-125 of a
  // quadrant).
  const uint64_t m0w1 = m0 * w1, m0w2 = m0 * w2, m0w3 = m0 * w3, m0w4 = m0 * w4, m0w5 = m0 * w5;
  const uint64_t m1w0 = m1 * w0, m1w1 = m1 * w1, m1w2 = m1 * w2, m1w3 = m1 * w3, m1w4 = m1 * w4;
  const uint64_t c2 = (m0w2 & mask) + (m0w1 >> 32) + (m1w1 & mask) + (m1w0 >> 32);
  const uint64_t c3 = (m0w3 & mask) + (m0w2 >> 32) + (m1w2 & mask) + (m1w1 >> 32) + (c2 >> 32);
  const uint64_t c4 = (m0w4 & mask) + (m0w3 >> 32) + (m1w3 & mask) + (m1w2 >> 32) + (c3 >> 32);
  const uint64_t c5 = (m0w5 & mask) + (m0w4 >> 32) + (m1w4 & mask) + (m1w3 >> 32) + (c4 >> 32);
  const uint64_t limb2 = c2 & mask, limb3 = c3 & mask, limb4 = c4 & mask, limb5 = c5 & mask;
  // x 2/pi mod 4 = (limb 5's top 2 bits) + the fraction of the 126 bits below; rounded to the
  // nearest quadrant: a fraction of a half or more counts one more and becomes negative
  const uint64_t top = limb5;
  const uint64_t up = (top >> 29) & 1u;
  const double a0 = rp_u32_to_f64(top & 0x3FFFFFFFu) * 0x1p-30;
  const double a = up != 0u ? a0 - 1.0 : a0;  // exact
  const double b = rp_u32_to_f64(limb4) * 0x1p-62;
  const double c = rp_u32_to_f64(limb3) * 0x1p-94;
  const double d = rp_u32_to_f64(limb2) * 0x1p-126;
  double e1, e2;
  const double s1 = rp_two_sum(a, b, e1);
  const double s2 = rp_two_sum(s1, c, e2);
  const double lo = (e1 + e2) + d;
  const double f0 = s2 + lo;
  const double f1 = lo - (f0 - s2);
  // r = (f0 + f1) pi/2 in double-double
  const double ph = 0x1.921fb54442d18p0, pl = 0x1.1a62633145c07p-54;
  const double p = f0 * ph;
  const double pe = __builtin_fma(f0, ph, -p);
  const double r1 = pe + (f0 * pl + f1 * ph);
  const double y0 = p + r1;
  return rp_trig_parts{y0, r1 - (y0 - p), (top >> 30) + up};
}

/* fdlibm's kernels on |y0| <= pi/4 + a little, r = y0 + y1. */
RP_MATH_FN double rp_trig_sin_kernel(double x, double y) {
  const double z = x * x, v = z * x;
  const double r =
      0x1.111111110f8a6p-7 +
      z * (-0x1.a01a019c161d5p-13 +
           z * (0x1.71de357b1fe7dp-19 + z * (-0x1.ae5e68a2b9cebp-26 + z * 0x1.5d93a5acfd57cp-33)));
  return x - ((z * (0.5 * y - v * r) - y) - v * -0x1.5555555555549p-3);
}
RP_MATH_FN double rp_trig_cos_kernel(double x, double y) {
  const double z = x * x;
  const double r = z * (0x1.555555555554cp-5 +
                        z * (-0x1.6c16c16c15177p-10 +
                             z * (0x1.a01a019cb1590p-16 +
                                  z * (-0x1.27e4f809c52adp-22 +
                                       z * (0x1.1ee9ebdb4b1c4p-29 + z * -0x1.8fae9be8838d4p-37)))));
  // fdlibm's qx: 0 below |x| = 0.3, 0.28125 above 0.78125, else x / 4 with its low word cleared
  uint64_t ix;
  RP_F64_TO_BITS(ix, x);
  const uint64_t hx = (ix >> 32) & 0x7FFFFFFFu;
  const uint64_t qb = (hx - 0x00200000u) << 32;
  double qmid;
  RP_F64_FROM_BITS(qmid, qb);
  const double qhigh = hx > 0x3FE90000u ? 0.28125 : qmid;
  const double qx = hx < 0x3FD33333u ? 0.0 : qhigh;
  return (1.0 - qx) - ((0.5 * z - qx) - (z * r - x * y));
}

/* Both reductions, the right one selected; parts of |x| (x's sign applied by the caller).
 * Infinities and NaN give a NaN y0. */
RP_MATH_FN rp_trig_parts rp_trig_reduce(double x) {
  const double ax = x < 0.0 ? -x : x;
  const bool medium = ax < 0x1.921fb54442d18p20;
  const rp_trig_parts md = rp_trig_reduce_medium(medium ? ax : 0.0);
  const rp_trig_parts lg = rp_trig_reduce_large(x);
  const double y0 = medium ? md.y0 : lg.y0;
  const double y1 = medium ? md.y1 : lg.y1;
  const uint64_t n = medium ? md.n : lg.n;
  return rp_trig_parts{ax <= 0x1.fffffffffffffp1023 ? y0 : x - x, y1, n};  // inf, NaN: NaN
}

/* sin of x = n pi/2 + r from s = sin(r) and c = cos(r): s, c, -s or -c by n mod 4 (cos(x) is
 * this with n + 1). */
RP_MATH_FN double rp_trig_quadrant(double s, double c, uint64_t n) {
  const double v = (n & 1u) != 0u ? c : s;
  return (n & 2u) != 0u ? -v : v;
}

/* sin(x) in double. sin(-x) = -sin(x): the reduction of |x|, the sign applied last. */
RP_MATH_FN double rp_math_sin(double x) {
  const rp_trig_parts p = rp_trig_reduce(x);
  const double v =
      rp_trig_quadrant(rp_trig_sin_kernel(p.y0, p.y1), rp_trig_cos_kernel(p.y0, p.y1), p.n);
  const double ax = x < 0.0 ? -x : x;
  const double signed_v = x < 0.0 ? -v : v;
  return ax < 0x1p-27 ? x : signed_v;  // sin(x) rounds to x (and keeps -0)
}

/* cos(x) in double (even: the reduction of |x|). */
RP_MATH_FN double rp_math_cos(double x) {
  const rp_trig_parts p = rp_trig_reduce(x);
  return rp_trig_quadrant(rp_trig_sin_kernel(p.y0, p.y1), rp_trig_cos_kernel(p.y0, p.y1), p.n + 1u);
}

/* tan(r) for r = x + y, |x| <= pi/4 + a little, or -1 / tan(r) where `odd` (x = n pi/2 + r with n
 * odd): fdlibm's k_tan.c (FreeBSD's form) branch-free. Its polynomial of degree 27 in r; above
 * |x| = 0.6744 tan(pi/4 - r) instead, from 1 - 2 (t - t^2 / (1 + t)); -1 / (x + r) formed with
 * the quotient's low part carried. Each form computed, one selected. */
RP_MATH_FN double rp_trig_tan_kernel(double x, double y, bool odd) {
  const double ax = x < 0.0 ? -x : x;
  const bool big = ax >= 0x1.59428p-1;
  const double ys = x < 0.0 ? -y : y;  // (|x|, ys) = the sign of x taken off x + y
  const double xb = (0x1.921fb54442d18p-1 - ax) + (0x1.1a62633145c07p-55 - ys);
  const double x2 = big ? xb : x, y2 = big ? 0.0 : y;
  const double z = x2 * x2, w = z * z;
  const double r0 = 0x1.111111110fe7ap-3 +
                    w * (0x1.664f48406d637p-6 +
                         w * (0x1.d6d22c9560328p-9 +
                              w * (0x1.344d8f2f26501p-11 +
                                   w * (0x1.47e88a03792a6p-14 + w * -0x1.375cbdb605373p-16))));
  const double v0 = z * (0x1.ba1ba1bb341fep-5 +
                         w * (0x1.226e3e96e8493p-7 +
                              w * (0x1.7dbc8fee08315p-10 +
                                   w * (0x1.026f71a8d1068p-12 +
                                        w * (0x1.2b80f32f0a7e9p-14 + w * 0x1.b2a7074bf7ad4p-16)))));
  const double s = z * x2;
  const double r1 = y2 + z * (s * (r0 + v0) + y2);
  const double r = r1 + 0x1.5555555555563p-2 * s;
  const double t = x2 + r;  // tan of the (reflected) argument
  // |x| >= 0.6744: tan(pi/4 - x2) or its -1 / tan, x's sign
  const double v = odd ? -1.0 : 1.0;
  const double far = v - 2.0 * (x2 - (t * t / (t + v) - r));
  const double far_signed = x < 0.0 ? -far : far;
  // -1 / (x2 + r): a = -1 / t and its high part th, z + e = t exactly in two parts
  const double th = rp_math_high(t);
  const double e = r - (th - x2);
  const double a = -1.0 / t;
  const double ah = rp_math_high(a);
  const double inv = ah + a * ((1.0 + ah * th) + ah * e);
  const double near = odd ? inv : t;
  return big ? far_signed : near;
}

/* tan(x) in double: tan(-x) = -tan(x), the reduction of |x| (rp_trig_reduce), then
 * rp_trig_tan_kernel with n's parity; |x| < 2^-27 gives x (and keeps -0); +-inf and NaN NaN. */
RP_MATH_FN double rp_math_tan(double x) {
  const rp_trig_parts p = rp_trig_reduce(x);
  const double v = rp_trig_tan_kernel(p.y0, p.y1, (p.n & 1u) != 0u);
  const double ax = x < 0.0 ? -x : x;
  const double signed_v = x < 0.0 ? -v : v;
  return ax < 0x1p-27 ? x : signed_v;
}

/* sin and cos in float: computed in double, reduced in one way for every float. x = M 2^E
 * (M an integer below 2^24) times 2/pi is M c_E modulo 4, c_E = (2^E 2/pi) mod 4: three
 * doubles of 29 bits each per exponent (rp_two_over_pi_f32), so M times each is exact, 87
 * bits of c_E in all; n = the nearest integer, r = (the rest) pi/2. Then Taylor polynomials
 * of sin and cos on |r| <= pi/4 in double (errors below 2^-28), rounded once to float.
 * Within an ulp of every float (cpp/tests/test_runtime_math.cpp checks every 61st of them
 * against the double library; all 2^32 were checked when this was written). */

/* (2^E 2/pi) mod 4 for E = e - 150, e = 1 .. 254 the biased exponent of a normal float, row
 * e - 1: its top 29 bits, the next 29, the next 29 (truncated). Computed from pi by Machin's
 * formula in exact integers; tests/test_math_numpy.py recomputes it. */
// clang-format off
static const double rp_two_over_pi_f32[254 * 3] = {
    0x1.45f306d000000p-150, 0x1.9391054000000p-179, 0x1.4fe13ab000000p-208,
    0x1.45f306d000000p-149, 0x1.9391054000000p-178, 0x1.4fe13ab000000p-207,
    0x1.45f306d000000p-148, 0x1.9391054000000p-177, 0x1.4fe13ab000000p-206,
    0x1.45f306d000000p-147, 0x1.9391054000000p-176, 0x1.4fe13ab000000p-205,
    0x1.45f306d000000p-146, 0x1.9391054000000p-175, 0x1.4fe13ab000000p-204,
    0x1.45f306d000000p-145, 0x1.9391054000000p-174, 0x1.4fe13ab000000p-203,
    0x1.45f306d000000p-144, 0x1.9391054000000p-173, 0x1.4fe13ab000000p-202,
    0x1.45f306d000000p-143, 0x1.9391054000000p-172, 0x1.4fe13ab000000p-201,
    0x1.45f306d000000p-142, 0x1.9391054000000p-171, 0x1.4fe13ab000000p-200,
    0x1.45f306d000000p-141, 0x1.9391054000000p-170, 0x1.4fe13ab000000p-199,
    0x1.45f306d000000p-140, 0x1.9391054000000p-169, 0x1.4fe13ab000000p-198,
    0x1.45f306d000000p-139, 0x1.9391054000000p-168, 0x1.4fe13ab000000p-197,
    0x1.45f306d000000p-138, 0x1.9391054000000p-167, 0x1.4fe13ab000000p-196,
    0x1.45f306d000000p-137, 0x1.9391054000000p-166, 0x1.4fe13ab000000p-195,
    0x1.45f306d000000p-136, 0x1.9391054000000p-165, 0x1.4fe13ab000000p-194,
    0x1.45f306d000000p-135, 0x1.9391054000000p-164, 0x1.4fe13ab000000p-193,
    0x1.45f306d000000p-134, 0x1.9391054000000p-163, 0x1.4fe13ab000000p-192,
    0x1.45f306d000000p-133, 0x1.9391054000000p-162, 0x1.4fe13ab000000p-191,
    0x1.45f306d000000p-132, 0x1.9391054000000p-161, 0x1.4fe13ab000000p-190,
    0x1.45f306d000000p-131, 0x1.9391054000000p-160, 0x1.4fe13ab000000p-189,
    0x1.45f306d000000p-130, 0x1.9391054000000p-159, 0x1.4fe13ab000000p-188,
    0x1.45f306d000000p-129, 0x1.9391054000000p-158, 0x1.4fe13ab000000p-187,
    0x1.45f306d000000p-128, 0x1.9391054000000p-157, 0x1.4fe13ab000000p-186,
    0x1.45f306d000000p-127, 0x1.9391054000000p-156, 0x1.4fe13ab000000p-185,
    0x1.45f306d000000p-126, 0x1.9391054000000p-155, 0x1.4fe13ab000000p-184,
    0x1.45f306d000000p-125, 0x1.9391054000000p-154, 0x1.4fe13ab000000p-183,
    0x1.45f306d000000p-124, 0x1.9391054000000p-153, 0x1.4fe13ab000000p-182,
    0x1.45f306d000000p-123, 0x1.9391054000000p-152, 0x1.4fe13ab000000p-181,
    0x1.45f306d000000p-122, 0x1.9391054000000p-151, 0x1.4fe13ab000000p-180,
    0x1.45f306d000000p-121, 0x1.9391054000000p-150, 0x1.4fe13ab000000p-179,
    0x1.45f306d000000p-120, 0x1.9391054000000p-149, 0x1.4fe13ab000000p-178,
    0x1.45f306d000000p-119, 0x1.9391054000000p-148, 0x1.4fe13ab000000p-177,
    0x1.45f306d000000p-118, 0x1.9391054000000p-147, 0x1.4fe13ab000000p-176,
    0x1.45f306d000000p-117, 0x1.9391054000000p-146, 0x1.4fe13ab000000p-175,
    0x1.45f306d000000p-116, 0x1.9391054000000p-145, 0x1.4fe13ab000000p-174,
    0x1.45f306d000000p-115, 0x1.9391054000000p-144, 0x1.4fe13ab000000p-173,
    0x1.45f306d000000p-114, 0x1.9391054000000p-143, 0x1.4fe13ab000000p-172,
    0x1.45f306d000000p-113, 0x1.9391054000000p-142, 0x1.4fe13ab000000p-171,
    0x1.45f306d000000p-112, 0x1.9391054000000p-141, 0x1.4fe13ab000000p-170,
    0x1.45f306d000000p-111, 0x1.9391054000000p-140, 0x1.4fe13ab000000p-169,
    0x1.45f306d000000p-110, 0x1.9391054000000p-139, 0x1.4fe13ab000000p-168,
    0x1.45f306d000000p-109, 0x1.9391054000000p-138, 0x1.4fe13ab000000p-167,
    0x1.45f306d000000p-108, 0x1.9391054000000p-137, 0x1.4fe13ab000000p-166,
    0x1.45f306d000000p-107, 0x1.9391054000000p-136, 0x1.4fe13ab000000p-165,
    0x1.45f306d000000p-106, 0x1.9391054000000p-135, 0x1.4fe13ab000000p-164,
    0x1.45f306d000000p-105, 0x1.9391054000000p-134, 0x1.4fe13ab000000p-163,
    0x1.45f306d000000p-104, 0x1.9391054000000p-133, 0x1.4fe13ab000000p-162,
    0x1.45f306d000000p-103, 0x1.9391054000000p-132, 0x1.4fe13ab000000p-161,
    0x1.45f306d000000p-102, 0x1.9391054000000p-131, 0x1.4fe13ab000000p-160,
    0x1.45f306d000000p-101, 0x1.9391054000000p-130, 0x1.4fe13ab000000p-159,
    0x1.45f306d000000p-100, 0x1.9391054000000p-129, 0x1.4fe13ab000000p-158,
    0x1.45f306d000000p-99, 0x1.9391054000000p-128, 0x1.4fe13ab000000p-157,
    0x1.45f306d000000p-98, 0x1.9391054000000p-127, 0x1.4fe13ab000000p-156,
    0x1.45f306d000000p-97, 0x1.9391054000000p-126, 0x1.4fe13ab000000p-155,
    0x1.45f306d000000p-96, 0x1.9391054000000p-125, 0x1.4fe13ab000000p-154,
    0x1.45f306d000000p-95, 0x1.9391054000000p-124, 0x1.4fe13ab000000p-153,
    0x1.45f306d000000p-94, 0x1.9391054000000p-123, 0x1.4fe13ab000000p-152,
    0x1.45f306d000000p-93, 0x1.9391054000000p-122, 0x1.4fe13ab000000p-151,
    0x1.45f306d000000p-92, 0x1.9391054000000p-121, 0x1.4fe13ab000000p-150,
    0x1.45f306d000000p-91, 0x1.9391054000000p-120, 0x1.4fe13ab000000p-149,
    0x1.45f306d000000p-90, 0x1.9391054000000p-119, 0x1.4fe13ab000000p-148,
    0x1.45f306d000000p-89, 0x1.9391054000000p-118, 0x1.4fe13ab000000p-147,
    0x1.45f306d000000p-88, 0x1.9391054000000p-117, 0x1.4fe13ab000000p-146,
    0x1.45f306d000000p-87, 0x1.9391054000000p-116, 0x1.4fe13ab000000p-145,
    0x1.45f306d000000p-86, 0x1.9391054000000p-115, 0x1.4fe13ab000000p-144,
    0x1.45f306d000000p-85, 0x1.9391054000000p-114, 0x1.4fe13ab000000p-143,
    0x1.45f306d000000p-84, 0x1.9391054000000p-113, 0x1.4fe13ab000000p-142,
    0x1.45f306d000000p-83, 0x1.9391054000000p-112, 0x1.4fe13ab000000p-141,
    0x1.45f306d000000p-82, 0x1.9391054000000p-111, 0x1.4fe13ab000000p-140,
    0x1.45f306d000000p-81, 0x1.9391054000000p-110, 0x1.4fe13ab000000p-139,
    0x1.45f306d000000p-80, 0x1.9391054000000p-109, 0x1.4fe13ab000000p-138,
    0x1.45f306d000000p-79, 0x1.9391054000000p-108, 0x1.4fe13ab000000p-137,
    0x1.45f306d000000p-78, 0x1.9391054000000p-107, 0x1.4fe13ab000000p-136,
    0x1.45f306d000000p-77, 0x1.9391054000000p-106, 0x1.4fe13ab000000p-135,
    0x1.45f306d000000p-76, 0x1.9391054000000p-105, 0x1.4fe13ab000000p-134,
    0x1.45f306d000000p-75, 0x1.9391054000000p-104, 0x1.4fe13ab000000p-133,
    0x1.45f306d000000p-74, 0x1.9391054000000p-103, 0x1.4fe13ab000000p-132,
    0x1.45f306d000000p-73, 0x1.9391054000000p-102, 0x1.4fe13ab000000p-131,
    0x1.45f306d000000p-72, 0x1.9391054000000p-101, 0x1.4fe13ab000000p-130,
    0x1.45f306d000000p-71, 0x1.9391054000000p-100, 0x1.4fe13ab000000p-129,
    0x1.45f306d000000p-70, 0x1.9391054000000p-99, 0x1.4fe13ab000000p-128,
    0x1.45f306d000000p-69, 0x1.9391054000000p-98, 0x1.4fe13ab000000p-127,
    0x1.45f306d000000p-68, 0x1.9391054000000p-97, 0x1.4fe13ab000000p-126,
    0x1.45f306d000000p-67, 0x1.9391054000000p-96, 0x1.4fe13ab000000p-125,
    0x1.45f306d000000p-66, 0x1.9391054000000p-95, 0x1.4fe13ab000000p-124,
    0x1.45f306d000000p-65, 0x1.9391054000000p-94, 0x1.4fe13ab000000p-123,
    0x1.45f306d000000p-64, 0x1.9391054000000p-93, 0x1.4fe13ab000000p-122,
    0x1.45f306d000000p-63, 0x1.9391054000000p-92, 0x1.4fe13ab000000p-121,
    0x1.45f306d000000p-62, 0x1.9391054000000p-91, 0x1.4fe13ab000000p-120,
    0x1.45f306d000000p-61, 0x1.9391054000000p-90, 0x1.4fe13ab000000p-119,
    0x1.45f306d000000p-60, 0x1.9391054000000p-89, 0x1.4fe13ab000000p-118,
    0x1.45f306d000000p-59, 0x1.9391054000000p-88, 0x1.4fe13ab000000p-117,
    0x1.45f306d000000p-58, 0x1.9391054000000p-87, 0x1.4fe13ab000000p-116,
    0x1.45f306d000000p-57, 0x1.9391054000000p-86, 0x1.4fe13ab000000p-115,
    0x1.45f306d000000p-56, 0x1.9391054000000p-85, 0x1.4fe13ab000000p-114,
    0x1.45f306d000000p-55, 0x1.9391054000000p-84, 0x1.4fe13ab000000p-113,
    0x1.45f306d000000p-54, 0x1.9391054000000p-83, 0x1.4fe13ab000000p-112,
    0x1.45f306d000000p-53, 0x1.9391054000000p-82, 0x1.4fe13ab000000p-111,
    0x1.45f306d000000p-52, 0x1.9391054000000p-81, 0x1.4fe13ab000000p-110,
    0x1.45f306d000000p-51, 0x1.9391054000000p-80, 0x1.4fe13ab000000p-109,
    0x1.45f306d000000p-50, 0x1.9391054000000p-79, 0x1.4fe13ab000000p-108,
    0x1.45f306d000000p-49, 0x1.9391054000000p-78, 0x1.4fe13ab000000p-107,
    0x1.45f306d000000p-48, 0x1.9391054000000p-77, 0x1.4fe13ab000000p-106,
    0x1.45f306d000000p-47, 0x1.9391054000000p-76, 0x1.4fe13ab000000p-105,
    0x1.45f306d000000p-46, 0x1.9391054000000p-75, 0x1.4fe13ab000000p-104,
    0x1.45f306d000000p-45, 0x1.9391054000000p-74, 0x1.4fe13ab000000p-103,
    0x1.45f306d000000p-44, 0x1.9391054000000p-73, 0x1.4fe13ab000000p-102,
    0x1.45f306d000000p-43, 0x1.9391054000000p-72, 0x1.4fe13ab000000p-101,
    0x1.45f306d000000p-42, 0x1.9391054000000p-71, 0x1.4fe13ab000000p-100,
    0x1.45f306d000000p-41, 0x1.9391054000000p-70, 0x1.4fe13ab000000p-99,
    0x1.45f306d000000p-40, 0x1.9391054000000p-69, 0x1.4fe13ab000000p-98,
    0x1.45f306d000000p-39, 0x1.9391054000000p-68, 0x1.4fe13ab000000p-97,
    0x1.45f306d000000p-38, 0x1.9391054000000p-67, 0x1.4fe13ab000000p-96,
    0x1.45f306d000000p-37, 0x1.9391054000000p-66, 0x1.4fe13ab000000p-95,
    0x1.45f306d000000p-36, 0x1.9391054000000p-65, 0x1.4fe13ab000000p-94,
    0x1.45f306d000000p-35, 0x1.9391054000000p-64, 0x1.4fe13ab000000p-93,
    0x1.45f306d000000p-34, 0x1.9391054000000p-63, 0x1.4fe13ab000000p-92,
    0x1.45f306d000000p-33, 0x1.9391054000000p-62, 0x1.4fe13ab000000p-91,
    0x1.45f306d000000p-32, 0x1.9391054000000p-61, 0x1.4fe13ab000000p-90,
    0x1.45f306d000000p-31, 0x1.9391054000000p-60, 0x1.4fe13ab000000p-89,
    0x1.45f306d000000p-30, 0x1.9391054000000p-59, 0x1.4fe13ab000000p-88,
    0x1.45f306d000000p-29, 0x1.9391054000000p-58, 0x1.4fe13ab000000p-87,
    0x1.45f306d000000p-28, 0x1.9391054000000p-57, 0x1.4fe13ab000000p-86,
    0x1.45f306d000000p-27, 0x1.9391054000000p-56, 0x1.4fe13ab000000p-85,
    0x1.45f306d000000p-26, 0x1.9391054000000p-55, 0x1.4fe13ab000000p-84,
    0x1.45f306d000000p-25, 0x1.9391054000000p-54, 0x1.4fe13ab000000p-83,
    0x1.45f306d000000p-24, 0x1.9391054000000p-53, 0x1.4fe13ab000000p-82,
    0x1.45f306d000000p-23, 0x1.9391054000000p-52, 0x1.4fe13ab000000p-81,
    0x1.45f306d000000p-22, 0x1.9391054000000p-51, 0x1.4fe13ab000000p-80,
    0x1.45f306d000000p-21, 0x1.9391054000000p-50, 0x1.4fe13ab000000p-79,
    0x1.45f306d000000p-20, 0x1.9391054000000p-49, 0x1.4fe13ab000000p-78,
    0x1.45f306d000000p-19, 0x1.9391054000000p-48, 0x1.4fe13ab000000p-77,
    0x1.45f306d000000p-18, 0x1.9391054000000p-47, 0x1.4fe13ab000000p-76,
    0x1.45f306d000000p-17, 0x1.9391054000000p-46, 0x1.4fe13ab000000p-75,
    0x1.45f306d000000p-16, 0x1.9391054000000p-45, 0x1.4fe13ab000000p-74,
    0x1.45f306d000000p-15, 0x1.9391054000000p-44, 0x1.4fe13ab000000p-73,
    0x1.45f306d000000p-14, 0x1.9391054000000p-43, 0x1.4fe13ab000000p-72,
    0x1.45f306d000000p-13, 0x1.9391054000000p-42, 0x1.4fe13ab000000p-71,
    0x1.45f306d000000p-12, 0x1.9391054000000p-41, 0x1.4fe13ab000000p-70,
    0x1.45f306d000000p-11, 0x1.9391054000000p-40, 0x1.4fe13ab000000p-69,
    0x1.45f306d000000p-10, 0x1.9391054000000p-39, 0x1.4fe13ab000000p-68,
    0x1.45f306d000000p-9, 0x1.9391054000000p-38, 0x1.4fe13ab000000p-67,
    0x1.45f306d000000p-8, 0x1.9391054000000p-37, 0x1.4fe13ab000000p-66,
    0x1.45f306d000000p-7, 0x1.9391054000000p-36, 0x1.4fe13ab000000p-65,
    0x1.45f306d000000p-6, 0x1.9391054000000p-35, 0x1.4fe13ab000000p-64,
    0x1.45f306d000000p-5, 0x1.9391054000000p-34, 0x1.4fe13ab000000p-63,
    0x1.45f306d000000p-4, 0x1.9391054000000p-33, 0x1.4fe13ab000000p-62,
    0x1.45f306d000000p-3, 0x1.9391054000000p-32, 0x1.4fe13ab000000p-61,
    0x1.45f306d000000p-2, 0x1.9391054000000p-31, 0x1.4fe13ab000000p-60,
    0x1.45f306d000000p-1, 0x1.9391054000000p-30, 0x1.4fe13ab000000p-59,
    0x1.45f306d000000p+0, 0x1.9391054000000p-29, 0x1.4fe13ab000000p-58,
    0x1.45f306d000000p+1, 0x1.9391054000000p-28, 0x1.4fe13ab000000p-57,
    0x1.17cc1b7000000p+0, 0x1.391054a000000p-31, 0x1.fc2757d000000p-61,
    0x1.17cc1b7000000p+1, 0x1.391054a000000p-30, 0x1.fc2757d000000p-60,
    0x1.7cc1b72000000p-2, 0x1.c882a53000000p-32, 0x1.f09d5f4000000p-61,
    0x1.7cc1b72000000p-1, 0x1.c882a53000000p-31, 0x1.f09d5f4000000p-60,
    0x1.7cc1b72000000p+0, 0x1.c882a53000000p-30, 0x1.f09d5f4000000p-59,
    0x1.7cc1b72000000p+1, 0x1.c882a53000000p-29, 0x1.f09d5f4000000p-58,
    0x1.f306dc9000000p+0, 0x1.91054a7000000p-29, 0x1.e13abe8000000p-58,
    0x1.f306dc9000000p+1, 0x1.91054a7000000p-28, 0x1.e13abe8000000p-57,
    0x1.e60db93000000p+1, 0x1.220a94f000000p-28, 0x1.c2757d1000000p-57,
    0x1.cc1b727000000p+1, 0x1.1054a7f000000p-30, 0x1.3abe8fa000000p-63,
    0x1.9836e4e000000p+1, 0x1.1054a7f000000p-29, 0x1.3abe8fa000000p-62,
    0x1.306dc9c000000p+1, 0x1.1054a7f000000p-28, 0x1.3abe8fa000000p-61,
    0x1.836e4e4000000p-1, 0x1.054a7f0000000p-31, 0x1.3abe8fa000000p-60,
    0x1.836e4e4000000p+0, 0x1.054a7f0000000p-30, 0x1.3abe8fa000000p-59,
    0x1.836e4e4000000p+1, 0x1.054a7f0000000p-29, 0x1.3abe8fa000000p-58,
    0x1.06dc9c8000000p+1, 0x1.054a7f0000000p-28, 0x1.3abe8fa000000p-57,
    0x1.b727220000000p-4, 0x1.529fc27000000p-33, 0x1.5f47d4d000000p-63,
    0x1.b727220000000p-3, 0x1.529fc27000000p-32, 0x1.5f47d4d000000p-62,
    0x1.b727220000000p-2, 0x1.529fc27000000p-31, 0x1.5f47d4d000000p-61,
    0x1.b727220000000p-1, 0x1.529fc27000000p-30, 0x1.5f47d4d000000p-60,
    0x1.b727220000000p+0, 0x1.529fc27000000p-29, 0x1.5f47d4d000000p-59,
    0x1.b727220000000p+1, 0x1.529fc27000000p-28, 0x1.5f47d4d000000p-58,
    0x1.6e4e441000000p+1, 0x1.4a7f09d000000p-29, 0x1.7d1f534000000p-59,
    0x1.b939105000000p+0, 0x1.29fc275000000p-30, 0x1.f47d4d3000000p-60,
    0x1.b939105000000p+1, 0x1.29fc275000000p-29, 0x1.f47d4d3000000p-59,
    0x1.727220a000000p+1, 0x1.29fc275000000p-28, 0x1.f47d4d3000000p-58,
    0x1.c9c882a000000p+0, 0x1.4fe13ab000000p-30, 0x1.d1f534d000000p-59,
    0x1.c9c882a000000p+1, 0x1.4fe13ab000000p-29, 0x1.d1f534d000000p-58,
    0x1.9391054000000p+1, 0x1.4fe13ab000000p-28, 0x1.d1f534d000000p-57,
    0x1.27220a9000000p+1, 0x1.3f84eaf000000p-29, 0x1.47d4d37000000p-58,
    0x1.391054a000000p-1, 0x1.fc2757d000000p-31, 0x1.f534ddc000000p-63,
    0x1.391054a000000p+0, 0x1.fc2757d000000p-30, 0x1.f534ddc000000p-62,
    0x1.391054a000000p+1, 0x1.fc2757d000000p-29, 0x1.f534ddc000000p-61,
    0x1.c882a53000000p-1, 0x1.f09d5f4000000p-30, 0x1.f534ddc000000p-60,
    0x1.c882a53000000p+0, 0x1.f09d5f4000000p-29, 0x1.f534ddc000000p-59,
    0x1.c882a53000000p+1, 0x1.f09d5f4000000p-28, 0x1.f534ddc000000p-58,
    0x1.91054a7000000p+1, 0x1.e13abe8000000p-28, 0x1.f534ddc000000p-57,
    0x1.220a94f000000p+1, 0x1.c2757d1000000p-28, 0x1.ea69bb8000000p-57,
    0x1.1054a7f000000p-1, 0x1.3abe8fa000000p-34, 0x1.34ddc0d000000p-63,
    0x1.1054a7f000000p+0, 0x1.3abe8fa000000p-33, 0x1.34ddc0d000000p-62,
    0x1.1054a7f000000p+1, 0x1.3abe8fa000000p-32, 0x1.34ddc0d000000p-61,
    0x1.054a7f0000000p-2, 0x1.3abe8fa000000p-31, 0x1.34ddc0d000000p-60,
    0x1.054a7f0000000p-1, 0x1.3abe8fa000000p-30, 0x1.34ddc0d000000p-59,
    0x1.054a7f0000000p+0, 0x1.3abe8fa000000p-29, 0x1.34ddc0d000000p-58,
    0x1.054a7f0000000p+1, 0x1.3abe8fa000000p-28, 0x1.34ddc0d000000p-57,
    0x1.529fc27000000p-4, 0x1.5f47d4d000000p-34, 0x1.bb81b6c000000p-65,
    0x1.529fc27000000p-3, 0x1.5f47d4d000000p-33, 0x1.bb81b6c000000p-64,
    0x1.529fc27000000p-2, 0x1.5f47d4d000000p-32, 0x1.bb81b6c000000p-63,
    0x1.529fc27000000p-1, 0x1.5f47d4d000000p-31, 0x1.bb81b6c000000p-62,
    0x1.529fc27000000p+0, 0x1.5f47d4d000000p-30, 0x1.bb81b6c000000p-61,
    0x1.529fc27000000p+1, 0x1.5f47d4d000000p-29, 0x1.bb81b6c000000p-60,
    0x1.4a7f09d000000p+0, 0x1.7d1f534000000p-30, 0x1.bb81b6c000000p-59,
    0x1.4a7f09d000000p+1, 0x1.7d1f534000000p-29, 0x1.bb81b6c000000p-58,
    0x1.29fc275000000p+0, 0x1.f47d4d3000000p-30, 0x1.dc0db62000000p-60,
    0x1.29fc275000000p+1, 0x1.f47d4d3000000p-29, 0x1.dc0db62000000p-59,
    0x1.4fe13ab000000p-1, 0x1.d1f534d000000p-30, 0x1.b81b6c5000000p-59,
    0x1.4fe13ab000000p+0, 0x1.d1f534d000000p-29, 0x1.b81b6c5000000p-58,
    0x1.4fe13ab000000p+1, 0x1.d1f534d000000p-28, 0x1.b81b6c5000000p-57,
    0x1.3f84eaf000000p+0, 0x1.47d4d37000000p-29, 0x1.c0db629000000p-59,
    0x1.3f84eaf000000p+1, 0x1.47d4d37000000p-28, 0x1.c0db629000000p-58,
    0x1.fc2757d000000p-1, 0x1.f534ddc000000p-33, 0x1.b6c52b3000000p-66,
    0x1.fc2757d000000p+0, 0x1.f534ddc000000p-32, 0x1.b6c52b3000000p-65,
    0x1.fc2757d000000p+1, 0x1.f534ddc000000p-31, 0x1.b6c52b3000000p-64,
    0x1.f84eafa000000p+1, 0x1.f534ddc000000p-30, 0x1.b6c52b3000000p-63,
    0x1.f09d5f4000000p+1, 0x1.f534ddc000000p-29, 0x1.b6c52b3000000p-62,
    0x1.e13abe8000000p+1, 0x1.f534ddc000000p-28, 0x1.b6c52b3000000p-61,
    0x1.c2757d1000000p+1, 0x1.ea69bb8000000p-28, 0x1.b6c52b3000000p-60,
    0x1.84eafa3000000p+1, 0x1.d4d3770000000p-28, 0x1.b6c52b3000000p-59,
    0x1.09d5f47000000p+1, 0x1.a9a6ee0000000p-28, 0x1.b6c52b3000000p-58,
    0x1.3abe8fa000000p-3, 0x1.34ddc0d000000p-32, 0x1.6c52b32000000p-61,
    0x1.3abe8fa000000p-2, 0x1.34ddc0d000000p-31, 0x1.6c52b32000000p-60,
    0x1.3abe8fa000000p-1, 0x1.34ddc0d000000p-30, 0x1.6c52b32000000p-59,
    0x1.3abe8fa000000p+0, 0x1.34ddc0d000000p-29, 0x1.6c52b32000000p-58,
    0x1.3abe8fa000000p+1, 0x1.34ddc0d000000p-28, 0x1.6c52b32000000p-57,
    0x1.d5f47d4000000p-1, 0x1.a6ee06d000000p-30, 0x1.6295993000000p-59,
    0x1.d5f47d4000000p+0, 0x1.a6ee06d000000p-29, 0x1.6295993000000p-58,
    0x1.d5f47d4000000p+1, 0x1.a6ee06d000000p-28, 0x1.6295993000000p-57,
    0x1.abe8fa9000000p+1, 0x1.4ddc0db000000p-28, 0x1.8a5664f000000p-58,
    0x1.57d1f53000000p+1, 0x1.377036d000000p-29, 0x1.14acc9e000000p-58,
    0x1.5f47d4d000000p+0, 0x1.bb81b6c000000p-31, 0x1.4acc9e2000000p-61,
    0x1.5f47d4d000000p+1, 0x1.bb81b6c000000p-30, 0x1.4acc9e2000000p-60,
    0x1.7d1f534000000p+0, 0x1.bb81b6c000000p-29, 0x1.4acc9e2000000p-59,
    0x1.7d1f534000000p+1, 0x1.bb81b6c000000p-28, 0x1.4acc9e2000000p-58,
    0x1.f47d4d3000000p+0, 0x1.dc0db62000000p-30, 0x1.2b32788000000p-59,
    0x1.f47d4d3000000p+1, 0x1.dc0db62000000p-29, 0x1.2b32788000000p-58,
    0x1.e8fa9a6000000p+1, 0x1.dc0db62000000p-28, 0x1.2b32788000000p-57,
    0x1.d1f534d000000p+1, 0x1.b81b6c5000000p-28, 0x1.5993c43000000p-59,
    0x1.a3ea69b000000p+1, 0x1.7036d8a000000p-28, 0x1.5993c43000000p-58,
    0x1.47d4d37000000p+1, 0x1.c0db629000000p-29, 0x1.664f10e000000p-59,
    0x1.1f534dd000000p+0, 0x1.81b6c52000000p-29, 0x1.664f10e000000p-58,
    0x1.1f534dd000000p+1, 0x1.81b6c52000000p-28, 0x1.664f10e000000p-57,
    0x1.f534ddc000000p-2, 0x1.b6c52b3000000p-35, 0x1.3c43904000000p-66,
    0x1.f534ddc000000p-1, 0x1.b6c52b3000000p-34, 0x1.3c43904000000p-65,
    0x1.f534ddc000000p+0, 0x1.b6c52b3000000p-33, 0x1.3c43904000000p-64,
    0x1.f534ddc000000p+1, 0x1.b6c52b3000000p-32, 0x1.3c43904000000p-63,
    0x1.ea69bb8000000p+1, 0x1.b6c52b3000000p-31, 0x1.3c43904000000p-62,
    0x1.d4d3770000000p+1, 0x1.b6c52b3000000p-30, 0x1.3c43904000000p-61,
    0x1.a9a6ee0000000p+1, 0x1.b6c52b3000000p-29, 0x1.3c43904000000p-60,
    0x1.534ddc0000000p+1, 0x1.b6c52b3000000p-28, 0x1.3c43904000000p-59,
    0x1.4d37703000000p+0, 0x1.b629599000000p-30, 0x1.e21c820000000p-61,
    0x1.4d37703000000p+1, 0x1.b629599000000p-29, 0x1.e21c820000000p-60,
    0x1.34ddc0d000000p+0, 0x1.6c52b32000000p-29, 0x1.e21c820000000p-59,
};
// clang-format on

RP_MATH_FN rp_trig_parts rp_trig_reduce_f32(float x) {
  uint32_t bits;
  RP_F32_TO_BITS(bits, x);
  const uint64_t mag = bits & 0x7FFFFFFFu;
  // the exponent clamped to 1 .. 254 as a max and a min (subnormals, +-0, inf and NaN are
  // answered by the caller; see rp_trig_reduce_large on selects of constants)
  const uint64_t e = mag >> 23;
  const uint64_t e_lo = e < 1u ? 1u : e;
  const uint64_t row = (e_lo > 254u ? 254u : e_lo) * 3u - 3u;
  const double m = rp_u32_to_f64((mag & 0x007FFFFFu) | 0x00800000u);
  const double p0 = m * rp_two_over_pi_f32[row];  // the three products are exact
  const double p1 = m * rp_two_over_pi_f32[row + 1];
  const double p2 = m * rp_two_over_pi_f32[row + 2];
  const double shift = 0x1.8p52;
  const double p0m = p0 - 4.0 * ((p0 * 0.25 + shift) - shift);  // p0 mod 4, in [-2, 2], exact
  const double t = (p0m + p1) + shift;  // n = rint(x 2/pi mod 4) in its low bits
  uint64_t tb;
  RP_F64_TO_BITS(tb, t);
  const double f = ((p0m - (t - shift)) + p1) + p2;  // exact until the last additions
  return rp_trig_parts{f * 0x1.921fb54442d18p0, 0.0, tb};
}

/* Taylor polynomials of sin and cos on |r| <= pi/4 + a little: the first terms left out are
 * below 2^-28 of the result there (float needs 2^-24). */
RP_MATH_FN double rp_trig_sin_f32_kernel(double r) {
  const double z = r * r;
  return r +
         r * z *
             (-0x1.5555555555555p-3 + z * (0x1.1111111111111p-7 + z * (-0x1.a01a01a01a01ap-13 +
                                                                       z * 0x1.71de3a556c734p-19)));
}
RP_MATH_FN double rp_trig_cos_f32_kernel(double r) {
  const double z = r * r;
  return 1.0 + z * (-0.5 + z * (0x1.5555555555555p-5 +
                                z * (-0x1.6c16c16c16c17p-10 +
                                     z * (0x1.a01a01a01a01ap-16 + z * -0x1.27e4fb7789f5cp-22))));
}

RP_MATH_FN float rp_math_sin(float x) {
  const rp_trig_parts p = rp_trig_reduce_f32(x);
  const double v =
      rp_trig_quadrant(rp_trig_sin_f32_kernel(p.y0), rp_trig_cos_f32_kernel(p.y0), p.n);
  const float ax = x < 0.0f ? -x : x;
  const float signed_v = static_cast<float>(x < 0.0f ? -v : v);
  const float finite_v = ax <= 0x1.fffffep127f ? signed_v : x - x;  // inf, NaN: NaN
  return ax < 0x1p-12f ? x : finite_v;  // sin(x) rounds to x (and keeps -0)
}

RP_MATH_FN float rp_math_cos(float x) {
  const rp_trig_parts p = rp_trig_reduce_f32(x);
  const float value = static_cast<float>(
      rp_trig_quadrant(rp_trig_sin_f32_kernel(p.y0), rp_trig_cos_f32_kernel(p.y0), p.n + 1u));
  const float ax = x < 0.0f ? -x : x;
  const float finite_v = ax <= 0x1.fffffep127f ? value : x - x;
  return ax < 0x1p-12f ? 1.0f : finite_v;  // cos(x) rounds to 1
}

/* tan in float: the float reduction, the double kernel (r exact to 2^-60 or so, the kernel within
 * an ulp of double), rounded once to float. */
RP_MATH_FN float rp_math_tan(float x) {
  const rp_trig_parts p = rp_trig_reduce_f32(x);
  const double v = rp_trig_tan_kernel(p.y0, 0.0, (p.n & 1u) != 0u);
  const float ax = x < 0.0f ? -x : x;
  const float signed_v = static_cast<float>(x < 0.0f ? -v : v);
  const float finite_v = ax <= 0x1.fffffep127f ? signed_v : x - x;  // inf, NaN: NaN
  return ax < 0x1p-12f ? x : finite_v;  // tan(x) rounds to x (and keeps -0)
}

#endif /* RAPTOR_TRIG_H */
