// Shared helpers for the runtime tests: an RAII temporary directory, hand-written kernel
// translation units that follow runtime/abi.h, and their KernelEntry descriptions.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/abi_source.hpp"
#include "runtime/launch.hpp"

namespace raptor::runtime::testing {

// mkdtemp'ed directory, removed recursively on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "raptor-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Files under `dir` whose name contains ".tmp-" (leftover temporaries).
inline int count_temp_files(const std::filesystem::path& dir) {
  int n = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    if (f.path().filename().string().find(".tmp-") != std::string::npos) ++n;
  }
  return n;
}

// Kernels, each defined for float (suffix _f32) and double (_f64):
//  axpy: slots a:Param, x:Plane[2], b:Param, y:Mutable[2];  y = a*x + b.
//  bump: slots thr:Param, x:Mutable inout, terminated;  live samples: x += 1, finish when
//        x > thr.
//  sums: slots x:Plane, idx:Plane, w:Table[2], ps:ParamSum, ts:TableSum[2] of w, y:Mutable;
//        i = (int64)idx; out of range -> RAPTOR_ERR_TABLE_INDEX (first in the range kept);
//        else y = w[i][0]*x, ps += x, ts[i][c] += x*(c+1).
inline std::string kernels_source(const std::string& extra = "") {
  std::string src(abi_header_source());
  src += R"KERNEL(
#define RAPTOR_EXPORT extern "C" __attribute__((visibility("default")))
template <class T>
static void axpy(raptor_args* a) {
  const T A = (T)a->params[0], B = (T)a->params[2];
  const T* x = (const T*)a->in[1];
  T* y = (T*)a->out[3];
  const int64_t n = a->n;
  for (int64_t i = a->begin; i < a->end; ++i) {
    const int64_t s = a->index ? a->index[i] : i;
    for (int c = 0; c < 2; ++c) y[c * n + s] = A * x[c * n + s] + B;
  }
}
template <class T>
static void bump(raptor_args* a) {
  const T thr = (T)a->params[0];
  T* x = (T*)a->out[1];
  uint32_t finished = 0;
  for (int64_t i = a->begin; i < a->end; ++i) {
    const int64_t s = a->index ? a->index[i] : i;
    if (a->mask_in[s]) continue;
    x[s] = x[s] + (T)1;
    if (x[s] > thr) { a->mask_out[s] = 1; ++finished; }
  }
  a->finished = finished;
}
template <class T>
static void sums(raptor_args* a) {
  const T* x = (const T*)a->in[0];
  const T* idx = (const T*)a->in[1];
  const T* w = (const T*)a->in[2];
  const int64_t m = a->table_size[2];
  double* ps = a->sums[3];
  double* ts = a->sums[4];
  T* y = (T*)a->out[5];
  for (int64_t i = a->begin; i < a->end; ++i) {
    const int64_t s = a->index ? a->index[i] : i;
    const int64_t k = (int64_t)idx[s];
    if (k < 0 || k >= m) {
      if (a->error[0] == RAPTOR_OK) {
        a->error[0] = RAPTOR_ERR_TABLE_INDEX; a->error[1] = 2; a->error[2] = k; a->error[3] = s;
      }
      continue;
    }
    y[s] = w[k * 2] * x[s];
    ps[0] += (double)x[s];
    for (int c = 0; c < 2; ++c) ts[k * 2 + c] += (double)x[s] * (c + 1);
  }
}
RAPTOR_EXPORT void axpy_f32(raptor_args* a) { axpy<float>(a); }
RAPTOR_EXPORT void axpy_f64(raptor_args* a) { axpy<double>(a); }
RAPTOR_EXPORT void bump_f32(raptor_args* a) { bump<float>(a); }
RAPTOR_EXPORT void bump_f64(raptor_args* a) { bump<double>(a); }
RAPTOR_EXPORT void sums_f32(raptor_args* a) { sums<float>(a); }
RAPTOR_EXPORT void sums_f64(raptor_args* a) { sums<double>(a); }
)KERNEL";
  src += extra;
  return src;
}

// A hand-written entry: slots as (name, role, width) in order, the float dtype by its size.
inline KernelEntry hand_entry(raptor_kernel_fn fn, int dtype_size, const std::string& name,
                              const std::vector<SlotInterface>& slots) {
  const ElemType f = dtype_size == 4 ? ElemType::F32 : ElemType::F64;
  std::vector<SlotInterface> typed = slots;
  for (SlotInterface& s : typed) s.dtype = s.role == SlotRole::Mask ? ElemType::Bool : f;
  KernelEntry e;
  e.fn = fn;
  e.set_interface(KernelInterface(name, "", f, std::move(typed)));
  return e;
}

inline SlotInterface hand_slot(std::string name, SlotRole role, int width = 1, int table_of = -1) {
  SlotInterface s;
  s.name = std::move(name);
  s.role = role;
  s.width = width;
  s.is_vector = width > 1;
  s.table_of = table_of;
  return s;
}

inline KernelEntry axpy_entry(raptor_kernel_fn fn, int dtype_size) {
  return hand_entry(fn, dtype_size, "axpy",
                    {hand_slot("a", SlotRole::Param), hand_slot("x", SlotRole::Plane, 2),
                     hand_slot("b", SlotRole::Param), hand_slot("y", SlotRole::Mutable, 2)});
}

inline KernelEntry bump_entry(raptor_kernel_fn fn, int dtype_size) {
  return hand_entry(fn, dtype_size, "bump",
                    {hand_slot("thr", SlotRole::Param), hand_slot("x", SlotRole::Mutable),
                     hand_slot("terminated", SlotRole::Mask)});
}

inline KernelEntry sums_entry(raptor_kernel_fn fn, int dtype_size) {
  return hand_entry(fn, dtype_size, "sums",
                    {hand_slot("x", SlotRole::Plane), hand_slot("idx", SlotRole::Plane),
                     hand_slot("w", SlotRole::Table, 2), hand_slot("ps", SlotRole::ParamSum),
                     hand_slot("ts", SlotRole::TableSum, 2, 2), hand_slot("y", SlotRole::Mutable)});
}

}  // namespace raptor::runtime::testing
