// Tests of raptor's own exp, expm1, log, log1p and tanh, sin, cos and tan, atan, atan2, asin and
// acos, pow and hypot (runtime/rp_math.h, rp_trig.h, rp_atan.h, rp_pow.h, rp_hypot.h), the kernel
// language's functions on the host: within one ulp of the exact value (faithful, as glibc's)
// against long double for double (random arguments over the whole range, densely where the methods
// switch, and the subnormal and overflow edges) and against the double C library for float (every
// 61st float, all binades), and C99 Annex F's special values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "runtime/rp_atan.h"
#include "runtime/rp_hypot.h"
#include "runtime/rp_math.h"
#include "runtime/rp_pow.h"
#include "runtime/rp_trig.h"

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kInfF = std::numeric_limits<float>::infinity();

// |got - exact| in units of the double ulp at the exact value (the gap above its rounding;
// subnormal results: 2^-1074).
double ulps(double got, long double exact) {
  const double r = static_cast<double>(exact);
  if (std::isinf(r)) return got == r ? 0.0 : kInf;
  const long double gap =
      static_cast<long double>(std::nextafter(std::fabs(r), kInf)) - std::fabs(r);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) / gap);
}

double ulps_f(float got, double exact) {
  const float r = static_cast<float>(exact);
  if (std::isinf(r)) return got == r ? 0.0 : kInf;
  const double gap = static_cast<double>(std::nextafter(std::fabs(r), kInfF)) - std::fabs(r);
  return std::fabs(static_cast<double>(got) - exact) / gap;
}

// The worst error of f against g (long double) over `n` arguments drawn by `arg`.
template <class F, class G, class A>
double worst_of(F f, G g, A arg, int n, double* at) {
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const double x = arg(i);
    const double u = ulps(f(x), g(static_cast<long double>(x)));
    if (u > worst) {
      worst = u;
      *at = x;
    }
  }
  return worst;
}

TEST(RuntimeMath, ExpIsWithinAnUlp) {
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> wide(-746.0, 710.0), small(-1.0, 1.0), tiny(-40.0, -1.0),
      sub(-746.0, -707.0), top(709.0, 709.8);
  const auto exp_ = [](double x) { return rp_math_exp(x); };
  const auto expl_ = [](long double x) { return std::exp(x); };
  double at = 0;
  EXPECT_LT(worst_of(
                exp_, expl_, [&](int) { return wide(gen); }, 1000000, &at),
            1.0)
      << at;
  EXPECT_LT(worst_of(
                exp_, expl_, [&](int) { return small(gen); }, 500000, &at),
            1.0)
      << at;
  EXPECT_LT(
      worst_of(
          exp_, expl_, [&](int i) { return (i % 2 ? 1 : -1) * std::exp2(tiny(gen)); }, 200000, &at),
      1.0)
      << at;
  EXPECT_LT(worst_of(
                exp_, expl_, [&](int) { return sub(gen); }, 300000, &at),
            1.0)
      << at;
  EXPECT_LT(worst_of(
                exp_, expl_, [&](int) { return top(gen); }, 100000, &at),
            1.0)
      << at;
  // the edges: exp(0) = 1; the largest finite result and the first overflow; the smallest
  // subnormal and the first 0; inf, NaN
  EXPECT_EQ(rp_math_exp(0.0), 1.0);
  EXPECT_EQ(rp_math_exp(-0.0), 1.0);
  EXPECT_EQ(rp_math_exp(0x1.62e42fefa39efp+9), 0x1.fffffffffff2ap+1023);  // as glibc
  EXPECT_EQ(rp_math_exp(0x1.62e42fefa39f0p+9), kInf);
  EXPECT_EQ(rp_math_exp(-745.13), 0x1p-1074);
  EXPECT_EQ(rp_math_exp(-745.14), 0.0);
  EXPECT_EQ(rp_math_exp(kInf), kInf);
  EXPECT_EQ(rp_math_exp(-kInf), 0.0);
  EXPECT_EQ(rp_math_exp(1e300), kInf);
  EXPECT_EQ(rp_math_exp(-1e300), 0.0);
  EXPECT_TRUE(std::isnan(rp_math_exp(std::nan(""))));
}

