/* The calling convention between a CUDA launcher and generated CUDA kernels.
 *
 * Every generated CUDA kernel is one function per dtype, plus one more when it sums over
 * samples (ParamSum / TableSum slots):
 *     extern "C" __global__ void <symbol>(const raptor_cuda_args args);
 *     extern "C" __global__ void <symbol>_finish(const raptor_cuda_args args);
 * The arguments travel by value (kernel parameter space), so the pointer tables live in the
 * struct itself. Launch <symbol> with `grid` blocks of exactly RAPTOR_CUDA_BLOCK threads
 * (runtime/cuda_geometry.hpp computes both and the scratch layout from N and the table
 * sizes only, never from the device, so results are the same bits on every run). Its threads
 * run positions [0, count) in rounds of grid x RAPTOR_CUDA_BLOCK (sample = index[i] when index
 * is not null). Then launch <symbol>_finish (any geometry; it strides over its work) with the
 * same arguments, on the same stream.
 *
 * Sums are deterministic: each thread adds its samples' contributions in double; a block
 * combines its threads in a fixed tree order (ParamSum) or in thread order per store
 * (TableSum) into its own partials in `partials[slot]` (scratch, double); _finish adds the
 * blocks' partials in block order and writes sums[slot] in the kernel's dtype (adding to it
 * when accumulate_sums is 1). No launcher zeroing is needed: the kernel writes every partial
 * it owns and _finish every output. Finished counts, steps and errors are combined per block
 * and merged into `status` with one integer atomic per block.
 * The code generator (codegen/cuda_driver.cpp, emit_cuda) pastes this file into every CUDA
 * translation unit, after defining the fixed-width integer types (NVRTC has no <stdint.h>).
 */
#ifndef RAPTOR_ABI_CUDA_H
#define RAPTOR_ABI_CUDA_H

#define RAPTOR_CUDA_MAX_SLOTS 32
#define RAPTOR_CUDA_BLOCK 256 /* threads per block of every <symbol> launch (a power of 2) */

typedef struct raptor_cuda_args {
  int64_t n;               /* samples in each plane: the stride between components */
  int64_t count;           /* positions to run */
  const int64_t* index;    /* active set: sample = index[i]; null: sample = i */
  const void* in[RAPTOR_CUDA_MAX_SLOTS];  /* per slot: the plane or table read */
  void* out[RAPTOR_CUDA_MAX_SLOTS];       /* per slot: the plane written */
  const void* params[RAPTOR_CUDA_MAX_SLOTS]; /* per slot: a Param's value, in device memory
                                               (one element of the kernel dtype) */
  int64_t table_size[RAPTOR_CUDA_MAX_SLOTS];
  void* sums[RAPTOR_CUDA_MAX_SLOTS];      /* per slot: ParamSum/TableSum output, kernel dtype */
  double* partials[RAPTOR_CUDA_MAX_SLOTS]; /* per sum slot: its block partials in the scratch
                                              buffer, block-major: ParamSum grid x width,
                                              TableSum grid x M x width (cuda_geometry.hpp) */
  const uint8_t* mask_in;  /* the Terminated plane read (never null when the kernel has one) */
  uint8_t* mask_out;       /* the Terminated plane written (may equal mask_in) */
  int32_t zero_finished;   /* finished samples: 1 writes 0 into pure outputs (JAX), 0 skips */
  int32_t accumulate_sums; /* 1: _finish adds the sums to sums[slot]; 0: overwrites them */
  uint32_t grid;           /* blocks of the <symbol> launch (0 when count is 0: _finish then
                              writes zero sums) */
  unsigned long long* status; /* [0] finished, [1] error code (RAPTOR_ERR_*), [2] slot,
                                 [3] index, [4] sample, [5] most steps a sample ran */
  int64_t sample_base;     /* the global index of sample 0 (hawk.math.sample_index()) */
  int64_t n_total;         /* hawk.math.n_samples(); 0 or less: n */
} raptor_cuda_args;

/* A Random slot's in[slot] is 4 uint32 words in device memory: the key (k0, k1) and the global
 * index of sample 0 (low word first). A unit with a Random kernel also defines
 *     extern "C" __global__ void raptor_rng_advance(unsigned int* state, unsigned int* block);
 * (one thread does the work), which eagle's bound launches (runtime/cuda_bound.cpp) enqueue
 * before each launch of the kernel: with state = {k0, k1, n low word, n high word}, it writes
 * block = {fold_in(key, uint32(n)), 0, 0} and counts n + 1. Launch n of a bound kernel thus
 * draws with fold_in(key, n) as on the host, in captured graphs and device loops too. (The
 * name is codegen::kCudaRngAdvanceSymbol.) */

#endif /* RAPTOR_ABI_CUDA_H */
