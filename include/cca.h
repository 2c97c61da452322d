/* cca.h: the C ABI of cuda-caching-allocator, for native code that allocates GPU memory
 * through it (an inference engine, a codec, custom kernels) in the same process.
 *
 * A consumer never links against the allocator. JavaScript hands it an address,
 * `interop.allocatorApi()` (a bigint), and it calls through the table found there:
 *
 *   const cca_api_v1* api = cca_api_from_address(address);
 *   cca_client* me;
 *   if (api == NULL || api->client_open("my-codec", 0, &me) != CCA_OK) ...;
 *   cca_ptr p;
 *   if (api->malloc(me, 0, 1 << 20, stream, &p) != CCA_OK) fprintf(stderr, "%s\n", api->last_error());
 *   ...
 *   api->free(me, 0, p);
 *   api->client_close(me);
 *
 * The memory is the allocator's own: usable by work on `stream` at once, reused in that
 * stream's order after free, and by work on other streams only after record_stream. Its
 * allocations carry the client's name (snapshots, memory_stats, cca diff/leaks, metrics).
 * Any thread may call; every failure is a status and last_error(). The table is static,
 * versioned and append-only: a later minor version only adds members after these, and
 * `size` says how many there are. C99; no C++ needed. docs/interop.md has the details.
 */
#ifndef CCA_H
#define CCA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t cca_ptr;    /* a device address */
typedef uint64_t cca_stream; /* a CUstream; 0 is the device's default stream */
typedef int cca_status;      /* CCA_OK == 0; nonzero codes below */
typedef struct cca_client cca_client;

#define CCA_OK 0
#define CCA_ERR_INVALID_ARGUMENT 1 /* a null out-pointer, an empty or too long name, bad flags */
#define CCA_ERR_OUT_OF_MEMORY 2    /* last_error() has PyTorch's message with the numbers */
#define CCA_ERR_INVALID_DEVICE 3   /* no such device index */
#define CCA_ERR_INVALID_POINTER 4  /* not a live allocation (of this client, for free) */
#define CCA_ERR_INVALID_STREAM 5   /* not a stream the allocator knows: adopt it first */
#define CCA_ERR_SIMULATED 6        /* the devices are simulated; see CCA_CLIENT_ALLOW_SIMULATED */
#define CCA_ERR_DEVICE 7           /* the driver failed (last_error() names the call) */
#define CCA_ERR_CLIENT 8           /* a null or closed client */
#define CCA_ERR_INTERNAL 9         /* a bug in the allocator: please report it */
#define CCA_ERR_CAPTURE 10         /* refused during a CUDA graph capture, or no such capture (minor 1) */

/* client_open: accept simulated devices (tests without a GPU); without it, client_open
   fails with CCA_ERR_SIMULATED where the memory would not be real. */
#define CCA_CLIENT_ALLOW_SIMULATED 1u

#define CCA_API_MAGIC 0x316970612d616363ull /* "cca-api1" in memory order */
#define CCA_API_MAJOR 1u

