/* A stand-in for a native library (a video codec, say) that takes its GPU memory from
 * cuda-caching-allocator instead of cudaMalloc: built against cca.h alone. JS hands it the
 * table's address once; its scratch buffers then show up as "codec" in memory_stats and
 * snapshots. It also borrows a DLPack tensor, as a framework taking a buffer would. */
#include <node_api.h>
#include <stdio.h>

#include "cca.h"

static const cca_api_v1* api;
static cca_client* me;
static cca_ptr scratch[4];

static napi_value fail(napi_env env, const char* what) {
  char message[1200];
  snprintf(message, sizeof message, "codec: %s: %s", what, api ? api->last_error() : "no table");
  napi_throw_error(env, NULL, message);
  return NULL;
}

/* init(address, allowSimulated) */
static napi_value init_codec(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint64_t address = 0;
  bool lossless = true, simulated = false;
  napi_get_value_bigint_uint64(env, argv[0], &address, &lossless);
  napi_get_value_bool(env, argv[1], &simulated);
  api = cca_api_from_address(address);
  if (api == NULL) return fail(env, "not a cca_api_v1 table");
  if (api->client_open("codec", simulated ? CCA_CLIENT_ALLOW_SIMULATED : 0, &me) != CCA_OK) return fail(env, "client_open");
  return NULL;
}

/* decode(): takes four scratch buffers of 1 MiB on the default stream. */
static napi_value decode(napi_env env, napi_callback_info info) {
  (void)info;
  for (int i = 0; i < 4; ++i) {
    if (api->malloc(me, 0, (size_t)1 << 20, 0, &scratch[i]) != CCA_OK) return fail(env, "malloc");
  }
  return NULL;
}

/* finish(): gives them back and closes the client. */
static napi_value finish(napi_env env, napi_callback_info info) {
  (void)info;
  for (int i = 0; i < 4; ++i) {
    if (api->free(me, 0, scratch[i]) != CCA_OK) return fail(env, "free");
  }
  api->client_close(me);
  return NULL;
}

/* borrow(address): reads a DLPack 1.x tensor's element count and is done with it. */
typedef struct { uint32_t major, minor; } DLPackVersion;
typedef struct {
  void* data;
  struct { int32_t device_type, device_id; } device;
  int32_t ndim;
  struct { uint8_t code, bits; uint16_t lanes; } dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

static napi_value borrow(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint64_t address = 0;
  bool lossless = true;
  napi_get_value_bigint_uint64(env, argv[0], &address, &lossless);
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)(uintptr_t)address;
  int64_t elements = 1;
  for (int32_t i = 0; i < t->dl_tensor.ndim; ++i) elements *= t->dl_tensor.shape[i];
  t->deleter(t);
  napi_create_double(env, (double)elements, &out);
  return out;
}

static napi_value module_init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"init", NULL, init_codec, NULL, NULL, NULL, napi_default, NULL},
      {"decode", NULL, decode, NULL, NULL, NULL, napi_default, NULL},
      {"finish", NULL, finish, NULL, NULL, NULL, napi_default, NULL},
      {"borrow", NULL, borrow, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, 4, props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, module_init)
