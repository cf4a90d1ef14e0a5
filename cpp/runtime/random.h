/* The random draws of hawk's `Random` parameters, as jax.random makes them (issue 11 item 1).
 *
 * Draw j of sample i in step s of a launch with key k is
 *     jax.random.uniform(fold_in(fold_in(fold_in(k, s), i), j), dtype=T)      (bit for bit)
 *     jax.random.normal(<the same subkey>, dtype=T)                          (to ~1 ulp)
 * with jax's default PRNG, threefry2x32 (jax_threefry_partitionable on, the default since jax
 * 0.5); the values in cpp/tests/test_runtime_random.cpp were made with jax 0.12.0.1 and 0.12.1.
 * Plain C++ over uint32_t/uint64_t and <cmath>, so the host code, the CUDA code (define
 * RAPTOR_RNG_FN as `__device__ inline` before including it; codegen pastes it through
 * runtime/abi_source.hpp) and the interpreter share it.
 * Start at rp_draw_uniform.
 */
#ifndef RAPTOR_RANDOM_H
#define RAPTOR_RANDOM_H

#ifndef RP_LIBM_DECLARED /* as in rp_math.h: the generated host units declare them */
#include <math.h>
#endif
#include <stdint.h>

/* The bit casts RP_F64_FROM_BITS .. and the logarithms rp_log_f64 / rp_log_f32 under erfinv.
 * Skipped where rp_math.h came first: the generated units paste it before this file. */
#ifndef RAPTOR_MATH_H
#include "rp_math.h"
#endif

#ifndef RAPTOR_RNG_FN
#define RAPTOR_RNG_FN inline
#endif

/* The bit-making core (threefry, fold_in, the uniform's bits), which every draw runs several
 * times: always inlined on the host, where GCC's unit-growth limits would otherwise stop
 * inlining it into the later kernels of a large unit (one launch of 4 bernoulli draws ran 20x
 * slower in a unit of nine kernels than alone); the device's RAPTOR_RNG_FN forces it already. */
#ifndef RAPTOR_RNG_HOT
#ifdef __CUDACC__
#define RAPTOR_RNG_HOT RAPTOR_RNG_FN
#else
#define RAPTOR_RNG_HOT inline __attribute__((always_inline))
#endif
#endif

/* A key: the two uint32 words of jax.random.key_data. */
struct rp_key {
  uint32_t k0, k1;
};

RAPTOR_RNG_HOT uint32_t rp_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

/* threefry2x32 with 20 rounds (Salmon et al. 2011; jax/_src/random/threefry2x32.py). */
RAPTOR_RNG_HOT void rp_threefry2x32(rp_key key, uint32_t* x0, uint32_t* x1) {
  const uint32_t ks[3] = {key.k0, key.k1, key.k0 ^ key.k1 ^ 0x1BD11BDAu};
  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t a = *x0 + ks[0], b = *x1 + ks[1];
  for (int i = 0; i < 5; ++i) {
    for (int r = 0; r < 4; ++r) {
      a += b;
      b = rp_rotl32(b, rot[i % 2][r]) ^ a;
    }
    a += ks[(i + 1) % 3];
    b += ks[(i + 2) % 3] + static_cast<uint32_t>(i + 1);
  }
  *x0 = a;
  *x1 = b;
}

/* jax.random.fold_in(key, d). */
RAPTOR_RNG_HOT rp_key rp_fold_in(rp_key key, uint32_t d) {
  uint32_t a = 0, b = d;
  rp_threefry2x32(key, &a, &b);
  return rp_key{a, b};
}

/* The subkey of draw j of sample i in step s. */
RAPTOR_RNG_HOT rp_key rp_subkey(rp_key key, uint32_t step, uint32_t sample, uint32_t draw) {
  return rp_fold_in(rp_fold_in(rp_fold_in(key, step), sample), draw);
}

/* Element c of jax.random.uniform(key, (n,), float64) and float32, on [0, 1): the bits of
 * threefry2x32(key, 0, c) (jax_threefry_partitionable counts elements with a 64-bit iota split
 * into (hi, lo) words; n < 2^32 here, so hi = 0). A scalar draw is element 0. */