TEST(RuntimeMath, Expm1IsWithinAnUlp) {
  std::mt19937_64 gen(14);
  std::uniform_real_distribution<double> wide(-45.0, 711.0), mid(-3.0, 3.0), e(-1074.0, 5.0);
  const auto expm1_ = [](double x) { return rp_math_expm1(x); };
  const auto expm1l_ = [](long double x) { return std::expm1(x); };
  double at = 0;
  EXPECT_LT(worst_of(
                expm1_, expm1l_, [&](int) { return wide(gen); }, 1000000, &at),
            1.0)
      << at;
  // around 0 and the switches between fdlibm's forms (k = -1, 0, 1, 2 .. 19, 20 .. 56)
  EXPECT_LT(worst_of(
                expm1_, expm1l_, [&](int) { return mid(gen); }, 1000000, &at),
            1.0)
      << at;
  EXPECT_LT(worst_of(
                expm1_, expm1l_, [&](int i) { return (i % 2 ? 1 : -1) * std::exp2(e(gen)); },
                1000000, &at),
            1.0)
      << at;
  EXPECT_EQ(rp_math_expm1(0.0), 0.0);
  EXPECT_TRUE(std::signbit(rp_math_expm1(-0.0)));
  EXPECT_EQ(rp_math_expm1(0x1p-1074), 0x1p-1074);
  EXPECT_EQ(rp_math_expm1(-1e-300), -1e-300);
  EXPECT_EQ(rp_math_expm1(-40.0), -1.0);
  EXPECT_EQ(rp_math_expm1(-kInf), -1.0);
  EXPECT_EQ(rp_math_expm1(kInf), kInf);
  EXPECT_EQ(rp_math_expm1(0x1.62e42fefa39f0p+9), kInf);
  EXPECT_TRUE(std::isfinite(rp_math_expm1(0x1.62e42fefa39efp+9)));
  EXPECT_TRUE(std::isnan(rp_math_expm1(std::nan(""))));
}

TEST(RuntimeMath, LogIsWithinAnUlp) {
  std::mt19937_64 gen(12);
  std::uniform_real_distribution<double> e(-1074.0, 1024.0), near1(-1e-3, 1e-3);
  const auto log_ = [](double x) { return rp_math_log(x); };
  const auto logl_ = [](long double x) { return std::log(x); };
  double at = 0;
  EXPECT_LT(worst_of(
                log_, logl_, [&](int) { return std::exp2(e(gen)); }, 1000000, &at),
            1.0)
      << at;
  EXPECT_LT(worst_of(
                log_, logl_, [&](int) { return 1.0 + near1(gen); }, 500000, &at),
            1.0)
      << at;
  EXPECT_LT(worst_of(
                log_, logl_, [&](int i) { return 0x1p-1074 * (i + 1); }, 100000, &at),
            1.0)
      << at;
  EXPECT_EQ(rp_math_log(1.0), 0.0);
  EXPECT_EQ(rp_math_log(0.0), -kInf);
  EXPECT_EQ(rp_math_log(-0.0), -kInf);
  EXPECT_EQ(rp_math_log(kInf), kInf);
  EXPECT_TRUE(std::isnan(rp_math_log(-1.0)));
  EXPECT_TRUE(std::isnan(rp_math_log(-kInf)));
  EXPECT_TRUE(std::isnan(rp_math_log(std::nan(""))));
  EXPECT_EQ(rp_math_log(0x1p-1074), std::log(0x1p-1074));
  EXPECT_EQ(rp_math_log(std::numeric_limits<double>::max()),
            std::log(std::numeric_limits<double>::max()));
}

TEST(RuntimeMath, Log1pIsWithinAnUlp) {
  std::mt19937_64 gen(13);
  std::uniform_real_distribution<double> e(-1074.0, 1024.0), mid(-1.0, 2.0), unit(0.0, 1.0);
  const auto log1p_ = [](double x) { return rp_math_log1p(x); };
  const auto log1pl_ = [](long double x) { return std::log1p(x); };
  double at = 0;
  EXPECT_LT(worst_of(
                log1p_, log1pl_, [&](int i) { return (i % 3 ? 1 : -1) * std::exp2(e(gen)); },
                1000000, &at),
            1.0)
      << at;  // (negative ones below -1 give NaN on both sides: skipped by the exact NaN)
  EXPECT_LT(worst_of(
                log1p_, log1pl_, [&](int) { return mid(gen); }, 1000000, &at),
            1.0)
      << at;
  // near -1 (u = 1 + x exact), and the exponential draw's arguments -u, u in [0, 1)
  EXPECT_LT(
      worst_of(
          log1p_, log1pl_, [&](int) { return -1.0 + std::exp2(-60.0 * unit(gen)); }, 300000, &at),
      1.0)
      << at;
  EXPECT_LT(worst_of(
                log1p_, log1pl_,
                [&](int) { return -std::ldexp(std::floor(unit(gen) * 0x1p53), -53); }, 300000, &at),
            1.0)
      << at;
  EXPECT_EQ(rp_math_log1p(0.0), 0.0);
  EXPECT_TRUE(std::signbit(rp_math_log1p(-0.0)));
  EXPECT_EQ(rp_math_log1p(0x1p-1074), 0x1p-1074);
  EXPECT_EQ(rp_math_log1p(-0x1p-1060), -0x1p-1060);
  EXPECT_EQ(rp_math_log1p(-1.0), -kInf);
  EXPECT_EQ(rp_math_log1p(kInf), kInf);
  EXPECT_TRUE(std::isnan(rp_math_log1p(-1.5)));
  EXPECT_TRUE(std::isnan(rp_math_log1p(-kInf)));
  EXPECT_TRUE(std::isnan(rp_math_log1p(std::nan(""))));
  EXPECT_EQ(rp_math_log1p(std::numeric_limits<double>::max()),
            std::log1p(std::numeric_limits<double>::max()));
}

