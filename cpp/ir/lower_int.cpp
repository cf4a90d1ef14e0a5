// Exact compile-time integers (see lower_int.hpp). Schoolbook arithmetic on 32-bit limbs:
// the values are constants of a kernel body, small in number and bounded by kMaxBits.
#include "ir/lower_int.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace raptor::ir::front {

namespace {

const char* const kTooLarge =
    "this integer constant has more than 16384 bits, beyond what hawk computes exactly at "
    "compile time; write it as a float literal (e.g. 1e300) if a float is meant";

}  // namespace

BigInt::BigInt(int64_t v) {
  neg_ = v < 0;
  uint64_t m = neg_ ? ~static_cast<uint64_t>(v) + 1 : static_cast<uint64_t>(v);
  while (m) {
    mag_.push_back(static_cast<uint32_t>(m));
    m >>= 32;
  }
}

void BigInt::trim(Mag& m) {
  while (!m.empty() && m.back() == 0) m.pop_back();
}

int BigInt::bit_length_mag(const Mag& m) {
  if (m.empty()) return 0;
  return static_cast<int>((m.size() - 1) * 32) + (32 - std::countl_zero(m.back()));
}

int BigInt::bit_length() const { return bit_length_mag(mag_); }

void BigInt::check_size() const {
  if (bit_length() > kMaxBits) throw IntRangeError(kTooLarge);
}

int BigInt::cmp_mag(const Mag& a, const Mag& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

BigInt::Mag BigInt::add_mag(const Mag& a, const Mag& b) {
  Mag r(std::max(a.size(), b.size()) + 1, 0);
  uint64_t carry = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    uint64_t s = carry;
    if (i < a.size()) s += a[i];
    if (i < b.size()) s += b[i];
    r[i] = static_cast<uint32_t>(s);
    carry = s >> 32;
  }
  trim(r);
  return r;
}

BigInt::Mag BigInt::sub_mag(const Mag& a, const Mag& b) {
  Mag r(a.size(), 0);
  int64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t d = static_cast<int64_t>(a[i]) - borrow - (i < b.size() ? b[i] : 0);
    borrow = d < 0 ? 1 : 0;
    if (d < 0) d += int64_t{1} << 32;
    r[i] = static_cast<uint32_t>(d);
  }
  trim(r);
  return r;
}

BigInt::Mag BigInt::mul_mag(const Mag& a, const Mag& b) {
  if (a.empty() || b.empty()) return {};
  Mag r(a.size() + b.size(), 0);
  for (size_t i = 0; i < a.size(); ++i) {
    uint64_t carry = 0;
    for (size_t j = 0; j < b.size(); ++j) {
      const uint64_t t = static_cast<uint64_t>(a[i]) * b[j] + r[i + j] + carry;
      r[i + j] = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    r[i + b.size()] = static_cast<uint32_t>(carry);
  }
  trim(r);
  return r;
}

BigInt::Mag BigInt::shl_mag(const Mag& a, int bits) {
  if (a.empty()) return {};
  const size_t limbs = static_cast<size_t>(bits / 32);
  const int rest = bits % 32;
  Mag r(a.size() + limbs + 1, 0);
  for (size_t i = 0; i < a.size(); ++i) {
    const uint64_t v = static_cast<uint64_t>(a[i]) << rest;
    r[i + limbs] |= static_cast<uint32_t>(v);
    r[i + limbs + 1] |= static_cast<uint32_t>(v >> 32);
  }
  trim(r);
  return r;
}

void BigInt::divmod_mag(const Mag& a, const Mag& b, Mag& q, Mag& r) {
  q.clear();
  r.clear();
  if (cmp_mag(a, b) < 0) {
    r = a;
    return;
  }
  if (b.size() == 1) {  // one limb: the common case, done limb by limb
    q.assign(a.size(), 0);
    uint64_t rem = 0;
    for (size_t i = a.size(); i-- > 0;) {
      const uint64_t cur = (rem << 32) | a[i];
      q[i] = static_cast<uint32_t>(cur / b[0]);
      rem = cur % b[0];
    }
    trim(q);
    if (rem) r.push_back(static_cast<uint32_t>(rem));
    return;
  }
  // Shift and subtract, one bit of the quotient at a time.
  const int n = bit_length_mag(a);
  q.assign(a.size(), 0);
  for (int i = n - 1; i >= 0; --i) {
    r = shl_mag(r, 1);
    if ((a[static_cast<size_t>(i / 32)] >> (i % 32)) & 1u) {
      if (r.empty()) r.push_back(0);
      r[0] |= 1u;
    }
    if (cmp_mag(r, b) >= 0) {
      r = sub_mag(r, b);
      q[static_cast<size_t>(i / 32)] |= 1u << (i % 32);
    }
  }
  trim(q);
}

BigInt BigInt::parse(const std::string& text) {
  int base = 10;
  size_t pos = 0;
  if (text.size() > 2 && text[0] == '0') {
    const char p = static_cast<char>(text[1] | 0x20);
    base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 10;
    if (base != 10) pos = 2;
  }
  if (pos >= text.size()) throw std::invalid_argument("no digits in integer literal " + text);
  BigInt r;
  const Mag mbase = {static_cast<uint32_t>(base)};
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0 || d >= base) throw std::invalid_argument("invalid digit in integer literal " + text);
    r.mag_ = add_mag(mul_mag(r.mag_, mbase), d ? Mag{static_cast<uint32_t>(d)} : Mag{});
    if (r.bit_length() > kMaxBits) throw IntRangeError(kTooLarge);
  }
  return r;
}

