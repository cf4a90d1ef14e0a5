// Tests of the front end's compile-time integers (ir/lower_int.hpp): exact arithmetic beyond
// int64, Python's floor division and modulo, float(int) correctly rounded, int / int, exact
// comparisons, and the refusals (too large, division by zero) as SourceErrors at the line.
// References: __int128 arithmetic and GCC's correctly rounded __int128 -> double conversion
// over random operands, and the kernel of issue 10 run by the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "common/error.hpp"
#include "ir/interp.hpp"
#include "ir/lower_int.hpp"
#include "test_util_spec.hpp"

namespace raptor::testing {
namespace {

using ir::front::BigInt;
using ir::front::IntRangeError;
using i128 = __int128;

std::string str128(i128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  unsigned __int128 m = neg ? -static_cast<unsigned __int128>(v) : v;
  std::string s;
  while (m) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  }
  return neg ? "-" + s : s;
}

BigInt big(i128 v) {
  return v < 0 ? -BigInt::parse(str128(v).substr(1)) : BigInt::parse(str128(v));
}

i128 floordiv128(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

i128 mod128(i128 a, i128 b) { return a - b * floordiv128(a, b); }

TEST(LowerConstants, ArithmeticMatchesInt128) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    // Operands up to 62 bits, so that + - * of two stay within __int128.
    const int bits_a = static_cast<int>(rng() % 63), bits_b = static_cast<int>(rng() % 63);
    const i128 a = static_cast<i128>(rng() >> (64 - std::max(bits_a, 1))) * (rng() & 1 ? 1 : -1);
    const i128 b = static_cast<i128>(rng() >> (64 - std::max(bits_b, 1))) * (rng() & 1 ? 1 : -1);
    const BigInt x = big(a), y = big(b);
    EXPECT_EQ((x + y).to_string(), str128(a + b));
    EXPECT_EQ((x - y).to_string(), str128(a - b));
    EXPECT_EQ((x * y).to_string(), str128(a * b));
    EXPECT_EQ(ir::front::compare(x, y), (a > b) - (a < b));
    if (b != 0) {
      EXPECT_EQ(BigInt::floordiv(x * y + x, y).to_string(), str128(floordiv128(a * b + a, b)));
      EXPECT_EQ(BigInt::mod(x * y + x, y).to_string(), str128(mod128(a * b + a, b)));
      EXPECT_EQ(BigInt::floordiv(x, y).to_string(), str128(floordiv128(a, b)));
      EXPECT_EQ(BigInt::mod(x, y).to_string(), str128(mod128(a, b)));
    }
    // float(int): correctly rounded, as GCC's __int128 conversion.
    EXPECT_EQ((x * y).to_double(), static_cast<double>(a * b)) << str128(a * b);
    EXPECT_EQ((x * y).to_int64().has_value(),
              a * b >= INT64_MIN && a * b <= static_cast<i128>(INT64_MAX));
  }
}

TEST(LowerConstants, PythonFloorSemantics) {
  // Python: -7 // 2 == -4, -7 % 2 == 1, 7 // -2 == -4, 7 % -2 == -1, -7 // -2 == 3.
  EXPECT_EQ(BigInt::floordiv(BigInt(-7), BigInt(2)).to_int64(), floordiv128(-7, 2));
  EXPECT_EQ(BigInt::mod(BigInt(-7), BigInt(2)).to_int64(), mod128(-7, 2));
  EXPECT_EQ(BigInt::floordiv(BigInt(7), BigInt(-2)).to_int64(), floordiv128(7, -2));
  EXPECT_EQ(BigInt::mod(BigInt(7), BigInt(-2)).to_int64(), mod128(7, -2));
  EXPECT_EQ(BigInt::floordiv(BigInt(-7), BigInt(-2)).to_int64(), floordiv128(-7, -2));
  EXPECT_EQ(mod128(-7, 2), 1);
  EXPECT_THROW(BigInt::floordiv(BigInt(1), BigInt(0)), std::domain_error);
}

TEST(LowerConstants, PowerAndRoundingAtTheEdges) {
  i128 p = 1;
  for (int e = 0; e <= 80; ++e) {  // 3**80 < 2**127
    EXPECT_EQ(BigInt::pow(BigInt(3), e).to_string(), str128(p));
    EXPECT_EQ(BigInt::pow(BigInt(3), e).to_double(), static_cast<double>(p));
    EXPECT_EQ(BigInt::pow(BigInt(-3), e).to_double(), static_cast<double>(e % 2 ? -p : p));
    if (e < 80) p *= 3;  // 3**81 would overflow the reference (UB, caught by UBSan)
  }
  // Half-way cases round to even: 2**53 + 1 -> 2**53, 2**53 + 3 -> 2**53 + 4.
  const BigInt two53 = BigInt::pow(BigInt(2), 53);
  EXPECT_EQ((two53 + BigInt(1)).to_double(), 9007199254740992.0);
  EXPECT_EQ((two53 + BigInt(3)).to_double(), 9007199254740996.0);
  // The largest finite double, and the first integer whose float overflows.
  const BigInt max_finite = BigInt::pow(BigInt(2), 1024) - BigInt::pow(BigInt(2), 971);
  EXPECT_EQ(max_finite.to_double(), std::numeric_limits<double>::max());
  // Just below the half-way point to 2**1024 still rounds down; at it, overflows (Python).
  EXPECT_EQ((max_finite + BigInt::pow(BigInt(2), 969)).to_double(),
            std::numeric_limits<double>::max());
  EXPECT_THROW((max_finite + BigInt::pow(BigInt(2), 970)).to_double(), IntRangeError);
  EXPECT_THROW(BigInt::pow(BigInt(2), 20000), IntRangeError);
  EXPECT_EQ(BigInt::pow(BigInt(-1), 1000001).to_int64(), -1);
}

