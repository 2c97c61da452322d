// A device allocation, a range of one (BufferView), and the graph capture that may name
// them. The buffer holds the pointer; the memory goes back to the allocator's cache on free()
// (or `using`), never straight to the device.
import { ArgumentTypeError, InvalidPointerError } from './errors.js';
import { checkInteger, describe, rangeError, typeError } from './validate.js';
import { native } from './native.js';
import { deferFree } from './pending-frees.js';
import type { Stream } from './stream.js';
import { generation } from './generation.js';
import { capture, sampleStack } from './history/record.js';
import { stacks } from './history/stack-store.js';
import { HostBuffer } from './host-buffer.js';
import { InvalidArgumentError } from './errors.js';
import { checkStream } from './stream.js';
import { checkOptions } from './validate.js';
import { exportDLPack, type DLPackOptions } from './interop/dlpack.js';

/**
 * A range of a DeviceBuffer, passed to a kernel in place of the whole buffer: the kernel gets
 * the range's address, and the launch checks, and records on its stream, the buffer the range
 * lies in.
 */
export class BufferView {
  /** The buffer the range lies in. */
  readonly buffer: DeviceBuffer;
  /** Where the range starts in the buffer, in bytes. */
  readonly offset: number;
  /** The range's length in bytes. */
  readonly size: number;

  /** @internal Views come from DeviceBuffer.view(). */
  constructor(buffer: DeviceBuffer, offset: number, size: number) {
    this.buffer = buffer;
    this.offset = offset;
    this.size = size;
  }

  /** The range's device address. */
  get ptr(): number {
    return this.buffer.ptr + this.offset;
  }
}

// The graph capture in progress on this JS thread, if any (captureGraph's callback runs
// synchronously, so there is at most one): the buffers its work names and the buffers
// allocated during it. A buffer the capture names belongs to the graph: freeing it is refused
// while the graph lives (its replays would write freed memory), except for a buffer allocated
// during the capture and freed during it, whose memory the graph's private pool keeps.
export interface CaptureRecord {
  readonly device: number;
  /** Buffers the captured work names (launches, async copies). */
  readonly named: Set<DeviceBuffer>;
  /** Buffers allocated while the capture ran. */
  readonly allocated: Set<DeviceBuffer>;
}

/** The capture in progress on this thread, or null (read on every alloc: keep it a plain binding). */
export let recording: CaptureRecord | null = null;

/** @internal For compute/graph.ts: the capture starts (a record) or ends (null). */
export function setRecording(r: CaptureRecord | null): void {
  recording = r;
}

export interface AsyncCopyOptions {
  /** Where in this buffer, in bytes (default 0). */
  offset?: number;
  /** The stream to queue on (default: the buffer's stream). */
  stream?: Stream;
  /** Whether a device buffer of another stream is recorded on this one (default true). */
  recordStreams?: boolean;
}

function asyncOptions(op: string, options: unknown, device: number): { offset: number; stream: Stream | undefined; record: boolean } {
  const o = checkOptions<AsyncCopyOptions>(`${op} options`, options, ['offset', 'stream', 'recordStreams']);
  const offset = o.offset === undefined ? 0 : checkInteger('options.offset', o.offset, 0, Number.MAX_SAFE_INTEGER);
  const stream = o.stream === undefined ? undefined : checkStream('options.stream', o.stream, device);
  const record = o.recordStreams === undefined ? true : o.recordStreams;
  if (typeof record !== 'boolean') throw typeError('a boolean', 'options.recordStreams', record);
  return { offset, stream, record };
}

function hostView(op: string, value: unknown): ArrayBufferView {
  if (HostBuffer.isHostBuffer(value)) {
    if (value.disposed) throw new InvalidArgumentError(`${op}: the HostBuffer was freed`, 'ERR_CCA_NOT_PINNED');
    return value.array;
  }
  if (ArrayBuffer.isView(value)) return value;
  throw typeError('a HostBuffer, a typed array over one, or a DeviceBuffer', `${op} ${op === 'copyToAsync' ? 'dst' : 'src'}`, value);
}



