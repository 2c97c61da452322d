// The package entry: re-exports only.
export * as memory from './memory.js';
export * as cuda from './cuda.js';
export * as compute from './compute/index.js';
export * as analysis from './analysis-api.js';
export * as replay from './replay/index.js';
export * as monitoring from './monitoring/index.js';
export * as interop from './interop/index.js';
export { DeviceBuffer } from './device-buffer.js';
export { HostBuffer } from './host-buffer.js';
export { MemPool, use_mem_pool, type MemPoolOptions } from './mem-pool.js';
export { Stream, defaultStream } from './stream.js';
export { loadSnapshot, parseSnapshot, DEFAULT_MAX_SNAPSHOT_BYTES, type LoadOptions } from './snapshot/load.js';
export { encodeSnapshot } from './snapshot/dump.js';
export { tuple, isTuple } from './snapshot/tuple.js';
export {
  AllocatorError,
  CorruptSnapshotError,
  SnapshotFileError,
  ArgumentRangeError,
  ArgumentTypeError,
  CudaOutOfMemoryError,
  DeviceError,
  InvalidArgumentError,
  InvalidPointerError,
  CompileError,
  type OutOfMemoryDetails,
} from './errors.js';
export { formatSize } from './format.js';
export type { AllocOptions, SimConfigureOptions } from './cuda.js';
export type { DLPackOptions, DLPackDType } from './interop/dlpack.js';
export type { ClientUsage } from './interop/index.js';
export type { NestedStats, OnTraceOptions, TagStats, TraceBatch, TraceSubscription } from './memory.js';
export type { Block, Segment, Snapshot, TraceEntry, Annotation, Frame, TraceAction, BlockState } from './snapshot/types.js';
export type { RecordHistoryOptions } from './history/record.js';
export type { OutOfMemoryEvent } from './oom.js';
export type { Region } from './history/annotations.js';
export type { CudaProbe, DeviceInfo, RuntimeInfo, SimState } from '../binding.js';
