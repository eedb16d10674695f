/* Plugins that go wrong, for tests/c_plugin_test.cpp; which one is chosen at compile time:
 *   BAD_RESULTS       impls of relu that compute wrongly, cannot run the case, or fail in run
 *                     (one with a message that fills the buffer, in many lines, unterminated)
 *   WRONG_ABI         a library built for the next plugin ABI
 *   BAD_DESCRIPTIONS  impls described wrongly (and one right, which must not be registered)
 *   NO_ENTRY          a shared library without opmeter_plugin_register
 *   ENDS_PROCESS      impls of relu whose run calls exit(0), segfaults or aborts, and one correct
 *                     (whose setup prints to stdout)
 *   MARKS_LOAD        a correct relu whose library constructor creates the file $OPMETER_TEST_MARKER
 *                     (to show which commands load plugins)
 *   EXITS_REGISTERING, CRASHES_REGISTERING  an entry point that calls exit(3), or segfaults
 *   EXITS_LOADING     a library constructor that calls exit(4) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opmeter/plugin_abi.h"

#ifdef NO_ENTRY
/* The entry point misspelled. */
int opmeter_plugin_registr(opmeter_registry* registry) {
  (void)registry;
  return OPMETER_PLUGIN_ABI;
}
#else

/* fp32 relu's buffers: one set (these tests measure hot). */
typedef struct state {
  size_t count;
  float* x;
  float* y;
} state;

static void* setup(const opmeter_case* c, int* flags, char* err, size_t err_len) {
  (void)flags;
  (void)err;
  (void)err_len;
  state* s = calloc(1, sizeof *s);
  s->count = c->inputs[0].count;
  s->x = malloc(s->count * sizeof(float));
  s->y = malloc(s->count * sizeof(float));
  memcpy(s->x, c->inputs[0].data, s->count * sizeof(float));
  return s;
}

static void* setup_unsupported(const opmeter_case* c, int* flags, char* err, size_t err_len) {
  *flags |= OPMETER_UNSUPPORTED;
  snprintf(err, err_len, "needs hidden >= 1000000, got %s", c->param_values[c->n_params - 1]);
  return NULL;
}

static int load(void* p, const opmeter_tensor* inputs, size_t n_inputs, int poison, char* err, size_t err_len) {
  state* s = p;
  (void)n_inputs;
  (void)err;
  (void)err_len;
  memcpy(s->x, inputs[0].data, s->count * sizeof(float));
  memset(s->y, poison, s->count * sizeof(float));
  return 0;
}

/* Wrong: the identity, not relu (negative inputs come out negative). */
static int run_identity(void* p, size_t copy, char* err, size_t err_len) {
  state* s = p;
  (void)copy;
  (void)err;
  (void)err_len;
  memcpy(s->y, s->x, s->count * sizeof(float));
  return 0;
}

static int run_relu(void* p, size_t copy, char* err, size_t err_len) {
  state* s = p;
  (void)copy;
  (void)err;
  (void)err_len;
  for (size_t i = 0; i < s->count; ++i) s->y[i] = s->x[i] > 0 ? s->x[i] : 0.0f;
  return 0;
}

/* What a plugin may do to the process that runs it. */
static int run_exit(void* p, size_t copy, char* err, size_t err_len) {
  (void)p, (void)copy, (void)err, (void)err_len;
  exit(0);
}

static int run_segfault(void* p, size_t copy, char* err, size_t err_len) {
  (void)p, (void)copy, (void)err, (void)err_len;
  raise(SIGSEGV);
  return 0;
}

static int run_abort(void* p, size_t copy, char* err, size_t err_len) {
  (void)p, (void)copy, (void)err, (void)err_len;
  abort();
}

#ifdef ENDS_PROCESS
/* A setup that prints to its standard output, as debugging plugins do. */
static void* setup_chatty(const opmeter_case* c, int* flags, char* err, size_t err_len) {
  printf("test plugin chatter on stdout\n");
  fflush(stdout);
  return setup(c, flags, err, err_len);
}
#endif

#ifdef EXITS_LOADING
__attribute__((constructor)) static void exit_at_load(void) { exit(4); }
#endif