// float: every 61st float of both signs (7e7 arguments), against the double
// library's value.
// sin and cos: the reduction of every binade (Cody-Waite below 2^20 pi/2, Payne-Hanek above and
// the switch between them), the arguments closest to multiples of pi/2 among doubles (the
// reduction's hardest: 6381956970095103 2^797 is within 2^-61 of one), and their neighbours.
TEST(RuntimeMath, SinCosAreWithinAnUlp) {
  std::mt19937_64 gen(13);
  std::uniform_real_distribution<double> small(-10.0, 10.0), medium(-2e6, 2e6);
  const auto sin_ = [](double x) { return rp_math_sin(x); };
  const auto cos_ = [](double x) { return rp_math_cos(x); };
  const auto sinl_ = [](long double x) { return std::sin(x); };
  const auto cosl_ = [](long double x) { return std::cos(x); };
  const auto any_binade = [&](int) {  // a random finite double of random exponent, both signs
    uint64_t b = gen() & 0xFFEFFFFFFFFFFFFFull;
    if ((b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull) b ^= 0x0010000000000000ull;
    double x;
    std::memcpy(&x, &b, sizeof x);
    return x;
  };
  double at = 0;
  for (const auto& [f, g, name] :
       {std::tuple{+sin_, +sinl_, "sin"}, std::tuple{+cos_, +cosl_, "cos"}}) {
    EXPECT_LT(worst_of(
                  f, g, [&](int) { return small(gen); }, 300000, &at),
              1.0)
        << name << " at " << at;
    EXPECT_LT(worst_of(
                  f, g, [&](int) { return medium(gen); }, 300000, &at),
              1.0)
        << name << " at " << at;
    EXPECT_LT(worst_of(f, g, any_binade, 300000, &at), 1.0) << name << " at " << at;
    const double hard[] = {6381956970095103.0 * 0x1p797,
                           0x1.6ac5b262ca1ffp+849,
                           5706749818261733.0,
                           0x1.921fb54442d18p0,
                           0x1.921fb54442d18p1,
                           0x1.921fb54442d18p19,
                           0x1.921fb54442d18p20,
                           1e22,
                           0x1.fffffffffffffp1023,
                           0x1p1023,
                           355.0,
                           103993.0,
                           0x1p20,
                           0x1p-27,
                           0x1p-1022,
                           0x1p-1074};
    for (const double x0 : hard)
      for (const double x : {x0, -x0})
        EXPECT_LT(worst_of(
                      f, g,
                      [&](int i) {
                        double y = x;
                        for (int j = 0; j < i % 64; ++j) y = std::nextafter(y, i < 64 ? 0.0 : kInf);
                        return y;
                      },
                      128, &at),
                  1.0)
            << name << " at " << at;
  }
  EXPECT_EQ(std::signbit(rp_math_sin(-0.0)), true);
  EXPECT_EQ(rp_math_sin(0.0), 0.0);
  EXPECT_EQ(rp_math_cos(-0.0), 1.0);
  EXPECT_EQ(rp_math_sin(0x1p-1074), 0x1p-1074);
  for (const double x : {kInf, -kInf, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_TRUE(std::isnan(rp_math_sin(x))) << x;
    EXPECT_TRUE(std::isnan(rp_math_cos(x))) << x;
  }
}

// tan against long double: arguments on [-4, 4], up to 1e6, over every binade below 2^50 (the
// Cody-Waite and the Payne-Hanek reductions) and within 1e-9 of multiples of pi/2 (the poles and
// zeros, where the reduction cancels); C99's special values.
TEST(RuntimeMath, TanIsWithinAnUlp) {
  std::mt19937_64 gen(13);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::uniform_int_distribution<int> e(-60, 50);
  double at = 0;
  const double worst =
      worst_of([](double x) { return rp_math_tan(x); }, [](long double x) { return std::tan(x); },
               [&](int i) {
                 switch (i % 4) {
                   case 0:
                     return 4.0 * u(gen);
                   case 1:
                     return 1e6 * u(gen);
                   case 2:
                     return std::ldexp(u(gen), e(gen));
                   default:
                     return std::rint(200.0 * u(gen)) * 0x1.921fb54442d18p0 + 1e-9 * u(gen);
                 }
               },
               3000000, &at);
  EXPECT_LT(worst, 1.0) << "tan(" << at << ")";
  EXPECT_TRUE(std::signbit(rp_math_tan(-0.0)));
  EXPECT_EQ(rp_math_tan(0x1p-40), 0x1p-40);
  EXPECT_TRUE(std::isnan(rp_math_tan(kInf)) && std::isnan(rp_math_tan(-kInf)));
  EXPECT_TRUE(std::isnan(rp_math_tan(std::nan(""))));
  EXPECT_EQ(rp_math_tan(0x1.921fb54442d18p0), std::tan(0x1.921fb54442d18p0));  // pi/2 rounded
}

TEST(RuntimeMath, TanhIsWithinAnUlp) {
  std::mt19937_64 gen(31);
  std::uniform_real_distribution<double> wide(-25.0, 25.0), seam(0.5, 0.6), e(-1074.0, 6.0);
  const auto tanh_ = [](double x) { return rp_math_tanh(x); };
  const auto tanhl_ = [](long double x) { return std::tanh(x); };
  double at = 0;
  EXPECT_LT(worst_of(
                tanh_, tanhl_, [&](int) { return wide(gen); }, 1000000, &at),
            1.0)
      << at;
  // the two forms meet at 0.55: the series' last term and expm1's error are largest there
  EXPECT_LT(worst_of(
                tanh_, tanhl_, [&](int i) { return (i % 2 ? 1 : -1) * seam(gen); }, 1000000, &at),
            1.0)
      << at;
  EXPECT_LT(
      worst_of(
          tanh_, tanhl_, [&](int i) { return (i % 2 ? 1 : -1) * std::exp2(e(gen)); }, 1000000, &at),
      1.0)
      << at;
  EXPECT_EQ(rp_math_tanh(0.0), 0.0);
  EXPECT_TRUE(std::signbit(rp_math_tanh(-0.0)));
  EXPECT_EQ(rp_math_tanh(0x1p-1074), 0x1p-1074);
  EXPECT_EQ(rp_math_tanh(kInf), 1.0);
  EXPECT_EQ(rp_math_tanh(-kInf), -1.0);
  EXPECT_EQ(rp_math_tanh(22.0), 1.0);
  EXPECT_EQ(rp_math_tanh(-1e300), -1.0);
  EXPECT_TRUE(std::isnan(rp_math_tanh(std::nan(""))));
}

// The division's residual n - q d under tanh (n = 2) and atan2: Dekker's product where the
// build has no FMA (this test binary's), an fma where it has (the kernels built with
// -march=native): exactly the residual either way, so the generated code and the interpreter
// agree bit for bit.
TEST(RuntimeMath, DivisionResidualIsExact) {
  std::mt19937_64 gen(32);
  std::uniform_real_distribution<double> t(0.0, 1e19), m(-1.0, 1.0);
  std::uniform_int_distribution<int> e(-300, 300);
  for (int i = 0; i < 1000000; ++i) {
    const double d = t(gen) * (i % 3 == 0 ? 1e-19 : 1.0) + 2.0, q = 2.0 / d;
    ASSERT_EQ(rp_math_div_residual(q, d, 2.0), std::fma(-q, d, 2.0)) << d;
    const double n2 = std::ldexp(m(gen), e(gen)), d2 = std::ldexp(std::fabs(m(gen)) + 0.5, e(gen));
    const double q2 = n2 / d2;
    ASSERT_EQ(rp_math_div_residual(q2, d2, n2), std::fma(-q2, d2, n2)) << n2 << " / " << d2;
  }
}

// atan: fdlibm's forms, within an ulp over every range they cover (0.84 ulp measured; glibc's
// 0.52), odd, +-pi/2 at +-inf.
TEST(RuntimeMath, AtanIsWithinAnUlp) {
  std::mt19937_64 gen(41);
  std::uniform_real_distribution<double> near(-3.0, 3.0), e(-1074.0, 1023.0);
  const auto atan_ = [](double x) { return rp_math_atan(x); };
  const auto atanl_ = [](long double x) { return std::atan(x); };
  double at = 0;
  EXPECT_LT(worst_of(
                atan_, atanl_, [&](int) { return near(gen); }, 1000000, &at),
            1.0)
      << at;
  EXPECT_LT(
      worst_of(
          atan_, atanl_, [&](int i) { return (i % 2 ? 1 : -1) * std::exp2(e(gen)); }, 1000000, &at),
      1.0)
      << at;
  // the forms' edges: 7/16, 11/16, 19/16, 39/16
  for (const double edge : {0.4375, 0.6875, 1.1875, 2.4375})
    for (int k = -50; k <= 50; ++k) {
      const double x = edge + k * 0x1p-52;
      EXPECT_LT(ulps(rp_math_atan(x), std::atan(static_cast<long double>(x))), 1.0) << x;
    }
  EXPECT_EQ(rp_math_atan(0.0), 0.0);
  EXPECT_TRUE(std::signbit(rp_math_atan(-0.0)));
  EXPECT_EQ(rp_math_atan(0x1p-1074), 0x1p-1074);
  EXPECT_EQ(rp_math_atan(kInf), std::atan(kInf));
  EXPECT_EQ(rp_math_atan(-kInf), -std::atan(kInf));
  EXPECT_EQ(rp_math_atan(1e300), std::atan(1e300));
  EXPECT_TRUE(std::isnan(rp_math_atan(std::nan(""))));
}

// atan2: within an ulp over pairs in every quadrant and of every ratio (0.84 ulp measured;
// fdlibm's own reaches 1.5, glibc's 0.52); on zeros, infinities, NaNs and ratios beyond 2^+-60
// glibc's bits.
TEST(RuntimeMath, Atan2IsWithinAnUlp) {
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<double> u(-5.0, 5.0), m(-1.0, 1.0);
  std::uniform_int_distribution<int> e(-70, 70), far(-1000, 1000);
  double worst = 0, wy = 0, wx = 0;
  for (int i = 0; i < 2000000; ++i) {
    const int kind = i % 3;
    const double y = kind == 0 ? u(gen) : std::ldexp(m(gen), kind == 1 ? e(gen) : far(gen));
    const double x = kind == 0 ? u(gen) : std::ldexp(m(gen), kind == 1 ? e(gen) : far(gen));
    const double w = ulps(rp_math_atan2(y, x),
                          std::atan2(static_cast<long double>(y), static_cast<long double>(x)));
    if (w > worst) {
      worst = w;
      wy = y;
      wx = x;
    }
  }
  EXPECT_LT(worst, 1.0) << "atan2(" << wy << ", " << wx << ")";
  const double vals[] = {0.0,          -0.0,   1.0,     -1.0,  0.5,    -3.0,      kInf,      -kInf,
                         std::nan(""), 1e-300, -1e-300, 1e300, -1e300, 0x1p-1074, -0x1p-1074};
  for (const double y : vals)
    for (const double x : vals) {
      const double got = rp_math_atan2(y, x), want = std::atan2(y, x);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << y << ", " << x;
        continue;
      }
      const double r = std::fabs(y / x);
      if (y == 0.0 || x == 0.0 || std::isinf(y) || std::isinf(x) || r > 0x1p60 || r < 0x1p-60) {
        EXPECT_EQ(got, want) << "atan2(" << y << ", " << x << ")";
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << "atan2(" << y << ", " << x << ")";
      } else {  // ordinary pairs: within an ulp, as above
        EXPECT_LT(ulps(got, std::atan2(static_cast<long double>(y), static_cast<long double>(x))),
                  1.0)
            << "atan2(" << y << ", " << x << ")";
      }
    }
}

// pow against long double over pairs where the result is neither 0 nor +inf nor exact: moderate
// x and y; x over the whole range (subnormals too) with |y| <= 1; x near 1 with huge y; results
// near the overflow and underflow thresholds (z = y log2 x in [-1080, 1030]); negative x with
// integer y. Normal results within 0.7 ulp, subnormal ones (rounded twice) within an ulp.
TEST(RuntimeMath, PowIsWithinAnUlp) {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double worst = 0, worst_sub = 0, wx = 0, wy = 0;
  for (int i = 0; i < 1500000; ++i) {
    const int kind = i % 5;
    double x, y;
    if (kind == 0) {
      x = 4.0 * u(gen), y = 40.0 * (u(gen) - 0.5);
    } else if (kind == 1) {
      x = std::exp2(2150.0 * (u(gen) - 0.5)) * (1.0 + u(gen)), y = 2.0 * (u(gen) - 0.5);
    } else if (kind == 2) {
      x = 1.0 + 1e-6 * (u(gen) - 0.5), y = 1e9 * (u(gen) - 0.5);
    } else if (kind == 3) {
      x = 1.5 + 6.0 * u(gen), y = (-1080.0 + 2110.0 * u(gen)) / std::log2(x);
    } else {
      x = -std::exp2(60.0 * (u(gen) - 0.5)), y = std::rint(70.0 * (u(gen) - 0.5));
    }
    const long double exact = std::pow(static_cast<long double>(x), static_cast<long double>(y));
    const double got = rp_math_pow(x, y);
    const double r = static_cast<double>(exact);
    if (std::isinf(r) || r == 0.0) {
      EXPECT_EQ(got, r) << "pow(" << x << ", " << y << ")";
      continue;
    }
    const double w = ulps(got, exact);
    if (std::fabs(r) < 0x1p-1022) {
      worst_sub = std::max(worst_sub, w);
    } else if (w > worst) {
      worst = w;
      wx = x;
      wy = y;
    }
  }
  EXPECT_LT(worst, 0.7) << "pow(" << wx << ", " << wy << ")";
  EXPECT_LT(worst_sub, 1.0);
  // integer powers of integers: exact wherever the result is a double
  for (int b = -30; b <= 30; ++b)
    for (int n = -40; n <= 60; ++n) {
      const long double exact = std::pow(static_cast<long double>(b), static_cast<long double>(n));
      const double r = static_cast<double>(exact);
      if (static_cast<long double>(r) == exact && std::isfinite(r))
        EXPECT_EQ(rp_math_pow(double(b), double(n)), r) << b << " ** " << n;
    }
  // the special arguments: glibc's bits (the sign of zeros and infinities, 1 for y = 0 or
  // x = 1 whatever the other, NaN for a negative x and a y that is not an integer)
  const double vals[] = {
      0.0,    -0.0,        1.0,        -1.0,         0.5,          -0.5,
      2.0,    -3.0,        2.5,        -2.5,         kInf,         -kInf,
      1e308,  0x1p-1074,   -0x1p-1074, 0x1p53 + 2.0, 0x1p52 + 1.0, -(0x1p52 + 1.0),
      0x1p64, std::nan("")};
  for (const double x : vals)
    for (const double y : vals) {
      const double got = rp_math_pow(x, y), want = std::pow(x, y);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << "pow(" << x << ", " << y << ")";
      } else if (want == 0.0 || std::isinf(want) || std::fabs(want) == 1.0) {
        EXPECT_EQ(got, want) << "pow(" << x << ", " << y << ")";
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << "pow(" << x << ", " << y << ")";
      } else {  // ordinary pairs: within an ulp
        EXPECT_LT(ulps(got, std::pow(static_cast<long double>(x), static_cast<long double>(y))),
                  1.0)
            << "pow(" << x << ", " << y << ")";
      }
    }
}

