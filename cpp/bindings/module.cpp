// The Python module raptor_core._core (nanobind): the compiler for hawk and the runtime for
// eagle. Thin: conversions and exceptions only; behaviour lives in the stages. The compiler
// half is bind_compiler.cpp, the runtime half bind_runtime.cpp, the XLA FFI
// handler capsules bind_ffi.cpp, kernels' interfaces bind_interface.cpp.
#include <nanobind/nanobind.h>

#include "bindings/bindings.hpp"
#include "runtime/abi.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "raptor's C++ core: the hawk compiler and the eagle runtime";
  m.def(
      "abi_version", []() { return RAPTOR_ABI_VERSION; },
      "Version of the kernel calling convention.");
  raptor::bindings::bind_compiler(m);
  raptor::bindings::bind_runtime(m);
  raptor::bindings::bind_ffi(m);
  raptor::bindings::bind_cuda(m);
  raptor::bindings::bind_interface(m);
}
