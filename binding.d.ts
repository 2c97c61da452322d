// Types of the raw native addon (build/Release/cuda_caching_allocator.node). Hand-written:
// test/contract/binding-surface.test.ts checks that the addon exports exactly these names.
// Pointers and stream handles are plain numbers (they fit in 53 bits); sizes are bytes.

export interface RuntimeInfo {
  /** 'none' where the native addon cannot load (only runtimeInfo() says so; the addon never does). */
  backend: 'sim' | 'cuda' | 'none';
  deviceCount: number;
  /** Why this backend was chosen (e.g. no GPU, so the simulator), or why there is none. */
  note: string;
  /** Increases when the runtime is replaced; stale handles carry an older one. */
  generation: number;
  /** True when this thread has simulated devices of its own (cuda.sim.isolate()). */
  isolated: boolean;
}

export interface DeviceInfo {
  index: number;
  name: string;
  simulated: boolean;
  totalMemory: number;
  /** Compute capability; 0.0 for the simulator. */
  major: number;
  minor: number;
}

export interface SimState {
  usedBytes: number;
  deviceAllocations: number;
  pendingEvents: number;
}

/** (kind, message, code, fields) => the Error instance to throw. */
export type ErrorFactory = (
  kind: 'oom' | 'pointer' | 'argument' | 'device' | 'allocator',
  message: string,
  code: string,
  fields: Record<string, number>,
) => Error;

/**
 * A snapshot's parts as fixed-width records (decoded by lib/history/snapshot-build.ts):
 * segments: [address, total_size, allocated_size, active_size, requested_size, stream,
 *            is_small, is_expandable, pool, stackId, firstBlock, blockCount] x N
 * blocks:   [address, size, requested_size, state (0 free, 1 allocated, 2 pending), stackId, tagId] x M
 * traces:   [action, addr, size, stream, time_us, stackId, tagId, pool, seq] x K (only with includeTraces)
 */
export interface SnapshotParts {
  device: number;
  segments: Float64Array;
  blocks: Float64Array;
  traces?: Float64Array;
  traceMaxEntries: number;
  traceOverflowed: boolean;
}

export interface CudaProbe {
  available: boolean;
  /** Why the CUDA backend cannot be used ('' when it can). */
  reason: string;
  deviceCount: number;
  driverVersion: number;
  /** The driver library tried (libcuda.so.1, or CCA_LIBCUDA_PATH). */
  path: string;
}

/** One allocator option: its key in a config string, its value's kind, its docs, its settings-dict name. */
export interface AllocatorOptionRow {
  key: string;
  kind: 'megabytes' | 'count' | 'number' | 'boolean' | 'divisions' | 'word';
  default: string;
  valid: string;
  meaning: string;
  /** Its name in the allocator_settings dict, or null when the dict omits it. */
  setting: string | null;
}

/** What a kernel was compiled with (the driver's CU_FUNC_ATTRIBUTE_*). */
export interface KernelAttributes {
  maxThreadsPerBlock: number;
  numRegs: number;
  /** Static shared memory, bytes. */
  sharedSizeBytes: number;
  constSizeBytes: number;
  /** Local memory per thread, bytes. */
  localSizeBytes: number;
  /** Dynamic shared memory a launch may ask for now (see setMaxDynamicSharedMemory). */
  maxDynamicSharedSizeBytes: number;
  /** major * 10 + minor */
  ptxVersion: number;
  /** The SASS architecture, major * 10 + minor. */
  binaryVersion: number;
}

export interface LaunchLimits {
  maxThreadsPerBlock: number;
  maxBlock: [number, number, number];
  maxGrid: [number, number, number];
  /** Dynamic shared memory per block a kernel may opt in to. */
  maxSharedPerBlockOptin: number;
}

/** Whether CUDA C++ can be compiled at run time (NVRTC), and if not why. */
export interface CompilerInfo {
  available: boolean;
  /** Why not: every library tried, and what each said. */
  reason: string;
  /** The NVRTC library used. */
  path: string;
  /** NVRTC's version, "13.0". */
  version: string;
  /** The sm_XY it can target, as XY (75, 80, ..., 120). */
  architectures: number[];
}