// hypot against long double: pairs of every ratio and magnitude (the scaled ranges, overflowing
// and subnormal results); normal results correctly rounded but for a hair (0.5005 ulp measured),
// subnormal ones (rounded twice) within an ulp; the special arguments glibc's bits.
TEST(RuntimeMath, HypotIsCorrectlyRoundedButForAHair) {
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  double worst = 0, worst_sub = 0, wx = 0, wy = 0;
  for (int i = 0; i < 2000000; ++i) {
    const int kind = i % 4;
    const double x =
        std::ldexp(u(gen), kind == 0 ? 0 : static_cast<int>(u(gen) * (kind == 1 ? 60 : 1080)));
    const double y = kind == 3 ? std::ldexp(u(gen), static_cast<int>(u(gen) * 1080))
                               : x * u(gen) * (kind == 2 ? 1e-5 : 3.0);
    const long double exact =
        std::sqrt(static_cast<long double>(x) * x + static_cast<long double>(y) * y);
    const double got = rp_math_hypot(x, y);
    const double w = ulps(got, exact);
    if (static_cast<double>(exact) < 0x1p-1022) {
      worst_sub = std::max(worst_sub, w);
    } else if (w > worst) {
      worst = w;
      wx = x;
      wy = y;
    }
  }
  EXPECT_LT(worst, 0.501) << "hypot(" << wx << ", " << wy << ")";
  EXPECT_LT(worst_sub, 1.0);
  EXPECT_EQ(rp_math_hypot(3.0, 4.0), 5.0);
  EXPECT_EQ(rp_math_hypot(1.7976931348623157e308, 1.7976931348623157e308), kInf);
  EXPECT_EQ(rp_math_hypot(1e308, 1e308), std::hypot(1e308, 1e308));
  const double vals[] = {0.0,          -0.0,  1.0,    -3.0,   kInf,      -kInf,
                         std::nan(""), 1e308, 1e-300, 3e-320, 0x1p-1074, 0x1.fffffffffffffp+1023};
  for (const double x : vals)
    for (const double y : vals) {
      const double got = rp_math_hypot(x, y), want = std::hypot(x, y);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << "hypot(" << x << ", " << y << ")";
      } else {
        EXPECT_EQ(got, want) << "hypot(" << x << ", " << y << ")";
        EXPECT_FALSE(std::signbit(got)) << "hypot(" << x << ", " << y << ")";
      }
    }
}