// Only cuda.alloc() holds this: a DeviceBuffer cannot be made by hand (`new DeviceBuffer(ptr,
// 1e9, ...)` would otherwise pass every TypeScript check). The addon refuses a forged range
// anyway; this makes the mistake an error at the constructor.
const ALLOC_KEY: unique symbol = Symbol('cuda.alloc');

let adjustGraphs: (b: DeviceBuffer, delta: number) => void;

/** @internal For compute/graph.ts: a live graph names `buffer` (+1) or no longer does (-1). */
export function holdForGraph(buffer: DeviceBuffer, delta: number): void {
  adjustGraphs(buffer, delta);
}

/**
 * @internal Work being captured names `buffer`. A buffer from before the capture is held at
 * once (freeing it during the capture is refused too); one allocated during it only if it
 * outlives the capture (compute/graph.ts holds those at the end).
 */
export function nameForCapture(buffer: DeviceBuffer): void {
  const r = recording!;
  if (r.named.has(buffer)) return;
  r.named.add(buffer);
  if (!r.allocated.has(buffer)) adjustGraphs(buffer, +1);
}

/** @internal For cuda.alloc() and cuda.openIpcHandle() (imported: another process's memory). */
export function makeDeviceBuffer(ptr: number, size: number, stream: Stream, gen: number, imported = false): DeviceBuffer {
  return new DeviceBuffer(ALLOC_KEY, ptr, size, stream, gen, imported);
}

export class DeviceBuffer {
  /** The device address (0 for a zero-byte buffer). */
  readonly ptr: number;
  /** The size asked for, in bytes (the allocator may reserve more; see memory_stats). */
  readonly size: number;
  readonly device: number;
  /** The stream the memory was allocated on: reuse is ordered on it. */
  readonly stream: Stream;
  #freed = false;
  // Ours and never lent out (the usual case: free() is one check away from the allocator),
  // lent by toDLPack or ipcHandle (free() may leave the freeing to the borrowers), or another
  // process's memory from cuda.openIpcHandle (free() unmaps it). Lent and imported exclude
  // each other: an imported buffer cannot be lent.
  #holding: 'own' | 'lent' | 'imported';
  readonly #generation: number;
  // Live CUDA graphs whose work names this buffer (compute/graph.ts): free() is refused
  // while any does.
  #graphs = 0;

  static {
    adjustGraphs = (b, delta) => {
      b.#graphs += delta;
    };
  }

  /** @internal Buffers come from cuda.alloc(); this constructor throws for anyone else. */
  constructor(key: typeof ALLOC_KEY, ptr: number, size: number, stream: Stream, gen: number, imported = false) {
    if (key !== ALLOC_KEY) {
      throw new ArgumentTypeError('DeviceBuffer cannot be constructed directly; allocate with cuda.alloc(size, options)',
        'ERR_ILLEGAL_CONSTRUCTOR');
    }
    this.ptr = ptr;
    this.size = size;
    this.device = stream.device;
    this.stream = stream;
    this.#generation = gen;
    this.#holding = imported ? 'imported' : 'own';
  }

  /** True for another process's buffer opened with cuda.openIpcHandle(): free() unmaps it. */
  get imported(): boolean {
    return this.#holding === 'imported';
  }

  /** True once freed. */
  get disposed(): boolean {
    return this.#freed;
  }

