// The package entry: re-exports only.
export * as memory from './memory.js';
export * as cuda from './cuda.js';
export { DeviceBuffer } from './device-buffer.js';
export { Stream, defaultStream } from './stream.js';
export {
  AllocatorError,
  ArgumentRangeError,
  ArgumentTypeError,
  CudaOutOfMemoryError,
  DeviceError,
  InvalidArgumentError,
  InvalidPointerError,
  type OutOfMemoryDetails,
} from './errors.js';
export { formatSize } from './format.js';
export type { AllocOptions, SimConfigureOptions } from './cuda.js';
export type { NestedStats } from './memory.js';
export type { DeviceInfo, RuntimeInfo, SimState } from '../binding.js';
