// Tests of the random draws (runtime/random.h) against jax.random: the subkeys of
// fold_in(fold_in(fold_in(key, step), sample), draw), uniform bit for bit in float64 and
// float32, normal to 1e-13 (float64) and 1e-6 (float32). The table was made with jax 0.12.0.1
// (jax_enable_x64), by this script:
//   for seed in (0, 1, 42, 2**40 + 7, 123456789): key = jax.random.key(seed)
//     sub = fold_in(fold_in(fold_in(key, s), i), j)
//     key_data(key), uniform(sub, float64/float32) as bits, normal(sub, float64/float32)
// Then erfinv in the tails (|u| near 1), where the normal's accuracy is decided, against
// jax.scipy.special.erfinv.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "runtime/random.h"

namespace raptor::runtime {
namespace {

struct JaxDraw {
  uint32_t k0, k1, step, sample, draw;
  uint64_t uniform64_bits;
  uint32_t uniform32_bits;
  double normal64, normal32;
};

const JaxDraw kJax[] = {
    {0u, 0u, 0u, 0u, 0u, 0x3fd0986f32140f14ull, 0x3d92ef70u, -0.6454930670051771,
     -1.4629117250442505},
    {0u, 0u, 3u, 17u, 2u, 0x3facb70a54a6e240ull, 0x3eba5554u, -1.5885236648946421,
     -0.34796756505966187},
    {0u, 0u, 1u, 70000u, 5u, 0x3fee00bd5c482416ull, 0x3f312556u, 1.5348551525006575,
     0.5014591813087463},
    {0u, 0u, 7u, 4095u, 1u, 0x3fe51568633d7da8ull, 0x3e868c14u, 0.40936271833710186,
     -0.6347753405570984},
    {0u, 0u, 2u, 123u, 0u, 0x3fe9c1435e75bbf0ull, 0x3ec7ab38u, 0.8590433291479566,
     -0.2793758809566498},
    {0u, 0u, 0u, 9u, 3u, 0x3fe68b4ab3d29f88ull, 0x3e029860u, 0.5373972951118366,
     -1.1381237506866455},
    {0u, 1u, 0u, 0u, 0u, 0x3fe4bd0fe013e34eull, 0x3e6bc828u, 0.38013893949990407,
     -0.7380048036575317},
    {0u, 1u, 3u, 17u, 2u, 0x3fbe695ae689d790ull, 0x3f17beccu, -1.181031570610104,
     0.23463790118694305},
    {0u, 1u, 1u, 70000u, 5u, 0x3fd896197809655cull, 0x3e8f9a30u, -0.29456959544500533,
     -0.5814361572265625},
    {0u, 1u, 7u, 4095u, 1u, 0x3fe03afd4857b59aull, 0x3e71ecf0u, 0.018050841127359413,
     -0.718399703502655},
    {0u, 1u, 2u, 123u, 0u, 0x3fe73c09d2555094ull, 0x3d9b2750u, 0.6009966825625203,
     -1.4341930150985718},
    {0u, 1u, 0u, 9u, 3u, 0x3fe7c6e14c385cd8ull, 0x3ef9a394u, 0.6527068344481309,
     -0.03114699013531208},
    {0u, 42u, 0u, 0u, 0u, 0x3fe54077696b6fd8ull, 0x3f717d74u, 0.4237322124388363,
     1.583274483680725},
    {0u, 42u, 3u, 17u, 2u, 0x3fda75abe9276a2cull, 0x3f747e18u, -0.21872509408969845,
     1.6959153413772583},
    {0u, 42u, 1u, 70000u, 5u, 0x3fe2a4708dfff0b6ull, 0x3ed54c7cu, 0.20848076884140063,
     -0.210601344704628},
    {0u, 42u, 7u, 4095u, 1u, 0x3fda8ce396baad34ull, 0x3f008750u, -0.21508843999123584,
     0.005175544880330563},
    {0u, 42u, 2u, 123u, 0u, 0x3fda9ffa7e4283a8ull, 0x3ec0e28cu, -0.21210050702471778,
     -0.3140844702720642},
    {0u, 42u, 0u, 9u, 3u, 0x3fc875b584ea2e58ull, 0x3f64b7deu, -0.8738785617168161,
     1.244981050491333},
    {256u, 7u, 0u, 0u, 0u, 0x3fe2c60cf2c187b0ull, 0x3f1a0deeu, 0.21900287549085948,
     0.25794437527656555},
    {256u, 7u, 3u, 17u, 2u, 0x3fef85ca0f3aab3cull, 0x3e25ded8u, 2.172252828509049,
     -0.9863408207893372},
    {256u, 7u, 1u, 70000u, 5u, 0x3fa33463891e3160ull, 0x3f06828eu, -1.78035341954659,
     0.0637858659029007},
    {256u, 7u, 7u, 4095u, 1u, 0x3fdedfd27e189668ull, 0x3dc93720u, -0.04410331500863968,
     -1.291589379310608},
    {256u, 7u, 2u, 123u, 0u, 0x3fea4eedbd84ef2aull, 0x3f750e3eu, 0.923531477312165,
     1.719612956047058},
    {256u, 7u, 0u, 9u, 3u, 0x3fef4014a7e88966ull, 0x3f3e4b9cu, 1.9876058302211181,
     0.6536807417869568},
    {0u, 123456789u, 0u, 0u, 0u, 0x3f61b68148f8a600ull, 0x3e8e911cu, -2.8534714770795544,
     -0.5874496698379517},
    {0u, 123456789u, 3u, 17u, 2u, 0x3fdfb5965b76ac6cull, 0x3f2467e0u, -0.011384822031912961,
     0.3643724322319031},
    {0u, 123456789u, 1u, 70000u, 5u, 0x3fcc3c57eea45ad0ull, 0x3ee19a0cu, -0.7701969480208426,
     -0.14937607944011688},
    {0u, 123456789u, 7u, 4095u, 1u, 0x3fece7f65c823500ull, 0x3f7697b4u, 1.3006783756462237,
     1.789742112159729},
    {0u, 123456789u, 2u, 123u, 0u, 0x3fdd3a840d58e504ull, 0x3dbbf000u, -0.10875975470825487,
     -1.3299560546875},
    {0u, 123456789u, 0u, 9u, 3u, 0x3fdd22bbe26b28b0ull, 0x3f58282eu, -0.11242052623380942,
     1.0125528573989868},
};

TEST(RuntimeRandom, UniformIsJaxBitForBit) {
  for (const JaxDraw& d : kJax) {
    const rp_key sub = rp_subkey(rp_key{d.k0, d.k1}, d.step, d.sample, d.draw);
    const double u64 = rp_uniform_f64(sub);
    const float u32 = rp_uniform_f32(sub);
    uint64_t b64;
    uint32_t b32;
    std::memcpy(&b64, &u64, sizeof b64);
    std::memcpy(&b32, &u32, sizeof b32);
    EXPECT_EQ(b64, d.uniform64_bits) << d.k1 << " " << d.step << " " << d.sample << " " << d.draw;
    EXPECT_EQ(b32, d.uniform32_bits) << d.k1 << " " << d.step << " " << d.sample << " " << d.draw;
  }
}

TEST(RuntimeRandom, NormalIsJaxToAnUlp) {
  for (const JaxDraw& d : kJax) {
    const rp_key sub = rp_subkey(rp_key{d.k0, d.k1}, d.step, d.sample, d.draw);
    EXPECT_NEAR(rp_normal_f64(sub), d.normal64, 1e-13 * std::fabs(d.normal64)) << d.sample;
    EXPECT_NEAR(rp_normal_f32(sub), d.normal32, 1e-6 * std::fabs(d.normal32)) << d.sample;
  }
}

// erfinv in the centre and the tails (u up to nextafter(1, 0)), against
// jax.scipy.special.erfinv (jax 0.12.0.1, float64, jax_accurate_erf_inv=True) to 1e-13
// relative. With jax <= 0.12.0's default (jax_accurate_erf_inv=False: XLA's chlo.erf_inv) jax is
// off the true erfinv (and this one, and SciPy's) by up to 1.6e-11 relative for 1 - |u| in about
// [1e-9, 1e-6]: jax.random.normal is matched to 1e-13 there only with the accurate flag.
TEST(RuntimeRandom, ErfinvIsJaxIncludingTheTails) {
  const double cases[][2] = {
      {0.0, 0.0},
      {1e-300, 8.86226925452758e-301},
      {1e-10, 8.86226925452758e-11},
      {0.1, 0.08885599049425769},
      {0.4999, 0.47682502362542784},
      {0.5, 0.4769362762044699},
      {0.5001, 0.4770475405909757},
      {0.9, 1.163087153676674},
      {0.999, 2.3267537655135246},
      {0.999999999, 4.320005388105362},
      {0.999999999999999, 5.675915739744713},
      {0.9999999999999999, 5.8635847487551676},
      {-0.9999999999999999, -5.8635847487551676},
  };
  for (const auto& c : cases) EXPECT_NEAR(rp_erfinv(c[0]), c[1], 1e-13 * std::fabs(c[1])) << c[0];
}

// float32 erfinv (jax.random.normal's for float32) against jax.scipy.special.erfinv in float32
// (jax 0.12.1, its default jax_accurate_erf_inv=True) from the centre to the last float below 1,
// where 1 - x^2 would cancel, and the edges: bit for bit at these 16 (rp_log_f32 against XLA's
// log moves about 1% of normal draws by an ulp or three, none of these; no libm call is left, so
// the result is the same on every machine). jax <= 0.12.0's default (M. Giles' polynomial) is
// up to 5.8e-6 relative away from these over the floats in [0.99, 1) (at 0x1.ffe962p-1:
// 2.6559753 against 2.6559908).
TEST(RuntimeRandom, ErfinvF32IsJaxsAccurateOneIncludingTheTails) {
  const float cases[][2] = {
      {0.0f, 0.0f},
      {0x1.4484cp-100f, 0x1.1f98dap-100f},  // 1e-30
      {0x1.99999ap-4f, 0x1.6bf442p-4f},     // 0.1
      {0x1p-1f, 0x1.e861fcp-2f},            // 0.5
      {0x1.8p-1f, 0x1.a0789p-1f},           // 0.75
      {0x1.ccccccp-1f, 0x1.29c014p+0f},     // 0.9
      {0x1.e66666p-1f, 0x1.62ca96p+0f},     // 0.95
      {0x1.fae148p-1f, 0x1.d24664p+0f},     // 0.99
      {0x1.ff7ceep-1f, 0x1.29d328p+1f},     // 0.999
      {0x1.fff2e4p-1f, 0x1.6021eep+1f},     // 0.9999
      {0x1.fffebp-1f, 0x1.8fc534p+1f},      // 0.99999
      {0x1.ffffdep-1f, 0x1.ba816cp+1f},     // 0.999999
      {0x1.fffffcp-1f, 0x1.df38dp+1f},      // 1 - 2^-23
      {0x1.fffffep-1f, 0x1.ea8f96p+1f},     // 1 - 2^-24
      {-0x1.fffffep-1f, -0x1.ea8f96p+1f},
      {-0x1.333334p-2f, -0x1.170078p-2f},  // -0.3
  };
  for (const auto& c : cases) {
    EXPECT_EQ(rp_erfinv_f32(c[0]), c[1]) << std::hexfloat << c[0];
  }
  EXPECT_EQ(rp_erfinv_f32(1.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(rp_erfinv_f32(-1.0f), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(rp_erfinv_f32(1.5f)));
  EXPECT_TRUE(std::isnan(rp_erfinv_f32(std::numeric_limits<float>::quiet_NaN())));
}

// The logarithms under erfinv (rp_log_f32 / rp_log_f64: no library call, so sample loops
// vectorize) within 0.9 ulp of the exact value: floats from 2^-26 to 2 (every 61st; the
// erfinv's argument is at least 2^-24), doubles log-uniform from 2^-60 to 2 and densely around
// 1, against long double. The bound is fdlibm's (0.89 and 0.892 ulp measured over every float
// in the range and 4e7 doubles); log(1) is 0.
TEST(RuntimeRandom, LogarithmsUnderErfinvAreWithinAnUlp) {
  const auto ulps_f = [](float got, double exact) {
    const float r = static_cast<float>(exact);
    return std::fabs(got - exact) / (std::nextafter(std::fabs(r), 1.0f / 0.0f) - std::fabs(r));
  };
  uint32_t lo, hi;
  const float flo = 0x1p-26f, fhi = 2.0f;
  std::memcpy(&lo, &flo, 4);
  std::memcpy(&hi, &fhi, 4);
  double worst = 0;
  for (uint32_t b = lo; b <= hi; b += 61) {
    float x;
    std::memcpy(&x, &b, 4);
    if (x != 1.0f) worst = std::max(worst, ulps_f(rp_log_f32(x), std::log(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 0.9);
  EXPECT_EQ(rp_log_f32(1.0f), 0.0f);
  const auto ulps_d = [](double got, long double exact) {
    const double r = static_cast<double>(exact);
    return static_cast<double>(std::fabs(got - exact) /
                               (std::nextafter(std::fabs(r), 1.0 / 0.0) - std::fabs(r)));
  };
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> e(-60.0, 1.0);
  worst = 0;
  for (int i = 0; i < 1000000; ++i) {
    const double x = std::exp2(e(gen));
    if (x != 1.0)
      worst = std::max(worst, ulps_d(rp_log_f64(x), std::log(static_cast<long double>(x))));
  }
  for (int i = -100000; i <= 100000; ++i) {
    const double x = 1.0 + i * 0x1p-44;
    if (x != 1.0)
      worst = std::max(worst, ulps_d(rp_log_f64(x), std::log(static_cast<long double>(x))));
  }
  EXPECT_LE(worst, 0.9);
  EXPECT_EQ(rp_log_f64(1.0), 0.0);
  // erfinv's edges, as jax: +-1 give +-inf, beyond or NaN gives NaN
  EXPECT_EQ(rp_erfinv(1.0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(rp_erfinv(-1.0), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(rp_erfinv(-1.5)));
}

// truncated_normal's open interval: rp_rng_next_up / next_down are std::nextafter toward +-inf,
// bit for bit, at the edges (zeros, subnormals, the largest finite, infinities, NaN) and over
// random bit patterns of both dtypes.
template <class T, class Bits>
void expect_next_is_nextafter(const std::vector<T>& edges) {
  const T inf = std::numeric_limits<T>::infinity();
  const auto same = [](T a, T b) {
    Bits x, y;
    std::memcpy(&x, &a, sizeof a);
    std::memcpy(&y, &b, sizeof b);
    return x == y || (a != a && b != b);
  };
  std::vector<T> xs = edges;
  std::mt19937_64 gen(11);
  for (int i = 0; i < 200000; ++i) {
    const Bits b = static_cast<Bits>(gen());
    T x;
    std::memcpy(&x, &b, sizeof x);
    xs.push_back(x);
  }
  for (const T x : xs) {
    EXPECT_TRUE(same(rp_rng_next_up(x), std::nextafter(x, inf))) << x;
    EXPECT_TRUE(same(rp_rng_next_down(x), std::nextafter(x, -inf))) << x;
  }
}

TEST(RuntimeRandom, NextUpAndDownAreNextafterBitForBit) {
  using LD = std::numeric_limits<double>;
  using LF = std::numeric_limits<float>;
  expect_next_is_nextafter<double, uint64_t>(
      {0.0, -0.0, LD::denorm_min(), -LD::denorm_min(), LD::min(), -LD::min(), LD::max(), -LD::max(),
       LD::infinity(), -LD::infinity(), LD::quiet_NaN(), 1.0, -1.0, 2.0, -2.0, -0.125, 3.0});
  expect_next_is_nextafter<float, uint32_t>({0.0f, -0.0f, LF::denorm_min(), -LF::denorm_min(),
                                             LF::min(), -LF::min(), LF::max(), -LF::max(),
                                             LF::infinity(), -LF::infinity(), LF::quiet_NaN(), 1.0f,
                                             -1.0f, 2.0f, -2.0f, -0.125f, 3.0f});
}

}  // namespace
}  // namespace raptor::runtime