export interface BlasInfo {
  available: boolean;
  /** Why not: every library tried, and what each said. */
  reason: string;
  /** The cuBLAS library used. */
  path: string;
  /** cuBLAS's version, "13.0.2" ('' until found). */
  version: string;
  /** cuBLASLt (for a bias or an epilogue): found?, why not, and where. */
  ltAvailable: boolean;
  ltReason: string;
  ltPath: string;
}

export interface NativeClientRecord {
  tag: number;
  name: string;
  open: number;
  device: number;
  bytes: number;
  bytesPeak: number;
  allocations: number;
  allocationsPeak: number;
  numAllocs: number;
  numFrees: number;
}

export interface NativeBinding {
  alloc(device: number, size: number, stream: number, stackId?: number, tagId?: number): number;
  /**
   * This environment's call slots: a Float64Array of 8 that allocInSlots reads its numbers
   * from and writes its result to (the same memory on every call).
   */
  callSlots(): Float64Array;
  /**
   * alloc with its numbers in the call slots: [device, size, stream, stackId, tagId] in slots
   * 0-4 (stackId and tagId 0 for none); the pointer is written to slot 0. Cheaper than alloc
   * by the arguments it does not unpack and the number it does not return.
   */
  allocInSlots(): void;
  free(device: number, ptr: number, stackId?: number): void;
  /**
   * This thread's list of frees for its next call, as [count, device, ptr, device, ptr, ...]
   * (capacity (length - 1) / 2): every exported function and C ABI call on this thread
   * frees the listed pointers first, in order, and empties the list.
   */
  pendingFrees(): Float64Array;
  /** Hands the pending frees over now; nothing else. */
  handOverFrees(): void;
  recordStream(device: number, ptr: number, stream: number): void;
  /**
   * What alloc(size, stream) in pool n (0: default) would do now, changing nothing: the cached
   * block it would be served from (null: none, and then the rest), whether a memory fraction
   * is set (size 0 asks only that), whether it would give back cached memory before asking
   * the device, and with max_split_size the oversize segments it would release had its
   * device malloc failed, and whether it would then retry.
   */
  planMalloc(device: number, size: number, stream: number, pool: number): {
    cached: { ptr: number; size: number } | null; limited: boolean; limitReleases: boolean;
    oversizeSizes: number[]; oversizeRetries: boolean;
  };
  /** Gives back a segment placed by placeSegment that holds nothing. */
  unplaceSegment(device: number, base: number): void;
  /** An empty call shaped like alloc, for benchmark baselines. */
  noop(device: number, size: number): number;
  /** allocInSlots's crossing and no allocator work (slot 0 := slot 1), for benchmark baselines. */
  noopInSlots(): void;

  streamCreate(device: number): number;
  streamDestroy(device: number, stream: number): void;
  streamSynchronize(device: number, stream: number): void;
  /** True when the stream's queued work is done (does not wait). */
  streamQuery(device: number, stream: number): boolean;
  deviceSynchronize(device: number): void;