RAPTOR_RNG_HOT double rp_uniform_ctr_f64(rp_key key, uint32_t c) {
  uint32_t b0 = 0, b1 = c;
  rp_threefry2x32(key, &b0, &b1);
  const uint64_t bits = ((static_cast<uint64_t>(b0) << 32) | b1) >> 12 | 0x3FF0000000000000ull;
  double f;
  RP_F64_FROM_BITS(f, bits);
  return f - 1.0;
}

RAPTOR_RNG_HOT float rp_uniform_ctr_f32(rp_key key, uint32_t c) {
  uint32_t b0 = 0, b1 = c;
  rp_threefry2x32(key, &b0, &b1);
  const uint32_t bits = (b0 ^ b1) >> 9 | 0x3F800000u;
  float f;
  RP_F32_FROM_BITS(f, bits);
  return f - 1.0f;
}

/* jax.random.uniform(key, (), float64) and float32, on [0, 1). */
RAPTOR_RNG_HOT double rp_uniform_f64(rp_key key) { return rp_uniform_ctr_f64(key, 0u); }
RAPTOR_RNG_HOT float rp_uniform_f32(rp_key key) { return rp_uniform_ctr_f32(key, 0u); }

/* jax's float64 erf_inv as jax >= 0.12.1 computes it by default (erf_inv_core in
 * jax/_src/lax/erf.py, Apache-2.0, with has_far_tail=False: three pieces in
 * w = -log(1 - x^2), jax's degree-19 polynomials, cut at w = 4.5 and 16), followed operation
 * for operation as rp_erfinv_f32 (which describes the steps): fma Horner steps, coefficients
 * selected per sample, no branches. What differs from jax is rp_log_f64 against XLA's log:
 * over 2^20 normal draws 98% are jax's bit for bit, the rest within 3 ulps. */
