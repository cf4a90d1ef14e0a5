// raptor_core._core, XLA FFI half: the handler capsules the JAX bridge registers with
// jax.ffi.register_ffi_target. Empty when the core was built without the XLA FFI headers.
#include "bindings/bindings.hpp"

#ifdef RAPTOR_HAVE_XLA_FFI
#include "ffi/xla_handler.hpp"
#endif

namespace nb = nanobind;

namespace raptor::bindings {

void bind_ffi(nb::module_& m) {
#ifdef RAPTOR_HAVE_XLA_FFI
  m.def(
      "ffi_targets",
      []() {
        nb::dict d;
        d["cpu"] = nb::capsule(reinterpret_cast<void*>(&raptor::ffi::kernel_cpu));
        d["cuda"] = nb::capsule(reinterpret_cast<void*>(&raptor::ffi::kernel_cuda));
        return d;
      },
      "XLA FFI handlers by platform, as capsules for jax.ffi.register_ffi_target.");
  m.attr("xla_ffi_api_minor") = XLA_FFI_API_MINOR;
#else
  m.def("ffi_targets", []() { return nb::dict(); });
  m.attr("xla_ffi_api_minor") = -1;
#endif
}

}  // namespace raptor::bindings