  moduleLoad(device: number, image: Uint8Array): number;
  moduleUnload(device: number, module: number): void;
  /** params: [offset, size] per parameter as compiled, or null when the driver cannot tell. */
  functionGet(device: number, module: number, name: string): { id: number; params: Float64Array | null; attributes: KernelAttributes };
  functionAttributes(device: number, fn: number): KernelAttributes;
  functionSetMaxDynamicShared(device: number, fn: number, bytes: number): void;
  launchLimits(device: number): LaunchLimits;
  // CUDA graphs (graph_functions.cpp). mode: 0 global, 1 thread_local, 2 relaxed; pool 0: the graph's own.
  graphPoolHandle(device: number): number;
  /** -> the pool's id n (a new one when `pool` is 0). */
  graphCaptureBegin(device: number, stream: number, pool: number, mode: number): number;
  graphCaptureEnd(device: number, stream: number): number;
  graphCaptureAbort(device: number, stream: number): void;
  graphLaunch(device: number, graph: number, stream: number): void;
  graphUpload(device: number, graph: number, stream: number): void;
  graphDestroy(device: number, graph: number): void;
  graphInfo(device: number, graph: number): { pool: number; nodes: number };
  captureState(device: number): { underway: boolean; deferredFrees: number };
  captureRoutingForTests(device: number, route: boolean): void;
  /**
   * Binds `kernel` (any object; the Kernel) to its arrays, once: shape [gx, gy, gz, bx, by,
   * bz, sharedBytes], the packed parameters, and [base, offset, bytes] per buffer range.
   */
  launchBind(kernel: object, device: number, fn: number, shape: Uint32Array, params: Uint8Array, uses: Float64Array): void;
  /** Launches a bound kernel with what its arrays hold now; record: 1 to record the buffers on the stream. */
  launchBound(kernel: object, stream: number, useCount: number, record: number): void;
  eventCreate(device: number, timing: boolean): number;
  eventRecord(device: number, event: number, stream: number): void;
  eventQuery(device: number, event: number): boolean;
  eventSynchronize(device: number, event: number): void;
  /** Milliseconds from `start` to `end`. */
  eventElapsed(device: number, start: number, end: number): number;
  eventDestroy(device: number, event: number): void;
  streamWaitEvent(device: number, stream: number, event: number): void;
  /** Resolves once the work queued on the stream so far is done. */
  streamDone(device: number, stream: number): Promise<void>;
  hostStatKeys(): string[];
  /** host_memory_stats() values in hostStatKeys() order. */
  hostMemoryStats(): Float64Array;
  resetPeakHostStats(): void;
  resetAccumulatedHostStats(): void;
  emptyHostCache(): void;
  /** A pinned block of at least `size` bytes, as an ArrayBuffer over it (`size` long). */
  hostAlloc(size: number, stackId?: number): ArrayBuffer;
  /** Gives the block back and detaches the ArrayBuffer. */
  hostFree(buffer: ArrayBuffer, stackId?: number): void;
  /** The host history's action names, by their index in hostHistory()'s trace records. */
  hostTraceActionNames(): string[];
  /**
   * Starts or stops the pinned host allocator's history (PyTorch's record_pinned_host_memory):
   * context 0 none, 1 state, 2 alloc, 3 all (free requests keep stacks too); clear empties it.
   */
  hostSetHistory(enabled: boolean, context: number, maxEntries: number, clear: boolean): void;
  /**
   * null while host history is off; else every pinned block as (address, size, state 0
   * inactive / 1 active_allocated / 2 active_pending_free, stackId) and, with includeTraces,
   * the history as (action, addr, size, time_us, stackId) per entry, oldest first.
   */
  hostHistory(includeTraces: boolean): { blocks: Float64Array; traces: Float64Array | null } | null;
  copyToDeviceAsync(device: number, base: number, offset: number, host: ArrayBufferView, stream: number, record: boolean): void;
  copyToHostAsync(device: number, base: number, offset: number, host: ArrayBufferView, stream: number, record: boolean): void;
  copyDeviceAsync(device: number, dstBase: number, dstOffset: number, dstBytes: number, srcBase: number, srcOffset: number,
    srcBytes: number, stream: number, record: boolean): void;
  /** The address of the process's C ABI table (include/cca.h's cca_api_v1). */
  allocatorApi(): bigint;
  /** The name a native client's tag (2^31 and up) stands for; '' if none. */
  clientTagName(tag: number): string;
  /** What each native client name holds, per device it allocated on. */
  clients(): NativeClientRecord[];
  /** A DLManagedTensorVersioned over the allocation at `base`; its address. */
  toDLPack(device: number, base: number, bytes: number, code: number, bits: number, lanes: number, shape: number[],
    strides: number[] | null, byteOffset: number): bigint;
  /** JS lets go of an exported allocation: true when freed now (no tensor out). */
  releaseExported(device: number, base: number): boolean;
  /** CUDA IPC: the bytes another process opens for the allocation at `base`. */
  ipcHandle(device: number, base: number): Uint8Array;
  /** Maps another process's allocation; counted in the exporter until closeIpc. */
  openIpcHandle(bytes: Uint8Array): { device: number; ptr: number; size: number };
  closeIpc(device: number, ptr: number): void;
  /** Frees released exports nothing holds any more; how many. */
  ipcCollect(): number;
  compilerInfo(): CompilerInfo;
  blasInfo(): BlasInfo;
  /** One GEMM; its numbers in a Float64Array laid out as native/binding/gemm_params.h says. */
  gemm(device: number, params: Float64Array): void;
  /** Frees the workspaces no captured GEMM used; how many were kept. */
  clearBlasWorkspaces(device: number): number;
  blasWorkspaces(device: number): { bytes: number; ltBytes: number; count: number };
  compile(source: string, name: string, options: string[], headerNames: string[], headerSources: string[],
    nameExpressions: string[], cubin: boolean): Promise<{ ok: boolean; error: string; log: string; image: Uint8Array; lowered: [string, string][] }>;