#define RP_PIECE(a, b, c) (central ? (a) : middle ? (b) : (c))
RAPTOR_RNG_HOT double rp_erfinv(double x) {
  const double ax = x < 0.0 ? -x : x;
  const bool inside = ax < 1.0;  // false for +-1 (+-inf) and beyond or NaN (NaN), as jax
  const double a = inside ? ax : 0.0;
  const double w = -rp_log_f64((1.0 - a) * (1.0 + a));
  const bool central = w < 4.5, middle = w < 16.0;
  const double ws = central ? 1.0 : w;
  const double z = sqrt(ws);
  uint64_t zb;
  RP_F64_TO_BITS(zb, z);
  zb &= 0xFFFFFFFFF8000000ull;  // keep 26 significand bits: z_h * z_h is exact
  double z_h;
  RP_F64_FROM_BITS(z_h, zb);
  const double z_l = (ws - z_h * z_h) / (z + z_h);
  const double t = central ? w - 2.25 : z - (middle ? 3.0 : 5.0);
  double p = RP_PIECE(-0x1.2ffccb301a77fp-55, 0x1.5f3c32a44f21dp-31, -0x1.db803224318bap-44);
  p = fma(p, t, RP_PIECE(0x1.b058ee070e9a4p-54, 0x1.56ca0f8fc7bebp-31, 0x1.64aead41961a4p-47));
  p = fma(p, t, RP_PIECE(0x1.1d26f17f2447ap-49, -0x1.6ad67e67ce1c9p-27, 0x1.068d714fd68e8p-39));
  p = fma(p, t, RP_PIECE(-0x1.b73d097d71e3dp-47, 0x1.ffd498b130146p-27, -0x1.f4afbb5188accp-38));
  p = fma(p, t, RP_PIECE(-0x1.9feaa0741881cp-45, 0x1.315f1ab1eab22p-25, 0x1.3d5558cee1095p-36));
  p = fma(p, t, RP_PIECE(0x1.b747c74f0b4fcp-41, -0x1.57e6b5295de64p-23, -0x1.5e5575ec8c5f6p-35));
  p = fma(p, t, RP_PIECE(-0x1.9087b763adfbfp-40, 0x1.9d40c1d9402a5p-23, 0x1.0b05814447eebp-34));
  p = fma(p, t, RP_PIECE(-0x1.0c6f0e94ac237p-35, 0x1.9883ecf6aa351p-22, 0x1.9ca8e696af3dap-35));
  p = fma(p, t, RP_PIECE(0x1.d672a920915cfp-33, -0x1.0e35ac15520b9p-19, -0x1.176ce2d17ac0dp-30));
  p = fma(p, t, RP_PIECE(0x1.ecf346d136385p-32, 0x1.a67db4feb28e9p-19, 0x1.d1064f3f365e7p-28));
  p = fma(p, t, RP_PIECE(-0x1.b146771d77374p-27, 0x1.5677bcc9afc2ap-19, -0x1.426c13d3d9282p-25));
  p = fma(p, t, RP_PIECE(0x1.57ea41d40b6f7p-25, -0x1.9420cb7edb35ap-16, 0x1.a10fbfbd8714bp-23));
  p = fma(p, t, RP_PIECE(0x1.c9571aa3cf69ap-22, 0x1.d490539604ecbp-15, -0x1.014c93b9c770ap-20));
  p = fma(p, t, RP_PIECE(-0x1.1aedd3b03ed11p-18, -0x1.32cc7e7e51e7bp-15, 0x1.2dcd131fc6114p-18));
  p = fma(p, t, RP_PIECE(0x1.8d38bc4f859a4p-21, -0x1.cfecefc93c5cfp-13, -0x1.49de79761feacp-16));
  p = fma(p, t, RP_PIECE(0x1.cf8b8bcbdb1f1p-13, 0x1.2b7b99b463d5ep-10, 0x1.3eb336279e7cbp-14));
  p = fma(p, t, RP_PIECE(-0x1.821fe73cf0223p-10, -0x1.c38c06b7f2ac1p-9, -0x1.c2f0c4ba317f3p-13));
  p = fma(p, t, RP_PIECE(-0x1.9d94b8d1cc026p-9, 0x1.c0820afc709fep-8, -0x1.22eb371abdb35p-13));
  p = fma(p, t, RP_PIECE(0x1.fce34214befaep-3, 0x1.5cf6bc26d4b0dp-9, 0x1.5186909252081p-7));
  p = fma(p, t, RP_PIECE(0x1.7083a336cd764p+0, -0x1.566be9baa624ep-3, -0x1.336445cb78457p-3));
  const double tail = z_h + (z_l + p);
  const double in = central ? x * p : (x < 0.0 ? -tail : tail);
  const uint64_t edge_bits =
      ax == 1.0 ? (x < 0.0 ? 0xFFF0000000000000ull : 0x7FF0000000000000ull) : 0x7FF8000000000000ull;
  double edge;
  RP_F64_FROM_BITS(edge, edge_bits);
  return inside ? in : edge;
}
#undef RP_PIECE

/* jax.random.normal(key, (), T): sqrt(2) * erfinv(uniform(key, lo = nextafter(-1, 0), hi = 1)),
 * the uniform's affine map and clamp rounded in T as jax computes them. */
RAPTOR_RNG_HOT double rp_normal_ctr_f64(rp_key key, uint32_t c) {
  const double lo = -(1.0 - 0x1p-53), hi = 1.0;  // nextafter(-1.0, 0.0)
  double u = rp_uniform_ctr_f64(key, c) * (hi - lo) + lo;
  u = u > lo ? u : lo;
  return 1.4142135623730951 * rp_erfinv(u);
}

RAPTOR_RNG_HOT double rp_normal_f64(rp_key key) { return rp_normal_ctr_f64(key, 0u); }

/* jax's float32 erf_inv as jax >= 0.12.1 computes it by default (jax_accurate_erf_inv=True:
 * erf_inv_core in jax/_src/lax/erf.py, Apache-2.0, with has_far_tail=False), which
 * jax.random.normal uses for float32; followed operation for operation. 1 - x^2 is formed as
 * (1 - |x|)(1 + |x|), without cancellation near |x| = 1; w = -log(1 - x^2) picks one of two
 * polynomials (jax's coefficients); jax's Horner steps are fmuladd, an FMA on CPU and CUDA, so
 * they are fmaf here too. Beyond w = 3.5 the result is sqrt(w) split in two (a 12-bit head whose
 * square is exact) plus a small correction, so the tail keeps its digits. Both pieces are
 * computed and one selected, without branches, so sample loops vectorize. What differs from
 * jax is rp_log_f32 against XLA's log: over 2^20 normal draws 99.5% are jax's bit for bit, the
 * rest within 3 ulps. jax <= 0.12.0 defaulted to M. Giles' polynomial instead, up to 5.8e-6
 * relative away in the tails (docs/language.md "Tolerance of normal"). */
