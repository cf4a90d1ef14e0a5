/* The random draws of hawk's `Random` parameters, as jax.random makes them (issue 11 item 1).
 *
 * Draw j of sample i in step s of a launch with key k is
 *     jax.random.uniform(fold_in(fold_in(fold_in(k, s), i), j), dtype=T)      (bit for bit)
 *     jax.random.normal(<the same subkey>, dtype=T)                          (to ~1 ulp)
 * with jax's default PRNG, threefry2x32 (jax_threefry_partitionable on, the default since jax
 * 0.5); the values in cpp/tests/test_runtime_random.cpp were made with jax 0.12.0.1.
 * Plain C++ over uint32_t/uint64_t and <cmath>, so the host code, the CUDA code (define
 * RAPTOR_RNG_FN as `__device__ inline` before including it; codegen pastes it through
 * runtime/abi_source.hpp) and the interpreter share it.
 * Start at rp_draw_uniform.
 */
#ifndef RAPTOR_RANDOM_H
#define RAPTOR_RANDOM_H

#include <math.h>
#include <stdint.h>

#ifndef RAPTOR_RNG_FN
#define RAPTOR_RNG_FN inline
#endif

/* Bits to float: memcpy on the host, the intrinsics on the device (NVRTC has no <cstring>). */
#ifdef __CUDACC__
#define RP_F64_FROM_BITS(f, bits) ((f) = __longlong_as_double(static_cast<long long>(bits)))
#define RP_F32_FROM_BITS(f, bits) ((f) = __uint_as_float(bits))
#else
#define RP_F64_FROM_BITS(f, bits) __builtin_memcpy(&(f), &(bits), sizeof(f))
#define RP_F32_FROM_BITS(f, bits) __builtin_memcpy(&(f), &(bits), sizeof(f))
#endif

/* A key: the two uint32 words of jax.random.key_data. */
struct rp_key {
  uint32_t k0, k1;
};

RAPTOR_RNG_FN uint32_t rp_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

/* threefry2x32 with 20 rounds (Salmon et al. 2011; jax/_src/random/threefry2x32.py). */
RAPTOR_RNG_FN void rp_threefry2x32(rp_key key, uint32_t* x0, uint32_t* x1) {
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
RAPTOR_RNG_FN rp_key rp_fold_in(rp_key key, uint32_t d) {
  uint32_t a = 0, b = d;
  rp_threefry2x32(key, &a, &b);
  return rp_key{a, b};
}

/* The subkey of draw j of sample i in step s. */
RAPTOR_RNG_FN rp_key rp_subkey(rp_key key, uint32_t step, uint32_t sample, uint32_t draw) {
  return rp_fold_in(rp_fold_in(rp_fold_in(key, step), sample), draw);
}

/* jax.random.uniform(key, (), float64) and float32, on [0, 1). */
RAPTOR_RNG_FN double rp_uniform_f64(rp_key key) {
  uint32_t b0 = 0, b1 = 0;
  rp_threefry2x32(key, &b0, &b1);
  const uint64_t bits = ((static_cast<uint64_t>(b0) << 32) | b1) >> 12 | 0x3FF0000000000000ull;
  double f;
  RP_F64_FROM_BITS(f, bits);
  return f - 1.0;
}

RAPTOR_RNG_FN float rp_uniform_f32(rp_key key) {
  uint32_t b0 = 0, b1 = 0;
  rp_threefry2x32(key, &b0, &b1);
  const uint32_t bits = (b0 ^ b1) >> 9 | 0x3F800000u;
  float f;
  RP_F32_FROM_BITS(f, bits);
  return f - 1.0f;
}

/* erfinv(u) for |u| < 1 in double: a ~2e-3 initial guess (Winitzki), then three Halley steps
 * (cubic convergence: within 4e-16 of the converged value) on erf (|u| <= 0.5) or on erfc with
 * 1 - |u| exact (|u| > 0.5, where erf loses the tail). With f the residual and f' = c e^{-x^2},
 * f'' = -2x f', so a step is x -= d / (1 + x d), d = f / f'. */
RAPTOR_RNG_FN double rp_erfinv(double u) {
  const double au = u < 0 ? -u : u;
  const double a = 0.147, pi = 3.14159265358979323846;
  const double l = log((1.0 - au) * (1.0 + au));
  const double t = 2.0 / (pi * a) + 0.5 * l;
  double x = sqrt(sqrt(t * t - l / a) - t);
  const double c = 1.1283791670955126;  // 2 / sqrt(pi)
  const double q = 1.0 - au;            // exact (Sterbenz) where it is used
  for (int i = 0; i < 3; ++i) {
    const double fp = c * exp(-x * x);
    const double d = au <= 0.5 ? (erf(x) - au) / fp : (q - erfc(x)) / fp;
    x -= d / (1.0 + x * d);
  }
  return u < 0 ? -x : x;
}

/* jax.random.normal(key, (), T): sqrt(2) * erfinv(uniform(key, lo = nextafter(-1, 0), hi = 1)),
 * the uniform's affine map and clamp rounded in T as jax computes them. */
RAPTOR_RNG_FN double rp_normal_f64(rp_key key) {
  const double lo = -(1.0 - 0x1p-53), hi = 1.0;  // nextafter(-1.0, 0.0)
  double u = rp_uniform_f64(key) * (hi - lo) + lo;
  u = u > lo ? u : lo;
  return 1.4142135623730951 * rp_erfinv(u);
}

/* jax's float32 erf_inv (XLA / CHLO: M. Giles' single-precision approximation, evaluated in
 * float), which jax.random.normal uses for float32: the accurate value differs from it by up to
 * ~4e-6 relative in the tails (|z| > 3.5), this one by ~2e-7 (log1pf's and XLA's rounding). */
RAPTOR_RNG_FN float rp_erfinv_f32(float x) {
  const float w0 = -log1pf(-x * x);
  float w, p;
  if (w0 < 5.0f) {
    w = w0 - 2.5f;
    p = 2.81022636e-08f;
    p = 3.43273939e-07f + p * w;
    p = -3.5233877e-06f + p * w;
    p = -4.39150654e-06f + p * w;
    p = 0.00021858087f + p * w;
    p = -0.00125372503f + p * w;
    p = -0.00417768164f + p * w;
    p = 0.246640727f + p * w;
    p = 1.50140941f + p * w;
  } else {
    w = sqrtf(w0) - 3.0f;
    p = -0.000200214257f;
    p = 0.000100950558f + p * w;
    p = 0.00134934322f + p * w;
    p = -0.00367342844f + p * w;
    p = 0.00573950773f + p * w;
    p = -0.0076224613f + p * w;
    p = 0.00943887047f + p * w;
    p = 1.00167406f + p * w;
    p = 2.83297682f + p * w;
  }
  return p * x;
}

RAPTOR_RNG_FN float rp_normal_f32(rp_key key) {
  const float lo = -(1.0f - 0x1p-24f), hi = 1.0f;  // nextafter(-1.0f, 0.0f)
  float u = rp_uniform_f32(key) * (hi - lo) + lo;
  u = u > lo ? u : lo;
  return 1.41421356f * rp_erfinv_f32(u);
}

#endif /* RAPTOR_RANDOM_H */
