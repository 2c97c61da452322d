/**
 * Error classes. Every error this package throws has a stable `code`:
 * - `ArgumentTypeError` (a TypeError, `ERR_INVALID_ARG_TYPE`) and `ArgumentRangeError`
 *   (a RangeError, `ERR_INVALID_ARG_VALUE`): caught in TypeScript before any native call.
 * - `AllocatorError` and its subclasses: raised by the allocator, with numbers attached.
 * None of them leaves the allocator changed.
 */

/** Base of the errors raised by the allocator. */
export class AllocatorError extends Error {
  readonly code: string;
  constructor(message: string, code: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    Error.captureStackTrace?.(this, new.target);
  }
}

/** The numbers of an out-of-memory error, in bytes. */
export interface OutOfMemoryDetails {
  device: number;
  /** The size the caller asked for. */
  requested: number;
  /** The segment size the allocator asked the device for (the message's "Tried to allocate"). */
  allocSize: number;
  deviceFree: number;
  deviceTotal: number;
  /** The memory-fraction limit, 0 when none is set. */
  allowed: number;
  /** Held by live allocations (`allocated_bytes.all.current`). */
  allocated: number;
  /** Held by the allocator's segments (`reserved_bytes.all.current`). */
  reserved: number;
  /**
   * Free bytes left in the cache after it was released: they sit in segments that still
   * hold live blocks, so only requests up to `largestFreeBlock` can use them.
   */
  cachedFree: number;
  freeBlocks: number;
  largestFreeBlock: number;
}

/** `ERR_CUDA_OUT_OF_MEMORY`: even after releasing the cache, the device had no room. */
// The class carries every field of OutOfMemoryDetails (declared by the interface of the same
// name below, copied from the addon's list in the constructor): the field list lives once
// in native/common/errors.h and once in OutOfMemoryDetails, and a test compares the two.
export class CudaOutOfMemoryError extends AllocatorError {
  /**
   * `code`: ERR_CUDA_OUT_OF_MEMORY for device memory; ERR_CCA_HOST_OUT_OF_MEMORY when the system
   * refused pinned host memory (cuda.allocHost; `device` is -1 then).
   */
  constructor(message: string, details: OutOfMemoryDetails, code = 'ERR_CUDA_OUT_OF_MEMORY') {
    super(message, code);
    Object.assign(this, details);
    detailsByError.set(this, details);
  }
}
export interface CudaOutOfMemoryError extends Readonly<OutOfMemoryDetails> {}

const detailsByError = new WeakMap<CudaOutOfMemoryError, OutOfMemoryDetails>();
/** @internal The numbers an out-of-memory error was made with (for the OOM hooks). */
export function detailsOf(error: CudaOutOfMemoryError): OutOfMemoryDetails {
  return detailsByError.get(error)!;
}

/** `ERR_CCA_INVALID_POINTER`: a foreign pointer, an interior pointer or a double free. */
export class InvalidPointerError extends AllocatorError {
  constructor(message: string, code = 'ERR_CCA_INVALID_POINTER') {
    super(message, code);
  }
}

/**
 * A value the allocator refused: a destroyed stream (`ERR_CCA_INVALID_STREAM`), a device
 * that does not exist (`ERR_CCA_INVALID_DEVICE`), a bad config string
 * (`ERR_CCA_INVALID_CONFIG`), a buffer of another device (`ERR_CCA_DEVICE_MISMATCH`), ...
 */
export class InvalidArgumentError extends AllocatorError {}

/** `ERR_CCA_DEVICE`: the device failed in a way releasing the cache cannot fix. */
export class DeviceError extends AllocatorError {}

/** `ERR_INVALID_ARG_TYPE`: an argument of the wrong type (`ERR_ILLEGAL_CONSTRUCTOR`: a class
 *  that only the library may construct). */
export class ArgumentTypeError extends TypeError {
  readonly code: string;
  constructor(message: string, code = 'ERR_INVALID_ARG_TYPE') {
    super(message);
    this.code = code;
    this.name = 'ArgumentTypeError';
    Error.captureStackTrace?.(this, ArgumentTypeError);
  }
}

/** `ERR_INVALID_ARG_VALUE`: an argument of the right type but out of range. */
export class ArgumentRangeError extends RangeError {
  readonly code = 'ERR_INVALID_ARG_VALUE';
  constructor(message: string) {
    super(message);
    this.name = 'ArgumentRangeError';
    Error.captureStackTrace?.(this, ArgumentRangeError);
  }
}

/**
 * The JS class for each kind of native error (native/common/errors.h's CCA_ERROR_KINDS;
 * test/contract/error-kinds.test.ts fails when the two lists differ).
 */
export const ERROR_CLASS_BY_KIND = {
  allocator: (message: string, code: string) => new AllocatorError(message, code),
  argument: (message: string, code: string) => new InvalidArgumentError(message, code),
  pointer: (message: string, code: string) => new InvalidPointerError(message, code),
  device: (message: string, code: string) => new DeviceError(message, code),
  oom: (message: string, code: string, fields: Record<string, number>) =>
    new CudaOutOfMemoryError(message, fields as unknown as OutOfMemoryDetails, code || 'ERR_CUDA_OUT_OF_MEMORY'),
} as const;

/** Builds the JS error for a native failure; handed to the addon once at load. */
export function errorFromNative(
  kind: string,
  message: string,
  code: string,
  fields: Record<string, number>,
): Error {
  const make = ERROR_CLASS_BY_KIND[kind as keyof typeof ERROR_CLASS_BY_KIND] ?? ERROR_CLASS_BY_KIND.allocator;
  return make(message, code, fields);
}

/**
 * `ERR_CCA_CORRUPT_SNAPSHOT`: a snapshot that is truncated, corrupt, or not a snapshot.
 * `offset` is where reading stopped, when known; `path` the bad field (`segments[3].blocks[0].size`).
 * `ERR_CCA_UNSAFE_PICKLE`: a pickle that names Python code (GLOBAL, REDUCE, ...): refused
 * without running anything, since a snapshot holds only plain containers.
 */
export class CorruptSnapshotError extends AllocatorError {
  readonly offset: number | undefined;
  readonly path: string | undefined;
  constructor(message: string, offset?: number, path?: string, code = 'ERR_CCA_CORRUPT_SNAPSHOT') {
    super(message, code);
    this.offset = offset;
    this.path = path;
  }
}

/**
 * A snapshot file that cannot be read as one: `ERR_CCA_FILE_NOT_FOUND` (with `errno`
 * ENOENT), `ERR_CCA_NOT_A_FILE` (a directory, device or pipe), `ERR_CCA_FILE_TOO_LARGE`
 * (above the reader's limit, which the caller can raise), `ERR_CCA_FILE_UNREADABLE`
 * (permissions and other I/O errors). `file` is the path.
 */
export class SnapshotFileError extends AllocatorError {
  readonly file: string;
  readonly errno: string | undefined;
  constructor(message: string, code: string, file: string, errno?: string) {
    super(message, code);
    this.file = file;
    this.errno = errno;
  }
}

/**
 * `ERR_CCA_COMPILE`: CUDA C++ that NVRTC refused (`log` holds its messages), or an option it
 * refused. `ERR_CCA_NVRTC_UNAVAILABLE`: no NVRTC library here (the message names each
 * place tried and what to install).
 */
export class CompileError extends AllocatorError {
  readonly log: string;
  constructor(message: string, code: string, log = '') {
    super(message, code);
    this.log = log;
  }
}