  statKeys(): string[];
  /** The stat values in statKeys() order; fills `into` when it has the right length. */
  memoryStats(device: number, into?: Float64Array): Float64Array;
  resetPeakStats(device: number): void;
  resetAccumulatedStats(device: number): void;
  emptyCache(device: number, stackId?: number, tagId?: number): void;
  memGetInfo(device: number): [number, number];
  /** Caching on or off on every device (off: each allocation its own segment, freed to the device at once). */
  setCachingEnabled(enabled: boolean): void;
  cachingEnabled(device: number): boolean;
  /** The stack id of the live allocation holding ptr (0: none captured), -1 when none holds it. */
  allocationStack(device: number, ptr: number): number;
  /** An `annotate` history entry on the live allocation holding ptr (InvalidPointerError if none). */
  annotateMemory(device: number, ptr: number, stackId: number, tagId: number): void;
  setMemoryFraction(device: number, fraction: number): void;
  getMemoryFraction(device: number): number;
  /** The stat at statKeys() position `index`: one value, without filling all of them. */
  statValue(device: number, index: number): number;
  /**
   * Every device's metrics in one call: per device, the 122 stats (statKeys() order), then
   * [largest free block of the small pools, of the large pools, history entries, history
   * capacity (0 while off), the device's free and total bytes (mem_get_info; NaN when the
   * driver cannot answer), the memory fraction's share of the total]. Fills `out` in place
   * when its length fits.
   */
  monitorSample(out?: Float64Array): Float64Array;
  setAllocatorSettings(settings: string): void;
  /** Throws as setAllocatorSettings would, without applying anything. */
  checkAllocatorSettings(settings: string): void;
  /** PyTorch's allocator_settings dict: the runtime's, or that of `settings` when given. */
  allocatorSettings(settings?: string): Record<string, unknown>;
  /** The allocator options table (native/allocator/policy/options.h), one row per key, in order. */
  allocatorOptions(): AllocatorOptionRow[];
  validate(device: number): string;

  /** History for every device: context 0 never, 1 state, 2 alloc, 3 all. */
  setHistory(enabled: boolean, context: number, maxEntries: number, skipMask: number, clearHistory: boolean): void;
  snapshot(device: number, poolFilter: number, includeTraces: boolean): SnapshotParts;
  /**
   * Live trace events (memory.onTrace): entries of the actions in mask (bit 1 << index in
   * traceActionNames()) queue up to capacity per device; mask 0 stops and frees the queue.
   */
  traceSubscribe(device: number, mask: number, capacity: number): void;
  /** The queued entries as snapshot trace records, and how many were dropped since the last drain. */
  traceDrain(device: number): { traces: Float64Array; dropped: number };
  referencedStacks(): Uint32Array;
  /** Native stacks of C ABI callers: taken at context `level` on (0 never), `depth` frames. */
  setNativeStacks(level: number, depth: number): void;
  /** A native stack's frames as (filename, name, offset) triples, innermost first; [] for an unknown id. */
  nativeStackFrames(id: number): (string | number)[];
  /** The id the next new native stack gets (ids only grow). */
  nativeStacksNext(): number;
  /** Forgets the native stacks numbered below `below` that `keep` does not name. */
  nativeStacksRetain(keep: Uint32Array, below: number): void;
  /** The field names of each snapshot record, in order (native/binding/snapshot_records.h). */
  snapshotLayout(): { segment: string[]; block: string[]; trace: string[] };
  traceActionNames(): string[];
  /** How many times the trace clock was calibrated (the fast snapshot path calibrates nothing). */
  clockBuilds(): number;
  /**
   * Recalibrates the trace clock now rather than when next due; returns clockBuilds(). A
   * recalibration never changes the time of a tick read before it.
   */
  clockRecalibrate(): number;
  /** The trace clock's raw ticks now (annotations carry these). */
  clockTicks(): number;
  /** The device's next history order number (annotations carry it beside trace entries' seq). */
  historySeq(device: number): number;
  /** Unix microseconds of raw ticks, by the converter trace entries use. */
  ticksToUnixUs(ticks: Float64Array): Float64Array;