// asin and acos against long double: uniform on [-1, 1], within 2^-50 of +-1 (the square root's
// form) and down to 2^-60 (the polynomial's); glibc's bits at +-0, +-1, beyond +-1 (NaN) and
// NaN.
TEST(RuntimeMath, AsinAcosAreWithinAnUlp) {
  std::mt19937_64 gen(17);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  double worst_asin = 0, worst_acos = 0, at_asin = 0, at_acos = 0;
  for (int i = 0; i < 3000000; ++i) {
    const double m = u(gen);
    const double x =
        i % 3 == 0 ? m
        : i % 3 == 1
            ? std::copysign(
                  1.0 - std::ldexp(std::fabs(u(gen)), -static_cast<int>(std::fabs(m) * 50)), m)
            : std::ldexp(m, -static_cast<int>(std::fabs(u(gen)) * 60));
    const double a = ulps(rp_math_asin(x), std::asin(static_cast<long double>(x)));
    const double c = ulps(rp_math_acos(x), std::acos(static_cast<long double>(x)));
    if (a > worst_asin) worst_asin = a, at_asin = x;
    if (c > worst_acos) worst_acos = c, at_acos = x;
  }
  EXPECT_LT(worst_asin, 1.0) << "asin(" << at_asin << ")";
  EXPECT_LT(worst_acos, 1.0) << "acos(" << at_acos << ")";
  const double vals[] = {0.0, -0.0, 1.0,  -1.0,  0.5,          -0.5,
                         2.0, -2.0, kInf, -kInf, std::nan(""), 0x1p-1074};
  for (const double x : vals) {
    for (const bool is_acos : {false, true}) {
      const double got = is_acos ? rp_math_acos(x) : rp_math_asin(x);
      const double want = is_acos ? std::acos(x) : std::asin(x);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << (is_acos ? "acos(" : "asin(") << x << ")";
      } else {
        EXPECT_EQ(got, want) << (is_acos ? "acos(" : "asin(") << x << ")";
        EXPECT_EQ(std::signbit(got), std::signbit(want))
            << (is_acos ? "acos(" : "asin(") << x << ")";
      }
    }
  }
}