RAPTOR_RNG_HOT float rp_erfinv_f32(float x) {
  const float ax = x < 0.0f ? -x : x;
  const bool inside = ax < 1.0f;  // false for +-1 (+-inf) and beyond or NaN (NaN), as jax
  const float a = inside ? ax : 0.0f;
  const float w = -rp_log_f32((1.0f - a) * (1.0f + a));
  const bool central = w < 3.5f;
  const float t = w - 1.75f;
  float p = 0x1.938558p-24f;
  p = fmaf(p, t, 0x1.5cd332p-24f);
  p = fmaf(p, t, -0x1.64551ep-18f);
  p = fmaf(p, t, 0x1.026b3ap-16f);
  p = fmaf(p, t, 0x1.a737f8p-13f);
  p = fmaf(p, t, -0x1.f2946ep-10f);
  p = fmaf(p, t, -0x1.44d956p-11f);
  p = fmaf(p, t, 0x1.006e84p-2f);
  p = fmaf(p, t, 0x1.508eb4p0f);
  const float ws = central ? 1.0f : w;
  const float z = sqrtf(ws);
  uint32_t zb;
  RP_F32_TO_BITS(zb, z);
  zb &= 0xFFFFF000u;  // keep 12 significand bits: z_h * z_h is exact
  float z_h;
  RP_F32_FROM_BITS(z_h, zb);
  const float z_l = (ws - z_h * z_h) / (z + z_h);
  const float tz = z - 3.0f;
  float r = -0x1.917454p-17f;
  r = fmaf(r, tz, 0x1.c345ap-15f);
  r = fmaf(r, tz, -0x1.b5b046p-15f);
  r = fmaf(r, tz, -0x1.c6429ep-13f);
  r = fmaf(r, tz, 0x1.2db682p-10f);
  r = fmaf(r, tz, -0x1.c3ce24p-9f);
  r = fmaf(r, tz, 0x1.c06574p-8f);
  r = fmaf(r, tz, 0x1.5cfceap-9f);
  r = fmaf(r, tz, -0x1.566be2p-3f);
  const float tail = z_h + (z_l + r);
  const float in = central ? x * p : (x < 0.0f ? -tail : tail);
  const uint32_t edge_bits = ax == 1.0f ? (x < 0.0f ? 0xFF800000u : 0x7F800000u) : 0x7FC00000u;
  float edge;
  RP_F32_FROM_BITS(edge, edge_bits);
  return inside ? in : edge;
}

RAPTOR_RNG_HOT float rp_normal_ctr_f32(rp_key key, uint32_t c) {
  const float lo = -(1.0f - 0x1p-24f), hi = 1.0f;  // nextafter(-1.0f, 0.0f)
  float u = rp_uniform_ctr_f32(key, c) * (hi - lo) + lo;
  u = u > lo ? u : lo;
  return 1.41421356f * rp_erfinv_f32(u);
}

RAPTOR_RNG_HOT float rp_normal_f32(rp_key key) { return rp_normal_ctr_f32(key, 0u); }

/* ---- The other jax.random distributions (issue 27 item 3), each of one draw's subkey. ----
 * Each follows jax/_src/random/core.py (jax 0.12) operation for operation, in the same dtype
 * and order, with jax's own key splitting: split(key, n)[i] is fold_in(key, i) under
 * jax_threefry_partitionable. Libm-based results match jax to ~1 ulp per operation; a
 * rejection loop's decisions are the same except where a test sits within an ulp of its bound.
 * The dtype-generic ones are templates over float / double with these overloads. */

