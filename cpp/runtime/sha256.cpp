// SHA-256 (FIPS 180-4): portable rounds (block_portable) and, on x86-64 CPUs with the SHA
// extensions, the same compression with SHA256RNDS2/MSG1/MSG2 (blocks_hardware), chosen per
// hasher. See sha256.hpp; start reading at Sha256::update.
#include "runtime/sha256.hpp"

#include <cstring>
#include <stdexcept>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RAPTOR_SHA256_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace raptor::runtime {
namespace {

constexpr std::array<uint32_t, 64> kK = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// One 64-byte block into the state, in plain C++.
void block_portable(std::array<uint32_t, 8>& state, const unsigned char* p) {
  std::array<uint32_t, 64> w{};
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) |
           (uint32_t{p[4 * i + 2]} << 8) | uint32_t{p[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    const uint32_t ch = (e & f) ^ (~e & g);
    const uint32_t t1 = h + s1 + ch + kK[i] + w[i];
    const uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    const uint32_t t2 = s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

#if RAPTOR_SHA256_X86
// n 64-byte blocks into the state h, with the SHA extensions. Those keep the state as two
// vectors, ABEF and CDGH (lanes high to low), and run two rounds per SHA256RNDS2: a group of
// four rounds is one RNDS2 on the message words plus constants and one on their upper half.
// The message schedule: words 16.. in groups of four, W[g] = MSG2(MSG1(W[g-4], W[g-3]) +
// (W[g-1]:W[g-2] shifted by one word), W[g-1]).
__attribute__((target("sha,sse4.1,ssse3"))) void blocks_hardware(std::array<uint32_t, 8>& h,
                                                                  const unsigned char* p,
                                                                  size_t n) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h.data()));
  __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h.data() + 4));
  const __m128i badc = _mm_shuffle_epi32(dcba, 0xB1);
  const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  __m128i abef = _mm_alignr_epi8(badc, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, badc, 0xF0);
  for (; n > 0; --n, p += 64) {
    const __m128i abef_in = abef, cdgh_in = cdgh;
    __m128i w[4];
    for (int g = 0; g < 4; ++g)
      w[g] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), bswap);
#pragma GCC unroll 16
    for (int g = 0; g < 16; ++g) {
      if (g >= 4) {
        const __m128i prev = w[(g + 3) & 3];
        const __m128i shifted = _mm_alignr_epi8(prev, w[(g + 2) & 3], 4);
        w[g & 3] = _mm_sha256msg2_epu32(
            _mm_add_epi32(_mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]), shifted), prev);
      }
      __m128i m = _mm_add_epi32(
          w[g & 3], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK.data() + 4 * g)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
      m = _mm_shuffle_epi32(m, 0x0E);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, m);
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
  }
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  dcba = _mm_blend_epi16(feba, dchg, 0xF0);
  hgfe = _mm_alignr_epi8(dchg, feba, 8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h.data()), dcba);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h.data() + 4), hgfe);
}

bool detect_hardware() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const bool ssse3 = (c & bit_SSSE3) != 0, sse41 = (c & bit_SSE4_1) != 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return ssse3 && sse41 && (b & bit_SHA) != 0;
}
#endif

}  // namespace

bool sha256_hardware_available() {
#if RAPTOR_SHA256_X86
  static const bool available = detect_hardware();  // a property of the CPU, read once
  return available;
#else
  return false;
#endif
}

Sha256::Sha256(const Sha256Impl impl)
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {
  if (impl == Sha256Impl::Hardware && !sha256_hardware_available())
    throw std::invalid_argument(
        "raptor: SHA-256 with the SHA extensions asked for, but this CPU lacks them");
  hardware_ = impl != Sha256Impl::Portable && sha256_hardware_available();
}

void Sha256::blocks(const unsigned char* p, size_t n) {
#if RAPTOR_SHA256_X86
  if (hardware_) {
    blocks_hardware(h_, p, n);
    return;
  }
#endif
  for (; n > 0; --n, p += 64) block_portable(h_, p);
}

void Sha256::update(std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t len = data.size();
  total_ += len;
  if (buf_len_ > 0) {
    const size_t take = std::min(len, 64 - buf_len_);
    std::memcpy(buf_.data() + buf_len_, p, take);
    buf_len_ += take;
    p += take;
    len -= take;
    if (buf_len_ < 64) return;
    blocks(buf_.data(), 1);
    buf_len_ = 0;
  }
  blocks(p, len / 64);
  p += len / 64 * 64;
  len %= 64;
  std::memcpy(buf_.data(), p, len);
  buf_len_ = len;
}

std::string Sha256::hex_digest() {
  const uint64_t bits = total_ * 8;
  const unsigned char pad = 0x80;
  update(std::string_view(reinterpret_cast<const char*>(&pad), 1));
  const std::array<char, 64> zeros{};
  const size_t fill = (buf_len_ <= 56) ? 56 - buf_len_ : 120 - buf_len_;
  update(std::string_view(zeros.data(), fill));
  std::array<char, 8> len_be{};
  for (int i = 0; i < 8; ++i) len_be[i] = static_cast<char>(bits >> (56 - 8 * i));
  update(std::string_view(len_be.data(), 8));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (const uint32_t v : h_) {
    for (int s = 28; s >= 0; s -= 4) out.push_back(kHex[(v >> s) & 0xf]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

}  // namespace raptor::runtime
