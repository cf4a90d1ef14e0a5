// The shared host thread pool (see shared_pool.hpp).
#include "runtime/shared_pool.hpp"

namespace raptor::runtime {

ThreadPool& shared_pool() {
  static ThreadPool pool(0);  // thread-safe initialization (C++11 magic statics)
  return pool;
}

}  // namespace raptor::runtime
