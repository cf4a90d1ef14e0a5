// Compile-time integers of the front end, exact as Python's: literals, loop variables, ints
// from the enclosing scope and the arithmetic on them (+ - * // % **, comparisons) are
// arbitrary-precision up to kMaxBits bits, `//` and `%` floor (the divisor's sign), and a
// value that ends in a float is rounded as Python's float(int) (and int / int as Python's true
// division): correctly rounded, half to even. Used by lower_expr.cpp; start at `BigInt`.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace raptor::ir::front {

// An integer beyond what hawk keeps exactly, or one whose float does not exist (the message
// says which; the front end adds the kernel, file and line).
struct IntRangeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class BigInt {
 public:
  // The largest magnitude kept: 2^kMaxBits - 1 (4932 decimal digits; Python's own limit on
  // integer literals is 4300 digits).
  static constexpr int kMaxBits = 16384;

  BigInt() = default;
  BigInt(int64_t v);  // NOLINT(google-explicit-constructor): ints mix freely, as in Python

  // A Python integer literal (underscores already removed): decimal, 0x, 0o or 0b.
  // Throws IntRangeError beyond kMaxBits, std::invalid_argument on a bad digit.
  static BigInt parse(const std::string& text);

  bool is_zero() const { return mag_.empty(); }
  bool negative() const { return neg_; }
  int bit_length() const;
  // The value as int64 when it fits.
  std::optional<int64_t> to_int64() const;
  // Python's float(self): correctly rounded; IntRangeError when it overflows a double.
  double to_double() const;
  // Python's a / b for ints: the exact quotient correctly rounded (b != 0).
  static double true_divide(const BigInt& a, const BigInt& b);
  // Exact comparison with a double (NaN compares unordered: every comparison false but !=).
  // Returns -1, 0, 1, or 2 when `d` is NaN.
  int compare_with(double d) const;
  std::string to_string() const;

  friend BigInt operator-(BigInt a);
  friend BigInt operator+(const BigInt& a, const BigInt& b);
  friend BigInt operator-(const BigInt& a, const BigInt& b);
  friend BigInt operator*(const BigInt& a, const BigInt& b);
  // Python's // and %: floor division, the remainder takes the divisor's sign (b != 0).
  static BigInt floordiv(const BigInt& a, const BigInt& b);
  static BigInt mod(const BigInt& a, const BigInt& b);
  // a ** e for e >= 0; IntRangeError when the result would exceed kMaxBits.
  static BigInt pow(const BigInt& a, int64_t e);
  friend int compare(const BigInt& a, const BigInt& b);  // -1, 0, 1

 private:
  using Mag = std::vector<uint32_t>;  // little-endian limbs, no leading zero limbs
  static void trim(Mag& m);
  static int cmp_mag(const Mag& a, const Mag& b);
  static Mag add_mag(const Mag& a, const Mag& b);
  static Mag sub_mag(const Mag& a, const Mag& b);  // |a| >= |b|
  static Mag mul_mag(const Mag& a, const Mag& b);
  static void divmod_mag(const Mag& a, const Mag& b, Mag& q, Mag& r);
  static Mag shl_mag(const Mag& a, int bits);
  static int bit_length_mag(const Mag& m);
  // (mag + a nonzero fraction below its last bit when sticky) * 2^exp2, correctly rounded to
  // a double (subnormals included); IntRangeError naming `what` on overflow.
  static double round_to_double(const Mag& mag, int64_t exp2, bool sticky, const char* what);
  void check_size() const;

  bool neg_ = false;
  Mag mag_;
};

int compare(const BigInt& a, const BigInt& b);
inline bool operator==(const BigInt& a, const BigInt& b) { return compare(a, b) == 0; }

}  // namespace raptor::ir::front