#ifdef MARKS_LOAD
__attribute__((constructor)) static void mark_load(void) {
  const char* path = getenv("OPMETER_TEST_MARKER");
  if (!path) return;
  FILE* f = fopen(path, "a");
  if (f) {
    fputs("plugin loaded\n", f);
    fclose(f);
  }
}
#endif

static int run_failing(void* p, size_t copy, char* err, size_t err_len) {
  (void)p;
  (void)copy;
  snprintf(err, err_len, "the kernel launch failed");
  return 7;
}

static int run_long_message(void* p, size_t copy, char* err, size_t err_len) {
  (void)p;
  (void)copy;
  for (size_t i = 0; i < err_len; ++i) err[i] = i % 100 == 99 ? '\n' : 'x'; /* no terminating NUL */
  return 1;
}

static int sync_none(void* p, char* err, size_t err_len) {
  (void)p;
  (void)err;
  (void)err_len;
  return 0;
}

static int output(void* p, void* host, char* err, size_t err_len) {
  state* s = p;
  (void)err;
  (void)err_len;
  memcpy(host, s->y, s->count * sizeof(float));
  return 0;
}

static void teardown(void* p) {
  state* s = p;
  free(s->x);
  free(s->y);
  free(s);
}

static opmeter_impl relu(const char* name, void* (*setup_fn)(const opmeter_case*, int*, char*, size_t),
                         int (*run_fn)(void*, size_t, char*, size_t)) {
  opmeter_impl impl = {"relu", name, "test plugin", "fp32", "cpu", setup_fn, load, run_fn, sync_none, output, teardown};
  return impl;
}

int opmeter_plugin_register(opmeter_registry* registry) {
#if defined(BAD_RESULTS)
  opmeter_impl impls[] = {
      relu("test_plugin_wrong", setup, run_identity), relu("test_plugin_unsupported", setup_unsupported, run_identity),
      relu("test_plugin_failing", setup, run_failing), relu("test_plugin_long_message", setup, run_long_message)};
#elif defined(BAD_DESCRIPTIONS)
  opmeter_impl impls[] = {relu("test_plugin_fine", setup, run_identity),
                          relu("test_plugin_unknown_op", setup, run_identity),
                          relu("My-Relu", setup, run_identity),
                          relu("opmeter", setup, run_identity),
                          relu("test_plugin_bad_dtype", setup, run_identity),
                          relu("test_plugin_bad_device", setup, run_identity),
                          relu("test_plugin_no_run", setup, NULL),
                          relu("test_plugin_fp64", setup, run_identity)};
  impls[1].op = "relux";
  impls[4].dtypes = "fp32,fp33";
  impls[5].devices = "gpu";
  impls[7].dtypes = "fp32,fp64"; /* a dtype relu has no form of: it would get fp32 inputs */
#elif defined(ENDS_PROCESS)
  opmeter_impl impls[] = {relu("test_plugin_exits", setup, run_exit), relu("test_plugin_segfaults", setup, run_segfault),
                          relu("test_plugin_aborts", setup, run_abort), relu("test_plugin_correct", setup_chatty, run_relu)};
#elif defined(MARKS_LOAD)
  opmeter_impl impls[] = {relu("test_plugin_marked", setup, run_relu)};
#elif defined(EXITS_REGISTERING)
  opmeter_impl impls[] = {relu("test_plugin_exits_registering", setup, run_relu)};
  exit(3);
#elif defined(CRASHES_REGISTERING)
  opmeter_impl impls[] = {relu("test_plugin_crashes_registering", setup, run_relu)};
  raise(SIGSEGV);
#else
  opmeter_impl impls[] = {relu("test_plugin_other_abi", setup, run_identity)};
#endif
  for (size_t i = 0; i < sizeof impls / sizeof impls[0]; ++i) registry->add(registry, &impls[i], sizeof impls[i]);
#ifdef WRONG_ABI
  return OPMETER_PLUGIN_ABI + 1;
#else
  return OPMETER_PLUGIN_ABI;
#endif
}
#endif  /* NO_ENTRY */