typedef struct cca_api_v1 {
  uint64_t magic;
  uint32_t major, minor;
  uint64_t size; /* sizeof this struct as the allocator built it, for later minors */
  /* A client names the library whose allocations it makes (1 to 64 bytes, UTF-8). */
  cca_status (*client_open)(const char* name, uint32_t flags, cca_client** out);
  /* Its allocations stay live and attributed to it; the client may not be used again. */
  void (*client_close)(cca_client* client);
  /* size 0 gives *out == 0. */
  cca_status (*malloc)(cca_client* client, int device, size_t size, cca_stream stream, cca_ptr* out);
  /* ptr 0 does nothing; only the client that allocated a pointer may free it. */
  cca_status (*free)(cca_client* client, int device, cca_ptr ptr);
  /* The block waits, when freed, for the work queued on `stream` so far. */
  cca_status (*record_stream)(int device, cca_ptr ptr, cca_stream stream);
  /* The live allocation holding `inside`, any client's or JS's; each out-pointer may be NULL. */
  cca_status (*get_allocation)(int device, cca_ptr inside, cca_ptr* base, size_t* size, cca_stream* stream);
  /* Makes the caller's own CUstream usable with malloc and record_stream. Counted. */
  cca_status (*stream_adopt)(int device, cca_stream stream);
  /* Undoes one adopt; the last waits for the stream's work and forgets it (never destroys it). */
  cca_status (*stream_release)(int device, cca_stream stream);
  /* Returns the cached memory no allocation holds to the driver. */
  cca_status (*empty_cache)(int device);
  cca_status (*mem_get_info)(int device, size_t* free_bytes, size_t* total_bytes);
  /* This thread's last failure, readable until its next failing call ("" if none). */
  const char* (*last_error)(void);

  /* ---- minor 1: CUDA graph capture on the client's own stream (check api->minor >= 1) ----
   * A library that captures a graph on an adopted stream declares the capture, so the
   * allocator is as safe under it as under compute.captureGraph: the capture's allocations
   * (on `stream`, and on side streams that joined it by waiting on its events) come from a
   * private pool that no other work gets while the graph lives; no event is recorded or
   * queried while any capture is underway on the device; empty_cache, stream_release and
   * synchronizations are refused meanwhile (CCA_ERR_CAPTURE). The order:
   *   cuStreamBeginCapture(stream) -> capture_begin -> the captured work (malloc/free on
   *   `stream` included) -> cuStreamEndCapture -> capture_end -> graph launches ...
   *   -> cuGraphExecDestroy/cuGraphDestroy -> pool_release. */
  /* `stream` must be capturing already. `pool`: 0 for a pool of its own, or a pool id from an
     earlier capture_begin, to share its pool; *pool_out (may be NULL) gets the id. */
  cca_status (*capture_begin)(int device, cca_stream stream, uint64_t pool, uint64_t* pool_out);
  /* After cuStreamEndCapture (or an abandoned capture): routing ends; the pool keeps the use. */
  cca_status (*capture_end)(int device, cca_stream stream);
  /* The graph that used `pool` is gone: its use is given back, and the pool's memory returns
     once no graph uses it (cached blocks at once, the rest when freed and the cache emptied). */
  cca_status (*pool_release)(int device, uint64_t pool);
} cca_api_v1;

/* The table at `address` (from interop.allocatorApi()), or NULL on a bad magic or major. */
static inline const cca_api_v1* cca_api_from_address(uint64_t address) {
  const cca_api_v1* api = (const cca_api_v1*)(uintptr_t)address;
  if (api == NULL || api->magic != CCA_API_MAGIC || api->major != CCA_API_MAJOR) return NULL;
  return api;
}

/* A status's name, e.g. "CCA_ERR_OUT_OF_MEMORY". */
static inline const char* cca_status_name(cca_status status) {
  switch (status) {
    case CCA_OK: return "CCA_OK";
    case CCA_ERR_INVALID_ARGUMENT: return "CCA_ERR_INVALID_ARGUMENT";
    case CCA_ERR_OUT_OF_MEMORY: return "CCA_ERR_OUT_OF_MEMORY";
    case CCA_ERR_INVALID_DEVICE: return "CCA_ERR_INVALID_DEVICE";
    case CCA_ERR_INVALID_POINTER: return "CCA_ERR_INVALID_POINTER";
    case CCA_ERR_INVALID_STREAM: return "CCA_ERR_INVALID_STREAM";
    case CCA_ERR_SIMULATED: return "CCA_ERR_SIMULATED";
    case CCA_ERR_DEVICE: return "CCA_ERR_DEVICE";
    case CCA_ERR_CLIENT: return "CCA_ERR_CLIENT";
    case CCA_ERR_INTERNAL: return "CCA_ERR_INTERNAL";
    case CCA_ERR_CAPTURE: return "CCA_ERR_CAPTURE";
    default: return "CCA_ERR_UNKNOWN";
  }
}

#ifdef __cplusplus
}
#endif

#endif /* CCA_H */
