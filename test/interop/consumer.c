/* A consumer of the C ABI, as another library's addon would be: C99, compiled by the suite
 * against the packaged header alone (interop.includeDir), never linked against the
 * allocator. It receives the table's address from JS and calls through it; the driver
 * parts (its own stream, its own context) dlopen the CUDA driver as such a library does.
 * Every call returns { status, error, ... } so the tests can check statuses and messages. */
#include <dlfcn.h>
#include <node_api.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cca.h"

#define MAX_CLIENTS 16
static const cca_api_v1* api;
static cca_client* clients[MAX_CLIENTS];

#define CHECK_NAPI(call) \
  do {                   \
    if ((call) != napi_ok) { napi_throw_error(env, NULL, "consumer: " #call " failed"); return NULL; } \
  } while (0)

static napi_value result(napi_env env, cca_status status) {
  napi_value o, v;
  napi_create_object(env, &o);
  napi_create_string_utf8(env, cca_status_name(status), NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, "status", v);
  napi_create_string_utf8(env, status == CCA_OK ? "" : api->last_error(), NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, "error", v);
  return o;
}

static void set_u64(napi_env env, napi_value o, const char* key, uint64_t value) {
  napi_value v;
  napi_create_bigint_uint64(env, value, &v);
  napi_set_named_property(env, o, key, v);
}

static int arg_int(napi_env env, napi_value v) {
  int32_t i = 0;
  napi_get_value_int32(env, v, &i);
  return i;
}

static uint64_t arg_u64(napi_env env, napi_value v) {
  uint64_t u = 0;
  bool lossless = true;
  if (napi_get_value_bigint_uint64(env, v, &u, &lossless) != napi_ok) {
    double d = 0;
    napi_get_value_double(env, v, &d);
    u = (uint64_t)d;
  }
  return u;
}

static cca_client* arg_client(napi_env env, napi_value v) {
  int i = arg_int(env, v);
  return i >= 0 && i < MAX_CLIENTS ? clients[i] : NULL;
}

#define ARGS(n)                 \
  size_t argc = n;              \
  napi_value argv[n];           \
  CHECK_NAPI(napi_get_cb_info(env, info, &argc, argv, NULL, NULL))

/* attach(address): reads the table; false on a bad magic or major. */
static napi_value attach(napi_env env, napi_callback_info info) {
  ARGS(1);
  api = cca_api_from_address(arg_u64(env, argv[0]));
  napi_value v;
  napi_get_boolean(env, api != NULL, &v);
  return v;
}

/* open(name, flags) -> { status, error, client } */
static napi_value open_client(napi_env env, napi_callback_info info) {
  ARGS(2);
  char name[256];
  size_t len = 0;
  napi_get_value_string_utf8(env, argv[0], name, sizeof name, &len);
  int slot = 0;
  while (slot < MAX_CLIENTS && clients[slot] != NULL) ++slot;
  cca_client* c = NULL;
  cca_status s = api->client_open(len == 0 ? NULL : name, (uint32_t)arg_int(env, argv[1]), &c);
  napi_value o = result(env, s), v;
  if (s == CCA_OK) clients[slot] = c;
  napi_create_int32(env, s == CCA_OK ? slot : -1, &v);
  napi_set_named_property(env, o, "client", v);
  return o;
}

static napi_value close_client(napi_env env, napi_callback_info info) {
  ARGS(1);
  int i = arg_int(env, argv[0]);
  if (i >= 0 && i < MAX_CLIENTS) api->client_close(clients[i]);  /* kept: a closed client's calls are refused */
  return NULL;
}

/* Exported and out of line, with work after the call so it is no tail call: a caller the
 * dynamic symbol table names, so the native stack of a malloc made here names it (the
 * allocator symbolizes with dladdr; a static function shows as module+offset). */
__attribute__((noinline, visibility("default"))) cca_status consumer_malloc(cca_client* c, int device, size_t size,
                                                                            cca_stream stream, cca_ptr* out) {
  cca_status s = api->malloc(c, device, size, stream, out);
  __asm__ volatile("" ::: "memory");
  return s;
}

/* malloc(client, device, size, stream) -> { status, error, ptr } */
static napi_value do_malloc(napi_env env, napi_callback_info info) {
  ARGS(4);
  cca_ptr p = 0;
  cca_status s = consumer_malloc(arg_client(env, argv[0]), arg_int(env, argv[1]), (size_t)arg_u64(env, argv[2]),
                                 arg_u64(env, argv[3]), &p);
  napi_value o = result(env, s);
  set_u64(env, o, "ptr", p);
  return o;
}

static napi_value do_free(napi_env env, napi_callback_info info) {
  ARGS(3);
  return result(env, api->free(arg_client(env, argv[0]), arg_int(env, argv[1]), arg_u64(env, argv[2])));
}

static napi_value record_stream(napi_env env, napi_callback_info info) {
  ARGS(3);
  return result(env, api->record_stream(arg_int(env, argv[0]), arg_u64(env, argv[1]), arg_u64(env, argv[2])));
}

static napi_value get_allocation(napi_env env, napi_callback_info info) {
  ARGS(2);
  cca_ptr base = 0;
  size_t size = 0;
  cca_stream stream = 0;
  cca_status s = api->get_allocation(arg_int(env, argv[0]), arg_u64(env, argv[1]), &base, &size, &stream);
  napi_value o = result(env, s);
  set_u64(env, o, "base", base);
  set_u64(env, o, "size", size);
  set_u64(env, o, "stream", stream);
  return o;
}

static napi_value adopt(napi_env env, napi_callback_info info) {
  ARGS(2);
  return result(env, api->stream_adopt(arg_int(env, argv[0]), arg_u64(env, argv[1])));
}

static napi_value release(napi_env env, napi_callback_info info) {
  ARGS(2);
  return result(env, api->stream_release(arg_int(env, argv[0]), arg_u64(env, argv[1])));
}

static napi_value empty_cache(napi_env env, napi_callback_info info) {
  ARGS(1);
  return result(env, api->empty_cache(arg_int(env, argv[0])));
}

static napi_value mem_get_info(napi_env env, napi_callback_info info) {
  ARGS(1);
  size_t free_bytes = 0, total = 0;
  cca_status s = api->mem_get_info(arg_int(env, argv[0]), &free_bytes, &total);
  napi_value o = result(env, s);
  set_u64(env, o, "free", free_bytes);
  set_u64(env, o, "total", total);
  return o;
}

/* hammer(client, device, threads, rounds, stream): each thread allocates sizes from 512 B to
 * 4 MiB and frees them out of order; returns { failures, firstError }. */
struct hammer_job {
  cca_client* client;
  int device, rounds, seed;
  cca_stream stream;
  int failures;
  char error[512];
};

static void* hammer_thread(void* arg) {
  struct hammer_job* j = arg;
  cca_ptr live[8] = {0};
  unsigned x = (unsigned)j->seed * 2654435761u + 1;
  for (int r = 0; r < j->rounds; ++r) {
    x = x * 1103515245u + 12345u;
    int slot = (int)((x >> 8) % 8);
    if (live[slot] != 0) {
      if (api->free(j->client, j->device, live[slot]) != CCA_OK && j->failures++ == 0)
        snprintf(j->error, sizeof j->error, "%s", api->last_error());
      live[slot] = 0;
    } else {
      size_t size = (size_t)512 << ((x >> 16) % 14);
      if (api->malloc(j->client, j->device, size, j->stream, &live[slot]) != CCA_OK && j->failures++ == 0)
        snprintf(j->error, sizeof j->error, "%s", api->last_error());
    }
  }
  for (int i = 0; i < 8; ++i) {
    if (live[i] != 0 && api->free(j->client, j->device, live[i]) != CCA_OK && j->failures++ == 0)
      snprintf(j->error, sizeof j->error, "%s", api->last_error());
  }
  return NULL;
}

static napi_value hammer(napi_env env, napi_callback_info info) {
  ARGS(5);
  int n = arg_int(env, argv[2]);
  if (n < 1 || n > 64) n = 1;
  struct hammer_job jobs[64];
  pthread_t threads[64];
  for (int i = 0; i < n; ++i) {
    jobs[i] = (struct hammer_job){arg_client(env, argv[0]), arg_int(env, argv[1]), arg_int(env, argv[3]), i,
                                  arg_u64(env, argv[4]), 0, ""};
    pthread_create(&threads[i], NULL, hammer_thread, &jobs[i]);
  }
  int failures = 0;
  const char* first = "";
  for (int i = 0; i < n; ++i) {
    pthread_join(threads[i], NULL);
    if (jobs[i].failures > 0 && failures == 0) first = jobs[i].error;
    failures += jobs[i].failures;
  }
  napi_value o, v;
  napi_create_object(env, &o);
  napi_create_int32(env, failures, &v);
  napi_set_named_property(env, o, "failures", v);
  napi_create_string_utf8(env, first, NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, o, "firstError", v);
  return o;
}

/* The driver, as the consumer's own code would use it. */
typedef int (*cu_init_t)(unsigned);
typedef int (*cu_device_get_t)(int*, int);
typedef int (*cu_primary_retain_t)(void**, int);
typedef int (*cu_ctx_set_t)(void*);
typedef int (*cu_ctx_get_t)(void**);
typedef int (*cu_ctx_create_t)(void**, unsigned, int);
typedef int (*cu_ctx_destroy_t)(void*);
typedef int (*cu_stream_create_t)(void**, unsigned);
typedef int (*cu_stream_destroy_t)(void*);
static void* driver;

static void* sym(const char* name) { return driver ? dlsym(driver, name) : NULL; }

/* Every driver entry point the driver parts use, or the first one missing (NULL: all there). */
static const char* missing_driver_symbol(void) {
  static const char* const names[] = {"cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
                                      "cuCtxGetCurrent", "cuCtxCreate_v2", "cuCtxDestroy_v2", "cuStreamCreate",
                                      "cuStreamDestroy_v2"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (sym(names[i]) == NULL) return names[i];
  }
  return NULL;
}

/* driverStream(libraryPath, device) -> bigint: a stream of the device's primary context,
 * made by the consumer itself (0n if the driver refused). */
static napi_value driver_stream(napi_env env, napi_callback_info info) {
  ARGS(2);
  char path[1024];
  napi_get_value_string_utf8(env, argv[0], path, sizeof path, NULL);
  if (driver == NULL) driver = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  const char* missing = driver == NULL ? "the driver library" : missing_driver_symbol();
  if (missing != NULL) {
    char message[256];
    snprintf(message, sizeof message, "consumer: %s is missing", missing);
    napi_throw_error(env, NULL, message);
    return NULL;
  }
  void* stream = NULL;
  void* ctx = NULL;
  int dev = 0;
  if (driver != NULL && ((cu_init_t)sym("cuInit"))(0) == 0 &&
      ((cu_device_get_t)sym("cuDeviceGet"))(&dev, arg_int(env, argv[1])) == 0 &&
      ((cu_primary_retain_t)sym("cuDevicePrimaryCtxRetain"))(&ctx, dev) == 0 &&
      ((cu_ctx_set_t)sym("cuCtxSetCurrent"))(ctx) == 0) {
    if (((cu_stream_create_t)sym("cuStreamCreate"))(&stream, 1 /* non-blocking */) != 0) stream = NULL;
  }
  napi_value v;
  napi_create_bigint_uint64(env, (uint64_t)(uintptr_t)stream, &v);
  return v;
}

/* The C ABI's minor 1 (graph capture on the consumer's own stream). */
static napi_value capture_begin(napi_env env, napi_callback_info info) {
  ARGS(3);
  if (api->minor < 1) {
    napi_throw_error(env, NULL, "consumer: the table is older than minor 1");
    return NULL;
  }
  uint64_t pool = 0;
  napi_value o = result(env, api->capture_begin(arg_int(env, argv[0]), arg_u64(env, argv[1]), arg_u64(env, argv[2]), &pool));
  set_u64(env, o, "pool", pool);
  return o;
}

static napi_value capture_end(napi_env env, napi_callback_info info) {
  ARGS(2);
  return result(env, api->capture_end(arg_int(env, argv[0]), arg_u64(env, argv[1])));
}

static napi_value pool_release(napi_env env, napi_callback_info info) {
  ARGS(2);
  return result(env, api->pool_release(arg_int(env, argv[0]), arg_u64(env, argv[1])));
}

/* driverCapture(stream, begin): the consumer's own cuStreamBeginCapture (global mode), or
 * cuStreamEndCapture and cuGraphDestroy of what it captured. -> the driver's result */
typedef int (*cu_begin_capture_t)(void*, int);
typedef int (*cu_end_capture_t)(void*, void**);
typedef int (*cu_graph_destroy_t)(void*);
static napi_value driver_capture(napi_env env, napi_callback_info info) {
  ARGS(2);
  void* stream = (void*)(uintptr_t)arg_u64(env, argv[0]);
  bool begin = false;
  napi_get_value_bool(env, argv[1], &begin);
  int r;
  if (begin) {
    r = ((cu_begin_capture_t)sym("cuStreamBeginCapture_v2"))(stream, 0);
  } else {
    void* graph = NULL;
    r = ((cu_end_capture_t)sym("cuStreamEndCapture"))(stream, &graph);
    if (r == 0 && graph != NULL) r = ((cu_graph_destroy_t)sym("cuGraphDestroy"))(graph);
  }
  napi_value v;
  napi_create_int32(env, r, &v);
  return v;
}

static napi_value driver_stream_destroy(napi_env env, napi_callback_info info) {
  ARGS(1);
  napi_value v;
  napi_get_boolean(env, ((cu_stream_destroy_t)sym("cuStreamDestroy_v2"))((void*)(uintptr_t)arg_u64(env, argv[0])) == 0, &v);
  return v;
}

/* inOwnContext(client, device, size): with a context of its own current, as another
 * library may leave it, allocates `size` (a new segment) through the table, frees it and
 * empties the cache; then checks its context is still current.
 * -> { status, error, contextKept } */
static napi_value in_own_context(napi_env env, napi_callback_info info) {
  ARGS(3);
  int device = arg_int(env, argv[1]);
  if (driver == NULL || missing_driver_symbol() != NULL) {
    napi_throw_error(env, NULL, "consumer: call driverStream first (the driver is not loaded)");
    return NULL;
  }
  void* mine = NULL;
  void* now = NULL;
  if (((cu_ctx_create_t)sym("cuCtxCreate_v2"))(&mine, 0, device) != 0) {
    napi_throw_error(env, NULL, "consumer: cuCtxCreate failed");
    return NULL;
  }
  cca_ptr p = 0;
  cca_status s = api->malloc(arg_client(env, argv[0]), device, (size_t)arg_u64(env, argv[2]), 0, &p);
  if (s == CCA_OK) s = api->free(arg_client(env, argv[0]), device, p);
  if (s == CCA_OK) s = api->empty_cache(device);
  ((cu_ctx_get_t)sym("cuCtxGetCurrent"))(&now);
  napi_value o = result(env, s), v;
  napi_get_boolean(env, now == mine, &v);
  napi_set_named_property(env, o, "contextKept", v);
  ((cu_ctx_destroy_t)sym("cuCtxDestroy_v2"))(mine);
  return o;
}

/* DLPack 1.x's ABI, as a consumer declares it (dlpack.h). */
typedef struct { uint32_t major, minor; } DLPackVersion;
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
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

static void set_num(napi_env env, napi_value o, const char* key, double value) {
  napi_value v;
  napi_create_double(env, value, &v);
  napi_set_named_property(env, o, key, v);
}

/* dlpackRead(address) -> the tensor's fields as JS values */
static napi_value dlpack_read(napi_env env, napi_callback_info info) {
  ARGS(1);
  const DLManagedTensorVersioned* t = (const DLManagedTensorVersioned*)(uintptr_t)arg_u64(env, argv[0]);
  napi_value o, shape, strides, v;
  napi_create_object(env, &o);
  set_num(env, o, "major", t->version.major);
  set_num(env, o, "minor", t->version.minor);
  set_u64(env, o, "data", (uint64_t)(uintptr_t)t->dl_tensor.data);
  set_num(env, o, "deviceType", t->dl_tensor.device.device_type);
  set_num(env, o, "deviceId", t->dl_tensor.device.device_id);
  set_num(env, o, "code", t->dl_tensor.dtype.code);
  set_num(env, o, "bits", t->dl_tensor.dtype.bits);
  set_num(env, o, "lanes", t->dl_tensor.dtype.lanes);
  set_num(env, o, "byteOffset", (double)t->dl_tensor.byte_offset);
  set_num(env, o, "flags", (double)t->flags);
  napi_get_boolean(env, t->deleter != NULL, &v);
  napi_set_named_property(env, o, "hasDeleter", v);
  napi_create_array_with_length(env, (size_t)t->dl_tensor.ndim, &shape);
  napi_create_array_with_length(env, (size_t)t->dl_tensor.ndim, &strides);
  for (int32_t i = 0; i < t->dl_tensor.ndim; ++i) {
    napi_create_double(env, (double)t->dl_tensor.shape[i], &v);
    napi_set_element(env, shape, (uint32_t)i, v);
    napi_create_double(env, (double)t->dl_tensor.strides[i], &v);
    napi_set_element(env, strides, (uint32_t)i, v);
  }
  napi_set_named_property(env, o, "shape", shape);
  napi_set_named_property(env, o, "strides", strides);
  return o;
}

static void* run_deleter(void* arg) {
  DLManagedTensorVersioned* t = arg;
  t->deleter(t);
  return NULL;
}

/* dlpackDelete(address, onAnotherThread): the consumer is done with the tensor. */
static napi_value dlpack_delete(napi_env env, napi_callback_info info) {
  ARGS(2);
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)(uintptr_t)arg_u64(env, argv[0]);
  bool other = false;
  napi_get_value_bool(env, argv[1], &other);
  if (other) {
    pthread_t thread;
    pthread_create(&thread, NULL, run_deleter, t);
    pthread_join(thread, NULL);
  } else {
    t->deleter(t);
  }
  return NULL;
}

/* foreignContextCalls() -> the fake driver's count of calls made in a non-primary context,
 * or -1 on a real driver (which has no such count). */
static napi_value foreign_context_calls(napi_env env, napi_callback_info info) {
  (void)info;
  uint64_t (*count)(void) = (uint64_t (*)(void))sym("fake_cuda_foreign_context_calls");
  napi_value v;
  napi_create_double(env, count ? (double)count() : -1.0, &v);
  return v;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"attach", NULL, attach, NULL, NULL, NULL, napi_default, NULL},
      {"open", NULL, open_client, NULL, NULL, NULL, napi_default, NULL},
      {"close", NULL, close_client, NULL, NULL, NULL, napi_default, NULL},
      {"malloc", NULL, do_malloc, NULL, NULL, NULL, napi_default, NULL},
      {"free", NULL, do_free, NULL, NULL, NULL, napi_default, NULL},
      {"recordStream", NULL, record_stream, NULL, NULL, NULL, napi_default, NULL},
      {"getAllocation", NULL, get_allocation, NULL, NULL, NULL, napi_default, NULL},
      {"adopt", NULL, adopt, NULL, NULL, NULL, napi_default, NULL},
      {"release", NULL, release, NULL, NULL, NULL, napi_default, NULL},
      {"emptyCache", NULL, empty_cache, NULL, NULL, NULL, napi_default, NULL},
      {"memGetInfo", NULL, mem_get_info, NULL, NULL, NULL, napi_default, NULL},
      {"hammer", NULL, hammer, NULL, NULL, NULL, napi_default, NULL},
      {"driverStream", NULL, driver_stream, NULL, NULL, NULL, napi_default, NULL},
      {"driverStreamDestroy", NULL, driver_stream_destroy, NULL, NULL, NULL, napi_default, NULL},
      {"inOwnContext", NULL, in_own_context, NULL, NULL, NULL, napi_default, NULL},
      {"dlpackRead", NULL, dlpack_read, NULL, NULL, NULL, napi_default, NULL},
      {"dlpackDelete", NULL, dlpack_delete, NULL, NULL, NULL, napi_default, NULL},
      {"foreignContextCalls", NULL, foreign_context_calls, NULL, NULL, NULL, napi_default, NULL},
      {"captureBegin", NULL, capture_begin, NULL, NULL, NULL, napi_default, NULL},
      {"captureEnd", NULL, capture_end, NULL, NULL, NULL, napi_default, NULL},
      {"poolRelease", NULL, pool_release, NULL, NULL, NULL, napi_default, NULL},
      {"driverCapture", NULL, driver_capture, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
