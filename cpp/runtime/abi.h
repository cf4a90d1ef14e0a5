/* The calling convention between the runtime and generated kernel code.
 *
 * Every generated kernel is one C function per dtype:
 *     extern "C" void <symbol>(raptor_args* a);
 * that runs samples [a->begin, a->end) (positions in a->index when it is not null), each
 * for the kernel's own step count, and reports what it finished and any error in *a.
 * The codegen (codegen/host_driver.cpp) writes this struct's definition into every
 * translation unit verbatim from this file, so the two cannot drift apart.
 * Plain C: it is also the layout the CUDA emitter and the XLA FFI handlers use.
 */
#ifndef RAPTOR_ABI_H
#define RAPTOR_ABI_H
#include <stdint.h>

#define RAPTOR_ABI_VERSION 5

/* error codes written to raptor_args.error[0] */
#define RAPTOR_OK 0
#define RAPTOR_ERR_TABLE_INDEX 1 /* error[1] = table slot, error[2] = index, error[3] = sample */
/* integer planes: `//` or `%` by zero; error[1] = the user's source line, error[3] = sample */
#define RAPTOR_ERR_INT_DIV_ZERO 2
/* integer planes: int(x) of NaN, an infinity or beyond int64; error[1] = line, error[3] = sample */
#define RAPTOR_ERR_INT_CONVERSION 3

typedef struct raptor_args {
  int64_t n;              /* samples in each plane: the stride between components */
  int64_t begin, end;     /* the range this call runs */
  const int64_t* index;   /* active set: sample = index[i]; null: sample = i */
  const void* const* in;  /* per slot: the plane or table read (null when not read) */
  void* const* out;       /* per slot: the plane written (Mutable); for an in-out slot the
                             runtime passes in == out, the JAX bridge may pass two buffers */
  const double* params;   /* per slot: the Param's value (only Param slots are read) */
  const int64_t* table_size; /* per slot: entries M of a Table (and of its TableSum) */
  const uint8_t* mask_in; /* the Terminated plane read (never null when the kernel has one) */
  uint8_t* mask_out;      /* the Terminated plane written (may equal mask_in; never null
                             when the kernel has one) */
  uint32_t finished;      /* out: samples this call finished */
  int32_t zero_finished;  /* finished samples: 1 writes 0 into pure outputs (JAX), 0 skips */
  double* const* sums;    /* per slot: ParamSum (1 x width) / TableSum (M x width) partials
                             this call adds into, in double; null for other slots */
  int64_t error[4];       /* out: first error of this call (error[0] = RAPTOR_ERR_*) */
  uint32_t steps_run;     /* out: the most steps a sample of this call ran (a stepping loop
                             that fuses steps counts them with it) */
  int32_t stream;         /* 1: the launch reads and writes more than the cache holds; a
                             kernel may write its pure outputs with non-temporal stores
                             (and then fences them before it returns); 0: plain stores */
  int64_t max_steps;      /* in: the most steps a sample may run in this call; 0 (or more
                             than the kernel's steps): the kernel's own steps. A stepping
                             loop runs its fused kernel for the launches it has left */
  int64_t sample_base;    /* in: the global index of sample 0 (hawk.math.sample_index() is
                             sample_base + sample): a shard's first sample; 0 for a whole launch */
  int64_t n_total;        /* in: hawk.math.n_samples(), the samples of the whole launch;
                             0 or less: n */
} raptor_args;

typedef void (*raptor_kernel_fn)(raptor_args* a);

#endif /* RAPTOR_ABI_H */