  /** MemPools: ids n of (0, n). noSplit: blocks never split; useOnOom: an OOM fallback. */
  poolCreate(device: number, noSplit: boolean, useOnOom: boolean): number;
  poolBegin(device: number, pool: number): void;
  poolEnd(device: number, pool: number): void;
  poolRelease(device: number, pool: number): void;
  poolUseCount(device: number, pool: number): number;
  /**
   * Each live MemPool's reserved_bytes: 13 numbers per pool, its id n then all, small_pool
   * and large_pool as current, peak, allocated, freed.
   */
  poolReservedStats(device: number): Float64Array;
  /**
   * Live memory per tag this environment (or a native client) used on the device: 7
   * numbers per tag, its id, allocated bytes current and peak, requested bytes current and
   * peak, allocations current and peak.
   */
  tagStats(device: number): Float64Array;

  /**
   * Copies and fills at `offset` bytes into the live allocation whose address is `base`,
   * on that allocation's stream, waited for. A range outside it, or a base that is not a
   * live allocation, throws (ERR_CCA_OUT_OF_BOUNDS, ERR_CCA_INVALID_POINTER).
   */
  copyHtoD(device: number, base: number, offset: number, src: ArrayBufferView): void;
  copyDtoH(device: number, base: number, offset: number, dst: ArrayBufferView): void;
  fill(device: number, base: number, offset: number, value: number, bytes: number): void;
  cudaProbe(): CudaProbe;

  setErrorFactory(factory: ErrorFactory): void;
  /** The kinds the error factory is called with (native/common/errors.h's CCA_ERROR_KINDS). */
  errorKinds(): string[];
  runtimeInfo(): RuntimeInfo;
  deviceInfo(device: number): DeviceInfo;
  /** Replaces this environment's runtime (its own when isolated, else the process's); returns the generation. */
  replaceRuntime(backend: string, devices: number, capacityBytes: number): number;
  /**
   * Replay: a new segment laid out as recorded, its live blocks (offset, block size,
   * requested size per block in `layout`) handed out and the gaps free. Returns the
   * segment's address, then the live blocks'. Refused with expandable segments on.
   */
  placeSegment(device: number, size: number, stream: number, pool: number, small: boolean, layout: Float64Array): Float64Array;
  /** The block size a request of `size` bytes gets under `settings` (PYTORCH_CUDA_ALLOC_CONF syntax), and the size of a segment made for it. */
  sizePolicy(settings: string, size: number): { rounded: number; segment: number };
  /** Gives this environment simulated devices that no other thread sees; returns the generation. */
  isolateRuntime(devices: number, capacityBytes: number): number;
  simHoldStream(device: number, stream: number, held: boolean): void;
  simCompleteStream(device: number, stream: number): void;
  /** The next `count` device mallocs or page maps fail; with afterBytes, once that many more bytes were allocated or mapped. */
  simFailNextMallocs(device: number, count: number, afterBytes?: number): void;
  simFailNextEventQueries(device: number, count: number): void;
  simState(device: number): SimState;
}