/* The C library's inexact functions the draws call (log, pow, erf, lgamma): called, never
 * evaluated by the host compiler. GCC evaluates a call whose argument it can prove constant (a
 * truncated_normal's constant bounds, a poisson's constant rate) correctly rounded with MPFR,
 * which for about 3% of arguments is 1 ulp from glibc's result (erf(c / sqrt 2) of 3081
 * constants c: 89 in double, 61 in float), while the interpreter gets glibc's: 1769 of 4096
 * float64 truncated_normal(-0.125, 2.0) draws were a few ulps from the interpreter's. noipa
 * keeps each one a call; const still lets the compiler hoist it out of the sample loop when
 * its argument is the same for every sample (constant bounds: the loop then vectorizes). The
 * generated code's own library calls (rp_exp and the others) are kept calls the same way. The
 * device compiles them inline: CUDA's functions are not glibc's anyway (docs/runtime.md). */
#ifndef RAPTOR_RNG_LIBM
#if defined(__CUDACC__)
#define RAPTOR_RNG_LIBM RAPTOR_RNG_FN
#elif defined(__clang__)
#define RAPTOR_RNG_LIBM inline __attribute__((noinline, const))
#elif defined(__GNUC__)
#define RAPTOR_RNG_LIBM inline __attribute__((noipa, const))
#else
#define RAPTOR_RNG_LIBM inline
#endif
#endif
RAPTOR_RNG_LIBM float rp_rng_log(float x) { return logf(x); }
RAPTOR_RNG_LIBM double rp_rng_log(double x) { return log(x); }
RAPTOR_RNG_FN float rp_rng_sqrt(float x) { return sqrtf(x); }
RAPTOR_RNG_FN double rp_rng_sqrt(double x) { return sqrt(x); }
RAPTOR_RNG_LIBM float rp_rng_pow(float x, float y) { return powf(x, y); }
RAPTOR_RNG_LIBM double rp_rng_pow(double x, double y) { return pow(x, y); }
RAPTOR_RNG_LIBM float rp_rng_erf(float x) { return erff(x); }
RAPTOR_RNG_LIBM double rp_rng_erf(double x) { return erf(x); }
/* A float's bits and back (memcpy on the host, the intrinsics on the device), and +inf. */
RAPTOR_RNG_FN uint64_t rp_rng_bits(double x) {
  uint64_t b;
  RP_F64_TO_BITS(b, x);
  return b;
}
RAPTOR_RNG_FN uint32_t rp_rng_bits(float x) {
  uint32_t b;
  RP_F32_TO_BITS(b, x);
  return b;
}
RAPTOR_RNG_FN double rp_rng_of_bits(uint64_t b) {
  double x;
  RP_F64_FROM_BITS(x, b);
  return x;
}
RAPTOR_RNG_FN float rp_rng_of_bits(uint32_t b) {
  float x;
  RP_F32_FROM_BITS(x, b);
  return x;
}
RAPTOR_RNG_FN float rp_rng_inf(float) { return rp_rng_of_bits(uint32_t{0x7F800000u}); }
RAPTOR_RNG_FN double rp_rng_inf(double) { return rp_math_inf(); }
/* nextafter(x, +inf), exactly, from the bits and without a branch (a library call per sample
 * would keep the sample loop scalar): a step of one ulp away from zero for x > 0, toward zero
 * for x < 0 (-inf steps to -max), the smallest subnormal for +-0; NaN and +inf unchanged.
 * rp_rng_next_down(x) = nextafter(x, -inf) = -rp_rng_next_up(-x). */
template <class T>
RAPTOR_RNG_FN T rp_rng_next_up(T x) {
  using B = decltype(rp_rng_bits(x));
  const B b = rp_rng_bits(x);
  // an add of +-1 GCC 12 vectorizes (a select between b - 1 and b + 1 left the loop scalar)
  const B step = (b >> (8 * sizeof(B) - 1)) != 0u ? ~B{0} : B{1};
  const B nb = x == T(0) ? B{1} : b + step;
  const T r = rp_rng_of_bits(nb);
  return (x != x || x == rp_rng_inf(x)) ? x : r;
}
template <class T>
RAPTOR_RNG_FN T rp_rng_next_down(T x) {
  return -rp_rng_next_up(-x);
}
RAPTOR_RNG_FN float rp_rng_uniform(rp_key key, float) { return rp_uniform_f32(key); }
RAPTOR_RNG_FN double rp_rng_uniform(rp_key key, double) { return rp_uniform_f64(key); }
RAPTOR_RNG_FN float rp_rng_normal(rp_key key, float) { return rp_normal_f32(key); }
RAPTOR_RNG_FN double rp_rng_normal(rp_key key, double) { return rp_normal_f64(key); }
RAPTOR_RNG_HOT float rp_rng_erfinv(float x) { return rp_erfinv_f32(x); }
RAPTOR_RNG_HOT double rp_rng_erfinv(double x) { return rp_erfinv(x); }

