/* An opmeter plugin in plain C11: impl `c_loop` of op `relu` (y = max(x, 0) over
 * batch x seq x hidden elements) in fp32 and bf16, one loop on one thread. opmeter draws the
 * inputs, times run() and checks the output; this file only computes.
 *
 *   cc -std=c11 -O2 -shared -fPIC -I<opmeter>/include relu_plugin.c -o libmine.so
 *   opmeter run --plugin ./libmine.so --case relu/c_loop/fp32/batch=1,seq=64,hidden=4096/threads=1 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opmeter/plugin_abi.h"

typedef struct relu_state {
  opmeter_elem elem; /* OPMETER_F32 or OPMETER_BF16 */
  size_t count;      /* elements of x and of y */
  size_t bytes;      /* of one set's x (and y) */
  size_t copies;
  unsigned char* x;  /* copies sets of x, one after the other */
  unsigned char* y;  /* copies sets of y */
} relu_state;

static void relu_f32(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* bf16 is the top half of an fp32: widen, compare, and the result (x or 0) narrows exactly. */
static void relu_bf16(const uint16_t* x, uint16_t* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = (uint32_t)x[i] << 16;
    float v;
    memcpy(&v, &bits, sizeof v);
    y[i] = v > 0.0f ? x[i] : 0;
  }
}

static void teardown(void* state) {
  relu_state* s = state;
  free(s->x);
  free(s->y);
  free(s);
}

static void* setup(const opmeter_case* c, int* flags, char* err, size_t err_len) {
  if (c->n_inputs != 1 || (c->inputs[0].elem != OPMETER_F32 && c->inputs[0].elem != OPMETER_BF16)) {
    *flags |= OPMETER_UNSUPPORTED;
    snprintf(err, err_len, "c_loop computes relu on one fp32 or bf16 tensor");
    return NULL;
  }
  relu_state* s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  s->elem = c->inputs[0].elem;
  s->count = c->inputs[0].count;
  s->bytes = s->count * (s->elem == OPMETER_F32 ? 4 : 2);
  s->copies = c->copies;
  s->x = malloc(s->copies * s->bytes);
  s->y = malloc(s->copies * s->bytes);
  if (!s->x || !s->y) {
    snprintf(err, err_len, "out of memory for %zu sets of %zu bytes", s->copies, 2 * s->bytes);
    teardown(s);
    return NULL;
  }
  /* Every set holds the same inputs: the sets only need to live at different addresses. */
  for (size_t k = 0; k < s->copies; ++k) memcpy(s->x + k * s->bytes, c->inputs[0].data, s->bytes);
  return s;
}

static int load(void* state, const opmeter_tensor* inputs, size_t n_inputs, int poison, char* err, size_t err_len) {
  relu_state* s = state;
  if (n_inputs != 1 || inputs[0].count != s->count) {
    snprintf(err, err_len, "expected one input of %zu elements", s->count);
    return 1;
  }
  memcpy(s->x, inputs[0].data, s->bytes);
  memset(s->y, poison, s->bytes);
  return 0;
}

static int run(void* state, size_t copy, char* err, size_t err_len) {
  relu_state* s = state;
  (void)err;
  (void)err_len;
  const unsigned char* x = s->x + copy * s->bytes;
  unsigned char* y = s->y + copy * s->bytes;
  if (s->elem == OPMETER_F32) relu_f32((const float*)x, (float*)y, s->count);
  else relu_bf16((const uint16_t*)x, (uint16_t*)y, s->count);
  return 0;
}

static int sync_all(void* state, char* err, size_t err_len) {
  (void)state;  /* run() is done when it returns */
  (void)err;
  (void)err_len;
  return 0;
}

static int output(void* state, void* host, char* err, size_t err_len) {
  relu_state* s = state;
  (void)err;
  (void)err_len;
  memcpy(host, s->y, s->bytes);
  return 0;
}

int opmeter_plugin_register(opmeter_registry* registry) {
  static const opmeter_impl relu = {
      .op = "relu",
      .name = "c_loop",
      .summary = "example plugin: a plain C loop on one thread",
      .dtypes = "fp32,bf16",
      .devices = "cpu",
      .setup = setup,
      .load = load,
      .run = run,
      .sync = sync_all,
      .output = output,
      .teardown = teardown,
  };
  registry->add(registry, &relu, sizeof relu);
  return OPMETER_PLUGIN_ABI;
}
