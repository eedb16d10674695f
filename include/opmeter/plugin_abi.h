/* opmeter's plugin ABI: impls of your own, in C, C++ or CUDA, in a shared library that opmeter
 * loads at run time (`opmeter run --plugin libmine.so`, or `plugins: [libmine.so]` in a config),
 * without rebuilding opmeter. Stable: only ever extended at the end of its structs, with
 * OPMETER_PLUGIN_ABI raised; opmeter refuses a library built for another ABI version.
 *
 * A library exports one function, opmeter_plugin_register, which calls `add` once per impl. An
 * impl computes an opmeter op: opmeter gives it the op's inputs (the same random inputs every impl
 * of the op gets), times its calls, and checks its output against the op's fp64 reference.
 *
 * Buffers: opmeter hands the inputs over in host memory at setup (and at load); they are opmeter's
 * and live only until the call returns. The impl keeps `copies` sets of them where it computes
 * (host or device memory) and rotates through them as `run` asks. `output` copies set 0's output
 * back to host memory for the check. Element types and layouts are the
 * op's (see ops/<op>/<op>.hpp); raw little-endian, row-major.
 *
 * Errors: a function returning nonzero (or setup returning NULL) writes a message into `err`
 * (at most err_len bytes, NUL-terminated). setup's message with OPMETER_UNSUPPORTED set means
 * "this impl cannot run this case here": the case is skipped with it. Do not throw across the ABI. */
#ifndef OPMETER_PLUGIN_ABI_H
#define OPMETER_PLUGIN_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPMETER_PLUGIN_ABI 1

/* Element types, as opmeter stores them. */
typedef enum opmeter_elem {
  OPMETER_F64 = 0,
  OPMETER_F32 = 1,
  OPMETER_F16 = 2,
  OPMETER_BF16 = 3,
  OPMETER_FP8_E4M3 = 4,
  OPMETER_S8 = 5,
  OPMETER_U8 = 6,
  OPMETER_S32 = 7
} opmeter_elem;

/* One tensor in host memory. */
typedef struct opmeter_tensor {
  const char* name;  /* the op's name for it: "x", "gamma", "A", ... */
  opmeter_elem elem;
  size_t count;      /* elements */
  void* data;        /* count elements; NULL in a case's output description */
} opmeter_tensor;

/* The case to set up. Strings live until teardown. */
typedef struct opmeter_case {
  const char* op;      /* "relu", "layernorm", "gemm", ... */
  const char* impl;    /* the impl's name, as registered */
  const char* dtype;   /* "fp32", "bf16", ... */
  const char* device;  /* "cpu" or "cuda:N" */
  int threads;         /* CPU threads the case may use */
  size_t n_params;     /* the op's parameters, e.g. batch=32, hidden=768 */
  const char* const* param_names;
  const char* const* param_values;
  size_t n_inputs;     /* the op's inputs, filled with set 0's values */
  const opmeter_tensor* inputs;
  opmeter_tensor output; /* what the output is: name, elem and count (data NULL) */
  size_t copies;       /* input/output sets to keep (cold-cache rotation) */
} opmeter_case;

#define OPMETER_UNSUPPORTED 1 /* setup's *flags: the case is skipped, not an error */

typedef struct opmeter_impl {
  const char* op;       /* the opmeter op it computes */
  const char* name;     /* impl name in case strings: [a-z0-9_]+, not one of opmeter's own */
  const char* summary;  /* one line for `opmeter list` */
  const char* dtypes;   /* comma-separated: "fp32,bf16" */
  const char* devices;  /* where it runs: "cpu", "cuda" or "cpu,cuda" */

  /* Keeps c->copies sets of c->inputs where it computes; returns its state, or NULL with a
   * message (and *flags |= OPMETER_UNSUPPORTED when the case cannot run here). */
  void* (*setup)(const opmeter_case* c, int* flags, char* err, size_t err_len);
  /* Before each check: replaces set 0's inputs with these fresh ones and fills set 0's output
   * with the byte `poison` (a NaN in every float type), so that elements `run` leaves unwritten
   * show in the check. */
  int (*load)(void* state, const opmeter_tensor* inputs, size_t n_inputs, int poison, char* err, size_t err_len);
  /* One call of the op on set `copy` (< c->copies); may return before the work is done (a GPU launch). */
  int (*run)(void* state, size_t copy, char* err, size_t err_len);
  /* Waits until every call issued so far is done. */
  int (*sync)(void* state, char* err, size_t err_len);
  /* Copies set 0's output (c->output.count elements of c->output.elem) into `host`. */
  int (*output)(void* state, void* host, char* err, size_t err_len);
  void (*teardown)(void* state);
} opmeter_impl;

/* What opmeter_plugin_register is handed. `add` copies the impl's description (its strings too):
 * call it as registry->add(registry, &impl, sizeof impl). The size lets opmeter read no further
 * than the struct the library was built with. */
typedef struct opmeter_registry {
  int abi; /* OPMETER_PLUGIN_ABI of the opmeter loading the library */
  void* opaque;
  void (*add)(struct opmeter_registry* registry, const opmeter_impl* impl, size_t impl_size);
} opmeter_registry;

/* The one symbol a plugin exports. Returns the OPMETER_PLUGIN_ABI it was built with; opmeter
 * refuses the library (naming both versions) when that differs from its own. Declared here so
 * that a C++ or CUDA definition gets C linkage, and exported even from a library built with
 * -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define OPMETER_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define OPMETER_PLUGIN_EXPORT
#endif
OPMETER_PLUGIN_EXPORT int opmeter_plugin_register(opmeter_registry* registry);
typedef int (*opmeter_plugin_register_fn)(opmeter_registry* registry);
#define OPMETER_PLUGIN_ENTRY "opmeter_plugin_register"

#ifdef __cplusplus
}
#endif

#endif /* OPMETER_PLUGIN_ABI_H */