// Calls f(x, bits) for every 61st float x (its bits), NaNs left out: every binade, both signs.
// The float versions' sweep, split into three tests so that ctest runs them side by side.
template <class F>
void every_61st_float(F f) {
  for (uint64_t b = 0; b < 0x100000000ull; b += 61) {
    const uint32_t bits = static_cast<uint32_t>(b);
    float x;
    std::memcpy(&x, &bits, 4);
    if (!std::isnan(x)) f(x, bits);
  }
}

// A float from another binade than x (x's bits scrambled): the second argument of the sweeps of
// atan2, hypot and pow, so that every ratio and quadrant is met.
float partner_of(uint32_t bits) {
  const uint32_t ybits = (bits * 2654435761u) ^ 0x5A5A5A5Au;
  float y;
  std::memcpy(&y, &ybits, 4);
  return y;
}

TEST(RuntimeMath, FloatExpLogTanhAreWithinAnUlpOfEveryFloat) {
  double worst_exp = 0, worst_log = 0, worst_log1p = 0, worst_expm1 = 0, worst_tanh = 0;
  every_61st_float([&](float x, uint32_t) {
    const double xd = x;
    if (xd > -110.0 && xd < 100.0) {
      worst_exp = std::max(worst_exp, ulps_f(rp_math_exp(x), std::exp(xd)));
      worst_expm1 = std::max(worst_expm1, ulps_f(rp_math_expm1(x), std::expm1(xd)));
    }
    if (xd > 0.0) worst_log = std::max(worst_log, ulps_f(rp_math_log(x), std::log(xd)));
    if (xd > -1.0) worst_log1p = std::max(worst_log1p, ulps_f(rp_math_log1p(x), std::log1p(xd)));
    worst_tanh = std::max(worst_tanh, ulps_f(rp_math_tanh(x), std::tanh(xd)));
  });
  EXPECT_LT(worst_exp, 1.0);
  EXPECT_LT(worst_log, 1.0);
  EXPECT_LT(worst_log1p, 1.0);
  EXPECT_LT(worst_expm1, 1.0);
  EXPECT_LT(worst_tanh, 1.0);
  EXPECT_TRUE(std::signbit(rp_math_tanh(-0.0f)));
  EXPECT_EQ(rp_math_tanh(-kInfF), -1.0f);
  EXPECT_EQ(rp_math_expm1(-kInfF), -1.0f);
  EXPECT_TRUE(std::signbit(rp_math_expm1(-0.0f)));
  EXPECT_EQ(rp_math_exp(-kInfF), 0.0f);
  EXPECT_EQ(rp_math_exp(kInfF), kInfF);
  EXPECT_EQ(rp_math_exp(89.0f), kInfF);
  EXPECT_EQ(rp_math_log(0.0f), -kInfF);
  EXPECT_EQ(rp_math_log1p(-1.0f), -kInfF);
  EXPECT_TRUE(std::signbit(rp_math_log1p(-0.0f)));
  EXPECT_TRUE(std::isnan(rp_math_log(-1.0f)));
}