  /**
   * Returns the memory to the allocator. Work already queued on `stream` may still use it;
   * work on other streams must have been declared with cuda.recordStream() first.
   * Freeing twice throws an InvalidPointerError (`ERR_CCA_INVALID_POINTER`).
   */
  free(): void {
    DeviceBuffer.#assertLive(this, 'free');
    if (this.#graphs !== 0) this.#refuseInGraph();
    if (this.#holding !== 'own') {
      if (this.#holding === 'imported') native.closeIpc(this.device, this.ptr);
      else native.releaseExported(this.device, this.ptr);
    } else if (this.ptr !== 0) {
      // Without history the free waits in the thread's list for its next call (pending-frees.ts);
      // with history it crosses now, so its entry has its own time. With context 'all',
      // frees carry the stack of the free site.
      if (!capture.enabled) {
        if (!deferFree(this.device, this.ptr)) native.free(this.device, this.ptr);
      } else if (capture.level === 3 && sampleStack()) {
        native.free(this.device, this.ptr, stacks.capture(DeviceBuffer.prototype.free));
      } else {
        native.free(this.device, this.ptr);
      }
    }
    this.#freed = true;
  }

  /** The number of live CUDA graphs whose captured work names this buffer. */
  get graphUses(): number {
    return this.#graphs;
  }

  #refuseInGraph(): never {
    const capturing = recording !== null && recording.named.has(this) && !recording.allocated.has(this);
    const live = this.#graphs - (capturing ? 1 : 0);
    const why = live === 0 ? 'the graph being captured names it (it was allocated before the capture)'
      : `${live} live CUDA graph${live === 1 ? '' : 's'} name${live === 1 ? 's' : ''} it`;
    throw new InvalidArgumentError(`cannot free the buffer at 0x${this.ptr.toString(16)} on device ${this.device}: ${why}, ` +
      'and every launch of a graph writes the memory its capture named; destroy the graph first (graph.destroy())',
    'ERR_CCA_BUFFER_IN_GRAPH');
  }

  /**
   * CUDA IPC: bytes another process passes to cuda.openIpcHandle() to map this buffer (a
   * Node server's workers sharing one copy of the weights). While any process has it open,
   * the memory stays allocated here: free() then leaves the freeing to the last importer's
   * close, found by cuda.ipc_collect() or when the allocator runs short. Keep the buffer
   * until the other process has opened the handle. Throws ERR_CCA_IPC_UNSUPPORTED on the
   * simulator and for buffers in expandable segments.
   */
  ipcHandle(): Uint8Array {
    DeviceBuffer.#assertLive(this, 'ipcHandle');
    if (this.#holding === 'imported') {
      throw new InvalidArgumentError('ipcHandle: this buffer is another process\'s (opened with cuda.openIpcHandle); ' +
        'pass on the handle it came from instead', 'ERR_CCA_IPC_UNSUPPORTED');
    }
    if (this.ptr === 0) throw new InvalidArgumentError('ipcHandle: a 0-byte buffer has no memory to share', 'ERR_CCA_OUT_OF_BOUNDS');
    const handle = native.ipcHandle(this.device, this.ptr);
    this.#holding = 'lent';
    return handle;
  }

  /**
   * Exports the buffer as a DLPack 1.x tensor for another framework: returns the address
   * of a `DLManagedTensorVersioned` (CUDA device, `dtype`, `shape`, row-major `strides` by
   * default, `byteOffset`). The memory stays allocated until both this buffer is freed and
   * the tensor's deleter has run: free() before the deleter leaves the freeing to it, and
   * the deleter gives the memory back through the allocator, on the buffer's stream. Each
   * call makes a new tensor with its own deleter. Throws ERR_CCA_OUT_OF_BOUNDS when the
   * elements reach outside the buffer, ERR_CCA_SIMULATED on the simulator unless
   * `allowSimulated`.
   */
  toDLPack(options: DLPackOptions): bigint {
    DeviceBuffer.#assertLive(this, 'toDLPack');
    if (this.ptr === 0) throw new InvalidArgumentError('toDLPack: a 0-byte buffer has no memory to export', 'ERR_CCA_OUT_OF_BOUNDS');
    const address = exportDLPack(this.device, this.ptr, this.size, native.deviceInfo(this.device).simulated, options);
    this.#holding = 'lent';
    return address;
  }

  /**
   * Copies a typed array (or Buffer) into the buffer at `offset` bytes, on the buffer's
   * stream, and waits for the copy: `src` may be reused when this returns.
   */
  copyFrom(src: ArrayBufferView, offset = 0): this {
    DeviceBuffer.#assertLive(this, 'copyFrom');
    this.#checkSpan('copyFrom', src, offset);
    if (src.byteLength > 0) native.copyHtoD(this.device, this.ptr, offset, src);
    return this;
  }

  /** Copies `dst.byteLength` bytes from `offset` into `dst` (after the stream's queued work). */
  copyTo<T extends ArrayBufferView>(dst: T, offset = 0): T {
    DeviceBuffer.#assertLive(this, 'copyTo');
    this.#checkSpan('copyTo', dst, offset);
    if (dst.byteLength > 0) native.copyDtoH(this.device, this.ptr, offset, dst);
    return dst;
  }

  /** Sets `bytes` bytes (default: to the end) from `offset` to `value` (0-255). */
  fill(value: number, offset = 0, bytes?: number): this {
    DeviceBuffer.#assertLive(this, 'fill');
    checkInteger('value', value, 0, 255);
    checkInteger('offset', offset, 0, this.size);
    // The default is computed after offset is known to be a number (`size - 0n` would throw).
    bytes = bytes === undefined ? this.size - offset : checkInteger('bytes', bytes, 0, this.size - offset);
    if (bytes > 0) native.fill(this.device, this.ptr, offset, value, bytes);
    return this;
  }

  /**
   * Queues a copy into this buffer at `offset` on `stream` (default: the buffer's stream)
   * and returns without waiting (await stream.done()). The source is pinned host memory
   * (a HostBuffer, or a typed array over one) or a DeviceBuffer / BufferView of the same
   * device. The source is recorded as used by the stream, so freeing it waits for the copy;
   * with `recordStreams` (default true) a device buffer of another stream is recorded too,
   * as a kernel launch records it. Pageable memory is `ERR_CCA_NOT_PINNED`: use copyFrom.
   */
  copyFromAsync(src: HostBuffer | ArrayBufferView | DeviceBuffer | BufferView, options?: AsyncCopyOptions): this {
    DeviceBuffer.#assertLive(this, 'copyFromAsync');
    const o = asyncOptions('copyFromAsync', options, this.device);
    const stream = o.stream ?? this.stream;
    if (DeviceBuffer.isDeviceBuffer(src) || src instanceof BufferView) {
      const buf = src instanceof BufferView ? src.buffer : src;
      const srcOffset = src instanceof BufferView ? src.offset : 0;
      if (buf.disposed) {
        throw new InvalidPointerError(`copyFromAsync: src (${buf.size} bytes on device ${buf.device}) was freed`,
          'ERR_CCA_INVALID_POINTER');
      }
      if (buf.device !== this.device) {
        throw new InvalidArgumentError(`src is on device ${buf.device} but the buffer is on device ${this.device}`,
          'ERR_CCA_DEVICE_MISMATCH');
      }
      this.#checkLength('copyFromAsync', src.size, o.offset);
      if (src.size > 0) {
        native.copyDeviceAsync(this.device, this.ptr, o.offset, src.size, buf.ptr, srcOffset, src.size, stream.handle, o.record);
        if (recording !== null) {
          nameForCapture(this);
          nameForCapture(buf);
        }
      }
      return this;
    }
    const view = hostView('copyFromAsync', src);
    this.#checkLength('copyFromAsync', view.byteLength, o.offset);
    if (view.byteLength > 0) native.copyToDeviceAsync(this.device, this.ptr, o.offset, view, stream.handle, o.record);
    if (recording !== null) nameForCapture(this);
    return this;
  }

  /**
   * Queues a copy of `dst`'s length from `offset` into pinned host memory `dst` on `stream`
   * (default: the buffer's stream); await stream.done() before reading `dst`.
   */
  copyToAsync<T extends HostBuffer | ArrayBufferView>(dst: T, options?: AsyncCopyOptions): T {
    DeviceBuffer.#assertLive(this, 'copyToAsync');
    const o = asyncOptions('copyToAsync', options, this.device);
    const stream = o.stream ?? this.stream;
    const view = hostView('copyToAsync', dst);
    this.#checkLength('copyToAsync', view.byteLength, o.offset);
    if (view.byteLength > 0) native.copyToHostAsync(this.device, this.ptr, o.offset, view, stream.handle, o.record);
    if (recording !== null) nameForCapture(this);
    return dst;
  }

  #checkLength(op: string, length: number, offset: number): void {
    if (offset + length > this.size) {
      throw rangeError(`at most ${this.size - offset} bytes (the buffer holds ${this.size} from offset ${offset})`,
        `${op} length`, length, '; copy less or use a larger buffer');
    }
  }

