// SHA-256 (FIPS 180-4), for cache keys and for the digest sidecars that prove a cached shared
// object is the one this runtime wrote. Self-contained: no OpenSSL dependency. A cache hit
// hashes the generated source and the shared object (~130 KB for a fused stepping plan), so
// x86-64 CPUs with the SHA extensions (Intel since Ice Lake / Goldmont, AMD since Zen) hash
// with them; others, and Sha256Impl::Portable, with the portable rounds.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace raptor::runtime {

// Which compression function a hasher uses. Both give the same digests (tests check that).
enum class Sha256Impl {
  Best,      // the SHA extensions where the CPU has them, else Portable
  Portable,  // plain C++ rounds
  Hardware,  // the SHA extensions; only where sha256_hardware_available()
};

// True when this CPU (x86-64 with SHA, SSSE3 and SSE4.1) can run Sha256Impl::Hardware.
bool sha256_hardware_available();

// Incremental hasher: update() any number of times, then hex_digest() once.
class Sha256 {
 public:
  // Throws std::invalid_argument for Sha256Impl::Hardware where the CPU lacks the extensions.
  explicit Sha256(Sha256Impl impl = Sha256Impl::Best);
  void update(std::string_view data);
  // Finishes the hash and returns 64 lowercase hex digits. The object is spent afterwards.
  std::string hex_digest();

 private:
  void blocks(const unsigned char* p, size_t n);  // n whole 64-byte blocks
  std::array<uint32_t, 8> h_;
  bool hardware_ = false;
  std::array<unsigned char, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes
};

// The SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace raptor::runtime
