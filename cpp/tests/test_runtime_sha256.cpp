// Tests for runtime/sha256: the FIPS 180-4 test vectors and incremental hashing.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

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

// The implementations this machine can run: Portable always, Hardware where the CPU has the
// SHA extensions (the Intel Xeon and AMD EPYC machines CI runs on both have them).
std::vector<Sha256Impl> impls() {
  std::vector<Sha256Impl> out = {Sha256Impl::Portable};
  if (sha256_hardware_available()) out.push_back(Sha256Impl::Hardware);
  return out;
}

std::string hex(Sha256Impl impl, std::string_view data) {
  Sha256 h(impl);
  h.update(data);
  return h.hex_digest();
}

TEST(RuntimeSha256, EachImplementationGivesTheStandardVectors) {
  for (const Sha256Impl impl : impls()) {
    SCOPED_TRACE(impl == Sha256Impl::Portable ? "portable" : "hardware");
    EXPECT_EQ(hex(impl, ""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hex(impl, "abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hex(impl, "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    EXPECT_EQ(hex(impl, std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
}

TEST(RuntimeSha256, HardwareEqualsPortableOnRandomInputs) {
  if (!sha256_hardware_available()) {
    // Nothing to compare: Best is Portable here, and asking for the extensions is refused.
    EXPECT_THROW(Sha256{Sha256Impl::Hardware}, std::invalid_argument);
    EXPECT_EQ(hex(Sha256Impl::Best, "abc"), hex(Sha256Impl::Portable, "abc"));
    return;
  }
  std::mt19937_64 rng(20261205);
  std::string data(5000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t len = 0; len <= 300; ++len)
    ASSERT_EQ(hex(Sha256Impl::Hardware, std::string_view(data).substr(0, len)),
              hex(Sha256Impl::Portable, std::string_view(data).substr(0, len)))
        << "length " << len;
  for (const size_t len : {1023u, 1024u, 4096u, 5000u})
    EXPECT_EQ(hex(Sha256Impl::Hardware, std::string_view(data).substr(0, len)),
              hex(Sha256Impl::Portable, std::string_view(data).substr(0, len)))
        << "length " << len;
  EXPECT_EQ(hex(Sha256Impl::Best, data), hex(Sha256Impl::Hardware, data));
}

}  // namespace
}  // namespace raptor::runtime
