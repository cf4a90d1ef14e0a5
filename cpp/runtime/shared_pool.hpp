// The process's shared host thread pool: every host launch of the process (eagle's plans,
// graphs and loops, and the XLA FFI handlers) splits its samples over this one pool, so
// the process never runs more kernel threads than cores. Created on first use with
// $RAPTOR_NUM_THREADS threads (default: all cores). Like global_registry(), it is process-wide
// because an XLA FFI handler has no other way to reach a pool.
#pragma once

#include "runtime/thread_pool.hpp"

namespace raptor::runtime {

ThreadPool& shared_pool();

}  // namespace raptor::runtime
