// SHA-256 (FIPS 180-4), for cache keys and for the digest sidecars that prove a cached shared
// object is the one this runtime wrote. Self-contained: no OpenSSL dependency.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace raptor::runtime {

// Incremental hasher: update() any number of times, then hex_digest() once.
class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  // Finishes the hash and returns 64 lowercase hex digits. The object is spent afterwards.
  std::string hex_digest();

 private:
  void block(const unsigned char* p);
  std::array<uint32_t, 8> h_;
  std::array<unsigned char, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes
};

// The SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace raptor::runtime
