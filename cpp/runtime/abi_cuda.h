/* The calling convention between a CUDA launcher and generated CUDA kernels.
 *
 * Every generated CUDA kernel is one function per dtype:
 *     extern "C" __global__ void <symbol>(const raptor_cuda_args args);
 * The arguments travel by value (kernel parameter space), so the pointer tables live in the
 * struct itself. Each thread runs samples i = global thread index, stepping by the grid size,
 * over [0, count) (sample = index[i] when index is not null), and merges what it finished,
 * summed and found wrong into `status` with atomics. Sums over samples (sums[slot]) are added
 * atomically into the output buffers in the kernel's dtype, which the launcher zeroes first.
 * The code generator (codegen/cpp_emitter.cpp, emit_cuda) pastes this file into every CUDA
 * translation unit, after defining the fixed-width integer types (NVRTC has no <stdint.h>).
 */
#ifndef RAPTOR_ABI_CUDA_H
#define RAPTOR_ABI_CUDA_H

#define RAPTOR_CUDA_MAX_SLOTS 32

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
  const uint8_t* mask_in;  /* the Terminated plane read (never null when the kernel has one) */
  uint8_t* mask_out;       /* the Terminated plane written (may equal mask_in) */
  int32_t zero_finished;   /* finished samples: 1 writes 0 into pure outputs (JAX), 0 skips */
  unsigned long long* status; /* [0] finished, [1] error code (RAPTOR_ERR_*), [2] slot,
                                 [3] index, [4] sample, [5] most steps a sample ran */
} raptor_cuda_args;

#endif /* RAPTOR_ABI_CUDA_H */
