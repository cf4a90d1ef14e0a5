// A persistent pool of worker threads for host kernel launches. parallel_for runs chunks on
// the workers and on the calling thread, and returns when all are done. Workers spin briefly
// after each job and then sleep on a futex (std::atomic::wait), so back-to-back launches (a
// stepping loop) are dispatched in microseconds without burning a core while idle.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace raptor::runtime {

class ThreadPool {
 public:
  using ChunkFn = std::function<void(int64_t chunk, int worker)>;

  // `num_threads` counts the calling thread: num_threads - 1 workers are started.
  // 0 means $RAPTOR_NUM_THREADS if set, else std::thread::hardware_concurrency().
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads that run chunks, the caller included (>= 1).
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(chunk, worker) for every chunk in [0, n_chunks), each exactly once; `worker` is in
  // [0, size()), 0 being the calling thread, and no two chunks run at once with the same
  // worker id. Blocks until every chunk has finished. If chunks throw, the remaining
  // unstarted chunks are skipped and the exception of the lowest-numbered failing chunk is
  // rethrown here. A call made while the pool is busy (from inside a chunk, or from another
  // thread) runs all its chunks in order on the calling thread with worker id 0; worker ids
  // are then not exclusive, so per-worker scratch must not be shared with the outer call.
  void parallel_for(int64_t n_chunks, const ChunkFn& fn);

  // Whether the caller is launching back to back: its previous launch ended (end_launch())
  // less than half a worker's spin time (thread_pool.cpp) ago. The workers are then awake, or,
  // woken once, stay awake for the launches that follow. Measured from the end, not the start,
  // of the last launch: a launch that runs longer than the window on one thread must not keep
  // a loop of such launches on one thread for good (the drag step at 2^14 did, at 0.65x
  // Numba's speed).
  bool back_to_back() const;

  // Records that a launch has just ended (for back_to_back()).
  void end_launch();

  // The default thread count: $RAPTOR_NUM_THREADS, else hardware_concurrency() (at least 1).
  static int default_threads();

 private:
  void worker_loop(const std::stop_token& stop, int worker);
  void run_chunks(int worker);

  std::vector<std::jthread> workers_;
  std::mutex dispatch_;  // held by the caller for the duration of one parallel_for

  // The current job (valid while a parallel_for runs).
  const ChunkFn* fn_ = nullptr;
  int64_t n_chunks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<bool> cancel_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;
  int64_t error_chunk_ = 0;

  alignas(64) std::atomic<uint32_t> generation_{0};  // bumped to start a job
  alignas(64) std::atomic<uint32_t> pending_{0};     // workers still inside the current job
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> last_end_ns_{0};  // end_launch(): steady_clock, 0 before the first
};

}  // namespace raptor::runtime