/* jax.random.gamma(key, a, dtype=T) (method 'exact'): the key is split once for the scalar
 * shape (_gamma_impl), then Marsaglia-Tsang (_gamma_one): a < 1 draws Gamma(a + 1) times
 * U^(1/a); each rejection round splits its key in three (next, normal's, uniform's) and the
 * normal's key is split again in the inner loop that redraws until v > 0. */
template <class T>
RAPTOR_RNG_FN T rp_gamma(rp_key key, T a) {
  const T one = T(1), third = T(1.0 / 3.0);
  const rp_key k0 = rp_fold_in(key, 0u);
  const bool boost = a >= one;
  const T alpha = boost ? a : a + one;
  const T d = alpha - third;
  const T c = third / rp_rng_sqrt(d);
  rp_key k = rp_fold_in(k0, 0u);
  const rp_key sub = rp_fold_in(k0, 1u);
  T X = T(0), V = one, U = T(2);
  while (U >= one - T(0.0331) * (X * X) &&
         rp_rng_log(U) >= X * T(0.5) + d * ((one - V) + rp_rng_log(V))) {
    rp_key kx = rp_fold_in(k, 1u);
    const rp_key ku = rp_fold_in(k, 2u);
    k = rp_fold_in(k, 0u);
    T x = T(0), v = T(-1);
    while (v <= T(0)) {
      const rp_key s = rp_fold_in(kx, 1u);
      kx = rp_fold_in(kx, 0u);
      x = rp_rng_normal(s, T(0));
      v = one + x * c;
    }
    X = x * x;
    V = v * v * v;
    U = rp_rng_uniform(ku, T(0));
  }
  const T samples = one - rp_rng_uniform(sub, T(0));
  const T b = boost ? one : rp_rng_pow(samples, one / a);
  return d * V * b;
}

/* The digamma function for x > 0: the recurrence up to x >= 10, then the asymptotic series
 * (within ~1e-15 relative; jax's own is a Lanczos form, equal to ~1 ulp). */
template <class T>
RAPTOR_RNG_FN T rp_digamma(T x) {
  T r = T(0);
  while (x < T(10)) {
    r -= T(1) / x;
    x += T(1);
  }
  const T f = T(1) / (x * x);
  const T tail =
      f * (T(1.0 / 12) - f * (T(1.0 / 120) - f * (T(1.0 / 252) - f * (T(1.0 / 240) - f * T(1.0 / 132)))));
  return r + rp_rng_log(x) - T(0.5) / x - tail;
}

RAPTOR_RNG_LIBM float rp_rng_lgamma(float x) { return lgammaf(x); }
RAPTOR_RNG_LIBM double rp_rng_lgamma(double x) { return lgamma(x); }
RAPTOR_RNG_FN float rp_rng_eps(float) { return 1.1920929e-07f; }
RAPTOR_RNG_FN double rp_rng_eps(double) { return 2.220446049250313e-16; }
RAPTOR_RNG_FN float rp_rng_log_max(float) { return 88.72283935546875f; }    // log(FLT_MAX)
RAPTOR_RNG_FN double rp_rng_log_max(double) { return 709.782712893384; }   // log(DBL_MAX)

/* d x / d a of a gamma sample x of shape a, holding its CDF fixed (the implicit
 * reparameterization gradient jax.random.gamma differentiates with: lax.random_gamma_grad,
 * jax/_src/lax/special.py random_gamma_grad_impl): -(dP(a, x)/da) / (dP(a, x)/dx) from
 * the incomplete gamma function's series (x <= 1 or x <= a) or continued fraction, as jax
 * computes them, the iteration caps and stopping tests included. */