std::optional<int64_t> BigInt::to_int64() const {
  if (bit_length() > 64) return std::nullopt;
  uint64_t m = 0;
  for (size_t i = mag_.size(); i-- > 0;) m = (m << 32) | mag_[i];
  if (!neg_ && m <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(m);
  if (neg_ && m <= uint64_t{1} << 63) return static_cast<int64_t>(~m + 1);
  return std::nullopt;
}

double BigInt::round_to_double(const Mag& mag, int64_t exp2, bool sticky, const char* what) {
  const int bits = bit_length_mag(mag);
  if (bits == 0) return 0.0;
  const int64_t top = bits - 1 + exp2;  // the exponent of the leading bit
  // The exponent of the result's last kept bit: 53 significant bits, fewer when subnormal.
  const int64_t lsb = std::max<int64_t>(top - 52, -1074);
  const int64_t drop = lsb - exp2;  // low bits of mag rounded away
  uint64_t kept = 0;
  if (drop <= 0) {  // exact: at most 53 bits
    for (size_t i = mag.size(); i-- > 0;) kept = (kept << 32) | mag[i];
    const double r = std::ldexp(static_cast<double>(kept), static_cast<int>(exp2));
    if (std::isinf(r)) throw IntRangeError(what);
    return r;
  }
  auto bit = [&](int64_t i) -> bool {
    const size_t limb = static_cast<size_t>(i / 32);
    return limb < mag.size() && ((mag[limb] >> (i % 32)) & 1u);
  };
  for (int64_t i = bits - 1; i >= drop; --i) kept = (kept << 1) | (bit(i) ? 1u : 0u);
  const bool guard = bit(drop - 1);
  bool rest = sticky;
  for (int64_t i = 0; i < drop - 1 && !rest; ++i) rest = bit(i);
  if (guard && (rest || (kept & 1u))) ++kept;
  if (top > 1023 || (top == 1023 && kept >> 53)) throw IntRangeError(what);
  const double r = std::ldexp(static_cast<double>(kept), static_cast<int>(lsb));
  if (std::isinf(r)) throw IntRangeError(what);
  return r;
}

double BigInt::to_double() const {
  const double m = round_to_double(mag_, 0, false,
                                   "this integer constant is too large to convert to a float "
                                   "(Python's float() of it overflows); write a float literal");
  return neg_ ? -m : m;
}

double BigInt::true_divide(const BigInt& a, const BigInt& b) {
  if (b.is_zero()) throw std::domain_error("division by zero");
  if (a.is_zero()) return (a.neg_ != b.neg_) ? -0.0 : 0.0;
  const bool neg = a.neg_ != b.neg_;
  if (a.bit_length() <= 53 && b.bit_length() <= 53) {  // both exact doubles: one IEEE division
    const double r = std::fabs(a.to_double()) / std::fabs(b.to_double());
    return neg ? -r : r;
  }
  // Scale the dividend so the integer quotient has at least 55 bits, then round once.
  const int shift = std::max(0, 55 + b.bit_length() - a.bit_length());
  Mag q, r;
  divmod_mag(shl_mag(a.mag_, shift), b.mag_, q, r);
  const double m = round_to_double(q, -static_cast<int64_t>(shift), !r.empty(),
                                   "the quotient of these integer constants is too large for a "
                                   "float (Python's int / int overflows)");
  return neg ? -m : m;
}

int BigInt::compare_with(double d) const {
  if (std::isnan(d)) return 2;
  if (std::isinf(d)) return d > 0 ? -1 : 1;
  const double f = std::floor(d);
  // floor(d) as an exact integer: |f| < 2^1024, an integer mantissa times a power of two.
  int exp = 0;
  const double frac = std::frexp(std::fabs(f), &exp);  // |f| = frac * 2^exp
  BigInt fi;
  if (f != 0.0) {
    const int64_t mant = static_cast<int64_t>(std::ldexp(frac, 53));
    BigInt m(mant);
    fi.mag_ = exp >= 53 ? shl_mag(m.mag_, exp - 53) : BigInt(mant >> (53 - exp)).mag_;
    fi.neg_ = f < 0;
  }
  const int c = front::compare(*this, fi);
  if (c != 0) return c;
  return f == d ? 0 : -1;  // equal to floor(d) < d
}

std::string BigInt::to_string() const {
  if (mag_.empty()) return "0";
  std::string out;
  Mag cur = mag_, q, r;
  const Mag ten9 = {1000000000u};
  while (!cur.empty()) {
    divmod_mag(cur, ten9, q, r);
    uint32_t chunk = r.empty() ? 0 : r[0];
    for (int i = 0; i < 9; ++i) {
      out.push_back(static_cast<char>('0' + chunk % 10));
      chunk /= 10;
      if (q.empty() && chunk == 0) break;
    }
    cur = q;
  }
  while (out.size() > 1 && out.back() == '0') out.pop_back();
  if (neg_) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

BigInt operator-(BigInt a) {
  if (!a.is_zero()) a.neg_ = !a.neg_;
  return a;
}

BigInt operator+(const BigInt& a, const BigInt& b) {
  BigInt r;
  if (a.neg_ == b.neg_) {
    r.mag_ = BigInt::add_mag(a.mag_, b.mag_);
    r.neg_ = a.neg_;
  } else if (BigInt::cmp_mag(a.mag_, b.mag_) >= 0) {
    r.mag_ = BigInt::sub_mag(a.mag_, b.mag_);
    r.neg_ = a.neg_;
  } else {
    r.mag_ = BigInt::sub_mag(b.mag_, a.mag_);
    r.neg_ = b.neg_;
  }
  if (r.mag_.empty()) r.neg_ = false;
  r.check_size();
  return r;
}

BigInt operator-(const BigInt& a, const BigInt& b) { return a + (-b); }

BigInt operator*(const BigInt& a, const BigInt& b) {
  if (a.bit_length() + b.bit_length() > BigInt::kMaxBits + 1) throw IntRangeError(kTooLarge);
  BigInt r;
  r.mag_ = BigInt::mul_mag(a.mag_, b.mag_);
  r.neg_ = !r.mag_.empty() && a.neg_ != b.neg_;
  r.check_size();
  return r;
}

BigInt BigInt::floordiv(const BigInt& a, const BigInt& b) {
  if (b.is_zero()) throw std::domain_error("integer division by zero");
  Mag q, r;
  divmod_mag(a.mag_, b.mag_, q, r);
  BigInt out;
  out.mag_ = std::move(q);
  out.neg_ = !out.mag_.empty() && a.neg_ != b.neg_;
  if (a.neg_ != b.neg_ && !r.empty()) out = out - BigInt(1);  // round toward -infinity
  return out;
}

BigInt BigInt::mod(const BigInt& a, const BigInt& b) {
  if (b.is_zero()) throw std::domain_error("integer modulo by zero");
  Mag q, r;
  divmod_mag(a.mag_, b.mag_, q, r);
  BigInt out;
  out.mag_ = std::move(r);
  out.neg_ = !out.mag_.empty() && a.neg_;
  if (!out.is_zero() && a.neg_ != b.neg_) out = out + b;  // the divisor's sign
  return out;
}

BigInt BigInt::pow(const BigInt& a, int64_t e) {
  if (e < 0) throw std::invalid_argument("negative exponent");
  if (e == 0) return BigInt(1);
  const int bits = a.bit_length();
  if (bits > 1 && (static_cast<double>(bits) - 1.0) * static_cast<double>(e) >= kMaxBits)
    throw IntRangeError(kTooLarge);
  if (bits <= 1) {  // 0, 1, -1
    if (a.is_zero()) return a;
    return (a.neg_ && (e & 1)) ? BigInt(-1) : BigInt(1);
  }
  BigInt result(1), base = a;
  while (true) {
    if (e & 1) result = result * base;
    e >>= 1;
    if (!e) break;
    base = base * base;
  }
  return result;
}

int compare(const BigInt& a, const BigInt& b) {
  if (a.neg_ != b.neg_) return a.neg_ ? -1 : 1;
  const int c = BigInt::cmp_mag(a.mag_, b.mag_);
  return a.neg_ ? -c : c;
}

}  // namespace raptor::ir::front
