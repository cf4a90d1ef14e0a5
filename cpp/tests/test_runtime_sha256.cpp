// Tests for runtime/sha256: the FIPS 180-4 test vectors and incremental hashing.
#include <gtest/gtest.h>

#include <string>

#include "runtime/sha256.hpp"

namespace raptor::runtime {
namespace {

TEST(RuntimeSha256, StandardVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(RuntimeSha256, IncrementalMatchesOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 7 + 3);
  const std::string want = sha256_hex(data);
  for (const size_t piece : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    Sha256 h;
    for (size_t p = 0; p < data.size(); p += piece)
      h.update(std::string_view(data).substr(p, piece));
    EXPECT_EQ(h.hex_digest(), want) << "piece " << piece;
  }
  // Lengths around the padding boundary.
  for (const size_t len : {55u, 56u, 57u, 63u, 64u, 119u, 120u}) {
    Sha256 a;
    a.update(data.substr(0, len));
    EXPECT_EQ(a.hex_digest(), sha256_hex(data.substr(0, len)));
  }
}

}  // namespace
}  // namespace raptor::runtime