template <class T>
RAPTOR_RNG_FN T rp_gamma_grad(T a, T x) {
  const T nan = rp_rng_inf(T(0)) - rp_rng_inf(T(0));
  if (a != a || x != x || x < T(0) || a <= T(0)) return nan;
  if (x == T(0)) return T(0);
  const T eps = rp_rng_eps(T(0));
  const bool use_cf = x > T(1) && x > a;
  const T logax = a * rp_rng_log(x) - x - rp_rng_lgamma(a);
  bool enabled = !(logax < -rp_rng_log_max(T(0)));
  if (!use_cf) {
    T r = a, c = T(1), ans = T(1), dc_da = T(0), dans_da = T(0);
    while (enabled) {
      r = r + T(1);
      dc_da = dc_da * (x / r) - (c * x) / (r * r);
      dans_da = dans_da + dc_da;
      c = c * (x / r);
      ans = ans + c;
      const T q = dc_da / dans_da;
      enabled = (q < T(0) ? -q : q) > eps;
    }
    const T dlogax_da = rp_rng_log(x) - rp_digamma(a + T(1));
    return -(dans_da + ans * dlogax_da) * x / a;
  }
  T y = T(1) - a, z = x + y + T(1), c = T(0);
  T pkm2 = T(1), qkm2 = x, pkm1 = x + T(1), qkm1 = z * x;
  T ans = pkm1 / qkm1;
  T dpkm2 = T(0), dqkm2 = T(0), dpkm1 = T(0), dqkm1 = -x;
  T dans = (dpkm1 - ans * dqkm1) / qkm1;
  while (c < T(2000) && enabled) {
    c = c + T(1);
    y = y + T(1);
    z = z + T(2);
    const T yc = y * c;
    const T pk = pkm1 * z - pkm2 * yc;
    const T qk = qkm1 * z - qkm2 * yc;
    const bool nz = qk != T(0);
    const T r = pk / qk;
    if (nz) ans = r;
    const T dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c;
    const T dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c;
    const T dnew = nz ? (dpk - ans * dqk) / qk : dans;
    const T diff = dnew - dans;
    const T grad_cond = nz ? (diff < T(0) ? -diff : diff) : T(1);
    dans = dnew;
    pkm2 = pkm1;
    pkm1 = pk;
    qkm2 = qkm1;
    qkm1 = qk;
    dpkm2 = dpkm1;
    dqkm2 = dqkm1;
    dpkm1 = dpk;
    dqkm1 = dqk;
    if ((pk < T(0) ? -pk : pk) > T(1) / eps) {
      pkm2 *= eps;
      pkm1 *= eps;
      qkm2 *= eps;
      qkm1 *= eps;
      dpkm2 *= eps;
      dqkm2 *= eps;
      dpkm1 *= eps;
      dqkm1 *= eps;
    }
    enabled = grad_cond > eps;
  }
  const T dlogax_da = rp_rng_log(x) - rp_digamma(a);
  return (dans + ans * dlogax_da) * x;  // jax negates the continued fraction's -(...) x
}

/* jax.random.poisson(key, lam) (method 'exact'): lam is converted to float32 and every step is
 * float32 whatever the kernel's dtype. lam < 10 (or NaN): Knuth's product of uniforms, one
 * split per factor; else Hormann's transformed rejection, a split in three per round. lam = 0
 * gives 0; a NaN or negative lam gives -1, as jax. */
RAPTOR_RNG_FN int64_t rp_poisson(rp_key key, float lam) {
  if (lam == 0.0f) return 0;
  if (lam != lam || lam < 10.0f) {
    int64_t k = 0;
    float log_prod = 0.0f;
    rp_key r = key;
    while (log_prod > -lam && k < 2147483647) {
      const rp_key s = rp_fold_in(r, 1u);
      r = rp_fold_in(r, 0u);
      k += 1;
      log_prod = log_prod + rp_rng_log(rp_uniform_f32(s));
    }
    return k - 1;
  }
  const float log_lam = rp_rng_log(lam);
  const float b = 0.931f + 2.53f * sqrtf(lam);
  const float a = -0.059f + 0.02483f * b;
  const float inv_alpha = 1.1239f + 1.1328f / (b - 3.4f);
  const float v_r = 0.9277f - 3.6224f / (b - 2.0f);
  rp_key r = key;
  for (int64_t i = 0; i < 2147483647; ++i) {
    const rp_key s0 = rp_fold_in(r, 1u), s1 = rp_fold_in(r, 2u);
    r = rp_fold_in(r, 0u);
    const float u = rp_uniform_f32(s0) - 0.5f;
    const float v = rp_uniform_f32(s1);
    const float us = 0.5f - fabsf(u);
    const float k = floorf((2.0f * a / us + b) * u + lam + 0.43f);
    const float s = rp_rng_log(v * inv_alpha / (a / (us * us) + b));
    const float t = -lam + k * log_lam - rp_rng_lgamma(k + 1.0f);
    const bool accept1 = us >= 0.07f && v <= v_r;
    const bool reject = k < 0.0f || (us < 0.013f && v > us);
    if (accept1 || (!reject && s <= t)) return static_cast<int64_t>(k);
  }
  return -1;
}

