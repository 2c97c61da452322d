// Page-locked (pinned) host memory from the caching host allocator, as PyTorch's
// pin_memory() tensors: JS reads and writes it in place through `array`, and asynchronous
// copies to and from the device use it. Freed blocks are cached and handed out again only
// after the copies that used them completed.
import { ArgumentTypeError, InvalidPointerError } from './errors.js';
import { native } from './native.js';
import { generation } from './generation.js';
import { checkSize, describe } from './validate.js';
import { hostCapture } from './history/host-history.js';
import { stacks } from './history/stack-store.js';

const HOST_KEY: unique symbol = Symbol('cuda.allocHost');

export class HostBuffer {
  /** The size asked for, in bytes (the block behind it is rounded up to a power of two). */
  readonly size: number;
  readonly #buffer: ArrayBuffer;
  readonly #array: Uint8Array;
  readonly #generation: number;
  #freed = false;

  /** @internal Host buffers come from cuda.allocHost(). */
  constructor(key: typeof HOST_KEY, size: number) {
    if (key !== HOST_KEY) {
      throw new ArgumentTypeError('HostBuffer cannot be constructed directly; allocate with cuda.allocHost(size)',
        'ERR_ILLEGAL_CONSTRUCTOR');
    }
    this.size = size;
    // With host history keeping stacks, the caller's (above allocHost) goes with the block.
    this.#buffer = hostCapture.level >= 1 ? native.hostAlloc(size, stacks.capture(allocHost)) : native.hostAlloc(size);
    this.#array = new Uint8Array(this.#buffer);
    this.#generation = generation();
  }

  /** The memory itself. Views of it (`new Float32Array(host.array.buffer)`) are pinned too. Empty once freed. */
  get array(): Uint8Array {
    return this.#array;
  }

  get disposed(): boolean {
    return this.#freed;
  }

  /** True for a buffer made by cuda.allocHost(). */
  static isHostBuffer(value: unknown): value is HostBuffer {
    return typeof value === 'object' && value !== null && #freed in value;
  }

  /**
   * Returns the block to the cache. Copies already queued that use it still run: the block
   * is handed out again only after they completed. Every view of it becomes empty.
   */
  free(): void {
    if (!HostBuffer.isHostBuffer(this)) throw new ArgumentTypeError(`free: expected a HostBuffer but received ${describe(this)}`);
    if (this.#freed) throw new InvalidPointerError('free of a HostBuffer that was freed already', 'ERR_CCA_INVALID_POINTER');
    if (this.#generation === generation()) {
      if (hostCapture.level >= 3) native.hostFree(this.#buffer, stacks.capture(HostBuffer.prototype.free));
      else native.hostFree(this.#buffer);
    }
    this.#freed = true;
  }

  [Symbol.dispose](): void {
    if (!this.#freed) this.free();
  }
}

/**
 * `size` bytes of page-locked host memory from the caching host allocator (as PyTorch's
 * CachingHostAllocator rounds it: the next power of two). Asynchronous copies need it.
 */
export function allocHost(size: number): HostBuffer {
  checkSize('size', size);
  return new HostBuffer(HOST_KEY, size);
}