TEST(RuntimeMath, FloatTrigAreWithinAnUlpOfEveryFloat) {
  double worst_sin = 0, worst_cos = 0, worst_tan = 0, worst_atan = 0, worst_atan2 = 0,
         worst_asin = 0, worst_acos = 0;
  every_61st_float([&](float x, uint32_t bits) {
    const double xd = x;
    if (std::isfinite(x)) {  // every binade: sin and cos reduce every float exactly
      worst_sin = std::max(worst_sin, ulps_f(rp_math_sin(x), std::sin(xd)));
      worst_cos = std::max(worst_cos, ulps_f(rp_math_cos(x), std::cos(xd)));
      worst_tan = std::max(worst_tan, ulps_f(rp_math_tan(x), std::tan(xd)));
      const float y = partner_of(bits);
      if (std::isfinite(y))
        worst_atan2 = std::max(worst_atan2, ulps_f(rp_math_atan2(y, x), std::atan2(double(y), xd)));
    }
    worst_atan = std::max(worst_atan, ulps_f(rp_math_atan(x), std::atan(xd)));
    if (xd >= -1.0 && xd <= 1.0) {
      worst_asin = std::max(worst_asin, ulps_f(rp_math_asin(x), std::asin(xd)));
      worst_acos = std::max(worst_acos, ulps_f(rp_math_acos(x), std::acos(xd)));
    }
  });
  EXPECT_LT(worst_sin, 1.0);
  EXPECT_LT(worst_cos, 1.0);
  EXPECT_LT(worst_tan, 1.0);
  EXPECT_LT(worst_atan, 1.0);
  EXPECT_LT(worst_atan2, 1.0);
  EXPECT_LT(worst_asin, 1.0);
  EXPECT_LT(worst_acos, 1.0);
  EXPECT_TRUE(std::isnan(rp_math_asin(1.5f)));
  EXPECT_EQ(rp_math_acos(1.0f), 0.0f);
  EXPECT_TRUE(std::signbit(rp_math_tan(-0.0f)));
  EXPECT_TRUE(std::isnan(rp_math_tan(kInfF)));
  EXPECT_TRUE(std::signbit(rp_math_atan(-0.0f)));
  EXPECT_EQ(rp_math_atan2(0.0f, -1.0f), static_cast<float>(std::atan2(0.0, -1.0)));
  EXPECT_TRUE(std::signbit(rp_math_sin(-0.0f)));
  EXPECT_EQ(rp_math_cos(-0.0f), 1.0f);
  EXPECT_EQ(rp_math_sin(0x1p-149f), 0x1p-149f);
  EXPECT_TRUE(std::isnan(rp_math_sin(kInfF)) && std::isnan(rp_math_cos(-kInfF)));
}