/* jax.random.randint(key, (), lo, hi, int32): the bounds clipped to int32, two 32-bit words
 * from split(key) (high, low), combined modulo the span (XLA's unsigned x % 0 is x). */
RAPTOR_RNG_FN uint32_t rp_urem32(uint32_t x, uint32_t m) { return m == 0u ? x : x % m; }

RAPTOR_RNG_FN int64_t rp_randint_i32(rp_key key, int64_t lo, int64_t hi) {
  const int64_t imin = -2147483647LL - 1, imax = 2147483647LL;
  const bool hi_out = hi > imax;
  const int64_t mn = lo < imin ? imin : (lo > imax ? imax : lo);
  const int64_t mx = hi < imin ? imin : (hi > imax ? imax : hi);
  uint32_t h0 = 0, h1 = 0, l0 = 0, l1 = 0;
  rp_threefry2x32(rp_fold_in(key, 0u), &h0, &h1);
  rp_threefry2x32(rp_fold_in(key, 1u), &l0, &l1);
  const uint32_t higher = h0 ^ h1, lower = l0 ^ l1;
  uint32_t span = static_cast<uint32_t>(static_cast<uint64_t>(mx - mn));
  if (mx <= mn) span = 1u;
  if (hi_out && mx > mn) span += 1u;
  uint32_t mult = rp_urem32(65536u, span);
  mult = rp_urem32(mult * mult, span);
  const uint32_t off =
      rp_urem32(rp_urem32(higher, span) * mult + rp_urem32(lower, span), span);
  return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(mn) + off));
}

/* lax.max and lax.min: a NaN in either gives x + y (NaN), as XLA's. Written as nested selects:
 * GCC 12 if-converts these, where `x != x || y != y` (or `|`) around erfinv left the sample
 * loop of a truncated_normal with Param bounds scalar ("control flow in loop"). */
template <class T>
RAPTOR_RNG_HOT T rp_rng_max(T x, T y) {
  const T m = x > y ? x : y;
  return x != x ? x + y : (y != y ? x + y : m);
}
template <class T>
RAPTOR_RNG_HOT T rp_rng_min(T x, T y) {
  const T m = x < y ? x : y;
  return x != x ? x + y : (y != y ? x + y : m);
}

/* jax.random.truncated_normal(key, lo, hi, T): the uniform between erf(lo / sqrt 2) and
 * erf(hi / sqrt 2), sqrt 2 * erfinv of it, clipped to the open interval (lo, hi). Inlined into
 * the sample loop: with bounds the same for every sample (constants, Params) the two erf calls
 * (const, RAPTOR_RNG_LIBM) are hoisted out of it and the loop vectorizes. */
template <class T>
RAPTOR_RNG_HOT T rp_truncated_normal(rp_key key, T lo, T hi) {
  const T sqrt2 = T(1.4142135623730951);
  const T a = rp_rng_erf(lo / sqrt2), b = rp_rng_erf(hi / sqrt2);
  const T f = rp_rng_uniform(key, T(0));
  const T u = rp_rng_max(f * (b - a) + a, a);
  const T out = sqrt2 * rp_rng_erfinv(u);
  return rp_rng_min(rp_rng_max(out, rp_rng_next_up(lo)), rp_rng_next_down(hi));
}

#endif /* RAPTOR_RANDOM_H */
