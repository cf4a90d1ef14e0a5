// Shared between the binding files of raptor_core._core: the Python-visible kernel handle
// and the registration functions each file defines.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>

#include "ir/ir.hpp"

namespace raptor::bindings {

// A compiled-to-IR kernel as Python holds it (immutable once made).
struct KernelHandle {
  std::shared_ptr<const ir::Kernel> kernel;
};

void bind_compiler(nanobind::module_& m);
void bind_runtime(nanobind::module_& m);
void bind_ffi(nanobind::module_& m);
void bind_cuda(nanobind::module_& m);
void bind_interface(nanobind::module_& m);

}  // namespace raptor::bindings