TEST(RuntimeMath, FloatPowHypotAreWithinAnUlpOfEveryFloat) {
  double worst_pow = 0, worst_hypot = 0;
  every_61st_float([&](float x, uint32_t bits) {
    if (!std::isfinite(x)) return;
    const double xd = x;
    const float y = partner_of(bits);
    if (!std::isfinite(y)) return;
    worst_hypot = std::max(worst_hypot, ulps_f(rp_math_hypot(y, x), std::hypot(double(y), xd)));
    // pow of |x| and an exponent keeping |y log|x|| within float's range
    const double ax = std::fabs(xd);
    if (ax > 0.0) {
      const double lx = std::log(ax);
      const float e =
          lx == 0.0 ? y : static_cast<float>(std::fmod(double(y), 100.0 / std::fabs(lx)));
      const double exact = std::pow(ax, double(e));
      if (exact > 0x1p-126 && exact < 0x1p127)
        worst_pow = std::max(worst_pow, ulps_f(rp_math_pow(std::fabs(x), e), exact));
    }
  });
  EXPECT_LT(worst_pow, 1.0);
  EXPECT_LT(worst_hypot, 0.501);
  EXPECT_EQ(rp_math_hypot(kInfF, std::nanf("")), kInfF);
  EXPECT_EQ(rp_math_hypot(3e38f, 3e38f), kInfF);
  EXPECT_EQ(rp_math_pow(-2.0f, 3.0f), -8.0f);
  EXPECT_TRUE(std::isnan(rp_math_pow(-2.0f, 0.5f)));
  EXPECT_EQ(rp_math_pow(-0.0f, -3.0f), -kInfF);
  EXPECT_EQ(rp_math_pow(std::nanf(""), 0.0f), 1.0f);
  EXPECT_EQ(rp_math_pow(2.0f, 128.0f), kInfF);
  EXPECT_EQ(rp_math_pow(2.0f, -149.0f), 0x1p-149f);
}

}  // namespace
