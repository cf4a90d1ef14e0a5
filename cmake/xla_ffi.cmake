# The XLA FFI handlers of the JAX bridge (cpp/ffi/*.cpp), linked into the Python module.
#
# Headers, the first found of:
#   1. RAPTOR_XLA_FFI_INCLUDE, if set;
#   2. the build Python's jaxlib, when it is 0.11.2 (an isolated pip build has it as a build
#      requirement, see pyproject.toml);
#   3. jaxlib 0.11.2's, fetched from the package index into the build tree by
#      scripts/fetch_xla_ffi_headers.py (needs pip in the build Python);
#   4. with a warning, the headers of whatever jaxlib the build's Python has.
# 0.11.2 is the oldest jaxlib the bridge supports: newer jaxlibs accept handlers built against
# older headers, not the reverse. Without headers the module is built without the bridge, and
# eagle.frameworks.jax says so when used.
set(RAPTOR_XLA_FFI_INCLUDE "" CACHE PATH "Directory that holds xla/ffi/api/ffi.h")
set(RAPTOR_JAXLIB_HEADERS_VERSION "0.11.2" CACHE STRING "jaxlib whose XLA FFI headers the handlers are built against")

function(raptor_find_xla_ffi out)
  if(RAPTOR_XLA_FFI_INCLUDE AND EXISTS "${RAPTOR_XLA_FFI_INCLUDE}/xla/ffi/api/ffi.h")
    set(${out} "${RAPTOR_XLA_FFI_INCLUDE}" PARENT_SCOPE)
    return()
  endif()
  # The build's own Python may hold exactly that jaxlib: an isolated `pip install` gets it as a
  # build requirement (pyproject.toml), so no download is needed there.
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
            "import importlib.metadata as m, os, jaxlib; print(m.version('jaxlib')); print(os.path.join(os.path.dirname(jaxlib.__file__), 'include'))"
    OUTPUT_VARIABLE _own OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _own_rc ERROR_QUIET)
  if(_own_rc EQUAL 0)
    string(REPLACE "\n" ";" _own "${_own}")
    list(GET _own 0 _own_version)
    list(GET _own 1 _own_inc)
    if(_own_version STREQUAL RAPTOR_JAXLIB_HEADERS_VERSION AND EXISTS "${_own_inc}/xla/ffi/api/ffi.h")
      set(${out} "${_own_inc}" PARENT_SCOPE)
      return()
    endif()
  endif()
  set(dest "${PROJECT_BINARY_DIR}/xla-ffi-${RAPTOR_JAXLIB_HEADERS_VERSION}")
  execute_process(
    COMMAND "${Python_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/scripts/fetch_xla_ffi_headers.py" "${dest}"
            "${RAPTOR_JAXLIB_HEADERS_VERSION}"
    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(rc EQUAL 0 AND EXISTS "${dest}/xla/ffi/api/ffi.h")
    set(${out} "${dest}" PARENT_SCOPE)
    return()
  endif()
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
            "import os, jaxlib; print(os.path.join(os.path.dirname(jaxlib.__file__), 'include'))"
    OUTPUT_VARIABLE inc OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc2 ERROR_QUIET)
  if(rc2 EQUAL 0 AND EXISTS "${inc}/xla/ffi/api/ffi.h")
    message(WARNING "raptor: jaxlib ${RAPTOR_JAXLIB_HEADERS_VERSION} headers unavailable (${err}); building "
                    "the XLA FFI handlers against the installed jaxlib's (${inc}): older jaxlibs will refuse them")
    set(${out} "${inc}" PARENT_SCOPE)
    return()
  endif()
  set(${out} "" PARENT_SCOPE)
endfunction()

raptor_find_xla_ffi(_raptor_ffi_inc)
if(_raptor_ffi_inc)
  message(STATUS "raptor: XLA FFI headers: ${_raptor_ffi_inc}")
  file(GLOB RAPTOR_FFI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/cpp/ffi/*.cpp)
  add_library(raptor_ffi STATIC ${RAPTOR_FFI_SOURCES})
  target_include_directories(raptor_ffi SYSTEM PUBLIC "${_raptor_ffi_inc}")
  target_link_libraries(raptor_ffi PUBLIC raptor_core)
  target_compile_definitions(raptor_ffi PUBLIC RAPTOR_HAVE_XLA_FFI=1)
  set_target_properties(raptor_ffi PROPERTIES POSITION_INDEPENDENT_CODE ON)
  raptor_target_defaults(raptor_ffi)
  target_link_libraries(_core PRIVATE raptor_ffi)
else()
  message(WARNING "raptor: no XLA FFI headers found: the JAX bridge (eagle.frameworks.jax) is not built")
endif()