TEST(LowerConstants, TrueDivisionIsCorrectlyRounded) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) {
    // Reference: both operands exact in double (< 2**53), one IEEE division.
    const int64_t a = static_cast<int64_t>(rng() >> 11) * (rng() & 1 ? 1 : -1);
    const int64_t b = static_cast<int64_t>((rng() >> (11 + rng() % 40)) | 1);
    EXPECT_EQ(BigInt::true_divide(BigInt(a), BigInt(b)),
              static_cast<double>(a) / static_cast<double>(b));
    // Scaling both by 2**k changes nothing in the exact quotient: the long path agrees.
    const BigInt s = BigInt::pow(BigInt(2), 64 + static_cast<int64_t>(rng() % 200));
    EXPECT_EQ(BigInt::true_divide(BigInt(a) * s, BigInt(b) * s),
              static_cast<double>(a) / static_cast<double>(b));
  }
  // Subnormal results: 1 / 2**1074 is the smallest subnormal, 1 / 2**1076 rounds to 0.
  EXPECT_EQ(BigInt::true_divide(BigInt(1), BigInt::pow(BigInt(2), 1074)),
            std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(BigInt::true_divide(BigInt(3), BigInt::pow(BigInt(2), 1075)),
            2 * std::numeric_limits<double>::denorm_min());  // 1.5 ulp: to even
  EXPECT_EQ(BigInt::true_divide(BigInt(1), BigInt::pow(BigInt(2), 1076)), 0.0);
}

TEST(LowerConstants, ExactComparisonWithFloats) {
  const BigInt two53 = BigInt::pow(BigInt(2), 53);
  EXPECT_EQ((two53 + BigInt(1)).compare_with(9007199254740992.0), 1);  // not equal, as Python
  EXPECT_EQ(two53.compare_with(9007199254740992.0), 0);
  EXPECT_EQ(BigInt(-3).compare_with(-2.5), -1);
  EXPECT_EQ(BigInt(-2).compare_with(-2.5), 1);
  EXPECT_EQ(BigInt(2).compare_with(std::nan("")), 2);
  EXPECT_EQ(BigInt::pow(BigInt(10), 400).compare_with(INFINITY), -1);
}

double run_scalar(const ir::Kernel& k, double x) {
  ir::InterpBinding b = ir::make_binding(k, 1);
  set_in(k, b, "x", {x});
  ir::interpret(k, b);
  return out_of(k, b, "y")[0];
}

TEST(LowerConstants, TheIssueKernelIsExact) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = x * (3 ** 40) + x * (2 ** 70 // 3)
)",
                                    {Scalar("x"), MutScalar("y")});
  i128 p3 = 1;
  for (int i = 0; i < 40; ++i) p3 *= 3;
  const i128 q = (static_cast<i128>(1) << 70) / 3;
  const double x = 1.25;
  EXPECT_EQ(run_scalar(k, x), x * static_cast<double>(p3) + x * static_cast<double>(q));
}

TEST(LowerConstants, HugeLiteralsAndScopeIntsAreExact) {
  Globals g = math_globals();
  ir::Symbol big_int = integer(0);
  big_int.number = 1.2e21;                      // the rounded value, not used for arithmetic
  big_int.int_text = "1180591620717411303425";  // 2**70 + 1
  g["BIG"] = big_int;
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = x * (BIG % 1000) + 100000000000000000000000 // 7
)",
                                    {Scalar("x"), MutScalar("y")}, g);
  const i128 big = (static_cast<i128>(1) << 70) + 1;
  const i128 lit = static_cast<i128>(10000000000000LL) * 10000000000LL;  // 10**23
  EXPECT_EQ(run_scalar(k, 2.0),
            2.0 * static_cast<double>(big % 1000) + static_cast<double>(lit / 7));
}

TEST(LowerConstants, ExactComparisonsDecideBranches) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = x * 2.0 if 2 ** 53 + 1 > 2 ** 53 else x * 3.0
    if 2 ** 64 + 1 == 2.0 ** 64:
        y = -x
)",
                                    {Scalar("x"), MutScalar("y")});
  EXPECT_EQ(run_scalar(k, 1.5), 3.0);
}

TEST(LowerConstants, RefusalsNameTheLine) {
  const auto message = [](const std::string& body) {
    try {
      lower_source("def k(x: Scalar, y: Mutable[Scalar]):\n    y = x\n    y = " + body + "\n",
                   {Scalar("x"), MutScalar("y")});
    } catch (const SourceError& e) {
      EXPECT_EQ(e.line, 3) << body;
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("x * 10 ** 400").find("float literal"), std::string::npos);
  EXPECT_NE(message("x * (2 ** 100000)").find("16384 bits"), std::string::npos);
  EXPECT_NE(message("x * (5 // (2 - 2))").find("division by zero"), std::string::npos);
  EXPECT_NE(message("x * (5 / (2 - 2))").find("division by zero"), std::string::npos);
  EXPECT_NE(message("x * 0 ** -1").find("negative power"), std::string::npos);
}

}  // namespace
}  // namespace raptor::testing