  /**
   * A range of this buffer, `bytes` long (default: to the end) from `offset`, to pass to a
   * kernel in place of the whole buffer: the kernel gets the range's address; the launch
   * checks the range against the buffer and records the buffer on its stream.
   */
  view(offset: number, bytes?: number): BufferView {
    DeviceBuffer.#assertLive(this, 'view');
    checkInteger('offset', offset, 0, this.size);
    const length = bytes === undefined ? this.size - offset : checkInteger('bytes', bytes, 0, this.size - offset);
    return new BufferView(this, offset, length);
  }

  #checkSpan(op: string, view: unknown, offset: number): void {
    if (!ArrayBuffer.isView(view)) throw typeError('a TypedArray, DataView or Buffer', `${op} array`, view);
    checkInteger('offset', offset, 0, this.size);
    if (offset + view.byteLength > this.size) {
      throw rangeError(`at most ${this.size - offset} bytes (the buffer holds ${this.size} from offset ${offset})`,
        `${op} array length`, view.byteLength, '; use a shorter array or a larger buffer');
    }
  }

  /** Frees the buffer unless it was freed already (for `using`). */
  [Symbol.dispose](): void {
    if (!this.#freed) this.free();
  }

  /** True for a buffer made by cuda.alloc() (not an object with DeviceBuffer's prototype). */
  static isDeviceBuffer(value: unknown): value is DeviceBuffer {
    return typeof value === 'object' && value !== null && #freed in value;
  }

  /** Throws unless the buffer is live. @internal */
  assertLive(operation: string): void {
    DeviceBuffer.#assertLive(this, operation);
  }

  // A static check, so that a method called on something else (`const f = buf.free; f()`,
  // or an object made with DeviceBuffer's prototype) gets a coded error too.
  static #assertLive(buf: unknown, operation: string): asserts buf is DeviceBuffer {
    if (!DeviceBuffer.isDeviceBuffer(buf)) {
      throw new ArgumentTypeError(`${operation}: expected a DeviceBuffer made by cuda.alloc() as the buffer, ` +
        `but received ${describe(buf)}`, 'ERR_INVALID_ARG_TYPE');
    }
    buf.#assertCurrent(operation);
  }

  #assertCurrent(operation: string): void {
    if (this.#freed) {
      throw new InvalidPointerError(
        `${operation}: buffer 0x${this.ptr.toString(16)} (${this.size} bytes on device ${this.device}) ` +
          'was already freed (double free?)',
      );
    }
    if (this.#generation !== generation()) {
      throw new InvalidPointerError(
        `${operation}: buffer 0x${this.ptr.toString(16)} belongs to a runtime replaced by cuda.sim.configure() or cuda.sim.isolate()`,
      );
    }
  }

  toString(): string {
    return `DeviceBuffer(0x${this.ptr.toString(16)}, ${this.size} bytes, device ${this.device})`;
  }
}
