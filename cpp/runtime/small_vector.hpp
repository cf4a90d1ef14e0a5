// A fixed-size array that lives on the stack when small (the per-launch slot arrays of the
// launcher), so a launch of a kernel with a few slots allocates nothing.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace raptor::runtime {

// Tag: construct a SmallVector whose elements the caller writes before reading them.
struct Uninitialized {};

template <class T, size_t Inline>
class SmallVector {
 public:
  // n elements left unwritten (trivial T only): for arrays filled right after, so a launch
  // does not clear them first.
  SmallVector(size_t n, Uninitialized) : size_(n) {
    static_assert(std::is_trivially_copyable_v<T>, "Uninitialized needs a trivial element type");
    if (n > Inline) {
      heap_.resize(n);
      data_ = heap_.data();
    } else {
      data_ = inline_.data();
    }
  }
  explicit SmallVector(size_t n, const T& value = T{}) : size_(n) {
    if (n > Inline) {
      heap_.assign(n, value);
      data_ = heap_.data();
    } else {
      data_ = inline_.data();
      for (size_t i = 0; i < n; ++i) data_[i] = value;  // only the n used
    }
  }
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* data() { return data_; }
  size_t size() const { return size_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }

 private:
  std::array<T, Inline> inline_;  // left uninitialized beyond size()
  std::vector<T> heap_;
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace raptor::runtime
