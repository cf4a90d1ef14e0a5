// The stop-test kernel of a stepping loop on a GPU, as CUDA C source text (see
// cuda_loop_kernels.hpp for how it is launched, loop.hpp for the plan around it).
//
// What it does, per launch: count the live samples (mask byte 0) with one partial per block
// (a fixed tree order inside the block), the last block to finish (an integer ticket, no float
// atomics) adds the partials in block order and updates the counter block: a launch that ran
// while samples were live is counted; when live reaches 0 the launch index is recorded in
// done_at; when the count reaches the budget the loop stops with budget_out set.
#include "runtime/cuda_loop_kernels.hpp"

#include <algorithm>

namespace raptor::runtime {

namespace {

#define RAPTOR_LOOP_STR2(...) #__VA_ARGS__
#define RAPTOR_LOOP_STR(...) RAPTOR_LOOP_STR2(__VA_ARGS__)

constexpr const char* kCountersText = "typedef struct raptor_loop_counters {\n  " RAPTOR_LOOP_STR(
    RAPTOR_LOOP_COUNTERS_FIELDS) "\n} raptor_loop_counters;\n";
// The counting rule (cuda_loop_kernels.hpp), one line of text.
constexpr const char* kUpdateText = RAPTOR_LOOP_STR(RAPTOR_LOOP_UPDATE_DEFINITION) "\n";

constexpr const char* kBody = R"CUDA(
// Live samples (mask byte 0) of this thread's positions: a grid-stride loop.
__device__ __forceinline__ unsigned long long raptor_loop_count_live(const unsigned char* mask,
                                                                     long long n) {
  unsigned long long live = 0;
  const long long stride = (long long)gridDim.x * RAPTOR_LOOP_BLOCK;
  for (long long i = (long long)blockIdx.x * RAPTOR_LOOP_BLOCK + threadIdx.x; i < n; i += stride)
    live += mask[i] == 0;
  return live;
}

// The block's sum of v in a fixed tree order; the result is in s[0] for every thread.
__device__ __forceinline__ unsigned long long raptor_loop_block_sum(unsigned long long* s,
                                                                   unsigned long long v) {
  s[threadIdx.x] = v;
  __syncthreads();
  for (int half = RAPTOR_LOOP_BLOCK / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
    __syncthreads();
  }
  return s[0];
}

#ifdef RAPTOR_LOOP_WHILE
// NVRTC does not include the device runtime API; this is its declaration (CUDA >= 12.4).
// Like nvcc's, the PTX leaves it external, for the driver to resolve when it loads the module.
extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                   unsigned int value);
#endif

// Launch: grid blocks of RAPTOR_LOOP_BLOCK threads (runtime/cuda_loop_kernels.hpp).
extern "C" __global__ void __launch_bounds__(RAPTOR_LOOP_BLOCK)
raptor_loop_stop(const unsigned char* mask, long long n, raptor_loop_counters* c,
                 unsigned long long* partials, int init
#ifdef RAPTOR_LOOP_WHILE
                 , cudaGraphConditionalHandle cond
#endif
) {
  __shared__ unsigned long long s[RAPTOR_LOOP_BLOCK];
  __shared__ int stopped, last;
  if (threadIdx.x == 0) stopped = !init && c->stopped != 0;
  __syncthreads();
  if (stopped) {
    // Every block of this launch sees the same `stopped` (only the last block of a launch
    // writes it, after all blocks have read it): nothing more to count.
#ifdef RAPTOR_LOOP_WHILE
    if (blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(cond, 0u);
#endif
    return;
  }
  const unsigned long long part = raptor_loop_block_sum(s, raptor_loop_count_live(mask, n));
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = part;
    __threadfence();
    const unsigned long long ticket = atomicAdd((unsigned long long*)&c->blocks_done, 1ull);
    last = ticket == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  // The last block: add the partials in block order.
  __threadfence();
  volatile unsigned long long* vp = partials;
  unsigned long long mine = 0;
  for (unsigned int b = threadIdx.x; b < gridDim.x; b += RAPTOR_LOOP_BLOCK) mine += vp[b];
  const unsigned long long live = raptor_loop_block_sum(s, mine);
  if (threadIdx.x != 0) return;
  c->blocks_done = 0;
  raptor_loop_update(c, live, init);
  __threadfence();
#ifdef RAPTOR_LOOP_WHILE
  cudaGraphSetConditional(cond, c->stopped ? 0u : 1u);
#endif
}
)CUDA";

}  // namespace

int loop_stop_grid(int64_t n) {
  constexpr int64_t per_block = static_cast<int64_t>(kLoopStopBlock) * 16;
  const int64_t blocks = (std::max<int64_t>(n, 0) + per_block - 1) / per_block;
  return static_cast<int>(std::clamp<int64_t>(blocks, 1, kLoopStopMaxBlocks));
}

std::string loop_stop_source(LoopStopVariant variant) {
  std::string src =
      "// raptor: the stop test of a stepping loop on a GPU (runtime/cuda_loop_kernels.cpp).\n";
  if (variant == LoopStopVariant::While) src += "#define RAPTOR_LOOP_WHILE 1\n";
  src += "#define RAPTOR_LOOP_BLOCK " + std::to_string(kLoopStopBlock) + "\n";
  src += kCountersText;
  src += "__device__ ";  // the rule's text is unqualified: it is host code in the C++ header
  src += kUpdateText;
  src += kBody;
  return src;
}

}  // namespace raptor::runtime
