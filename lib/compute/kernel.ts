// A kernel taken from a module with its parameter types, and its launch. The launch packs
// the arguments into the kernel's own parameter buffer (kept between launches), checks each
// against its type, and makes one native call, in which the allocator checks every buffer
// and records it on the launch's stream.
import { BufferView, DeviceBuffer, nameForCapture, recording } from '../device-buffer.js';
import { ArgumentTypeError, InvalidArgumentError } from '../errors.js';
import { native } from '../native.js';
import { checkStream, defaultStream, type Stream } from '../stream.js';
import { checkInteger, checkOptions, describe, rangeError, typeError } from '../validate.js';
import { Kind, type ArgsOf, type Layout, type ParamType } from './signature.js';
import type { KernelAttributes } from '../../binding.js';

export type Dim3 = number | readonly [number, number?, number?];

export interface LaunchConfig {
  /** Blocks in the grid: a count, or [x, y, z]. */
  grid: Dim3;
  /** Threads in a block: a count, or [x, y, z]. */
  block: Dim3;
  /** Bytes of dynamic shared memory per block (default 0). */
  sharedMem?: number;
  /**
   * The stream to run on. Default: the stream the buffer arguments were allocated on,
   * when they share one; the device's default stream when there are none. Buffers on
   * different streams need it given (`ERR_CCA_LAUNCH_STREAM`).
   */
  stream?: Stream;
  /**
   * Whether each buffer allocated on another stream is recorded on this launch's stream
   * (default true), so that freeing it waits for this kernel, as cuda.recordStream() does.
   * With false, order the work with events yourself.
   */
  recordStreams?: boolean;
}

const KERNEL_KEY: unique symbol = Symbol('Kernel');
const LAUNCH_OPTIONS = ['grid', 'block', 'sharedMem', 'stream', 'recordStreams'] as const;
const U32_MAX = 4294967295;
const TWO_32 = 4294967296;

const INT_RANGE: Partial<Record<Kind, [number, number, string]>> = {
  [Kind.I8]: [-128, 127, 'i8'],
  [Kind.U8]: [0, 255, 'u8'],
  [Kind.I16]: [-32768, 32767, 'i16'],
  [Kind.U16]: [0, 65535, 'u16'],
  [Kind.I32]: [-2147483648, 2147483647, 'i32'],
  [Kind.U32]: [0, U32_MAX, 'u32'],
};

/**
 * The module a kernel was taken from, as the kernel holds it (a compute.Module: the kernel
 * needs no more of it, and so module.ts alone knows both).
 */
export interface KernelModule {
  readonly device: number;
  readonly unloaded: boolean;
  /** @internal The module's native handle, checked live (throws once unloaded). */
  id(operation: string): number;
}

/** @internal For Module.getKernel only. */
export function makeKernel<T extends readonly ParamType[]>(module: KernelModule, name: string, id: number, layout: Layout,
  attributes: KernelAttributes, checked: boolean): Kernel<T> {
  return new Kernel<T>(KERNEL_KEY, module, name, id, layout, attributes, checked);
}

export class Kernel<T extends readonly ParamType[] = readonly ParamType[]> {
  /** The module it was taken from. */
  readonly module: KernelModule;
  readonly name: string;
  readonly device: number;
  /** The parameter types, as given. */
  readonly params: readonly string[];
  /** Whether the types were checked against the compiled kernel (the driver could tell). */
  readonly signatureChecked: boolean;
  readonly #id: number;
  readonly #layout: Layout;
  #attributes: KernelAttributes;
  readonly #shape = new Uint32Array(7);
  readonly #buffer: ArrayBuffer;
  readonly #view: DataView;
  readonly #bytes: Uint8Array;
  readonly #uses: Float64Array;

  /** @internal Kernels come from Module.getKernel(). */
  constructor(key: typeof KERNEL_KEY, module: KernelModule, name: string, id: number, layout: Layout,
    attributes: KernelAttributes, checked: boolean) {
    if (key !== KERNEL_KEY) {
      throw new ArgumentTypeError('Kernel cannot be constructed directly; use module.getKernel(name, params)',
        'ERR_ILLEGAL_CONSTRUCTOR');
    }
    this.module = module;
    this.name = name;
    this.device = module.device;
    this.params = layout.names;
    this.signatureChecked = checked;
    this.#id = id;
    this.#layout = layout;
    this.#attributes = attributes;
    this.#buffer = new ArrayBuffer(Math.max(8, Math.ceil(layout.bytes / 8) * 8));
    this.#view = new DataView(this.#buffer);
    this.#bytes = new Uint8Array(this.#buffer, 0, layout.bytes);
    this.#uses = new Float64Array(3 * Math.max(1, layout.kinds.filter((k) => k === Kind.Ptr).length));
    // The binding keeps pointers to these arrays: a launch then crosses with four values.
    native.launchBind(this, this.device, id, this.#shape, this.#bytes, this.#uses);
  }

  /** What the kernel was compiled with: registers, shared and local memory, max threads per block. */
  get attributes(): KernelAttributes {
    return this.#attributes;
  }

  /** Lets launches ask for up to `bytes` of dynamic shared memory (needed above 48 KiB). */
  setMaxDynamicSharedMemory(bytes: number): void {
    native.functionSetMaxDynamicShared(this.device, this.#id, bytes);
    this.#attributes = native.functionAttributes(this.device, this.#id);
  }

  /**
   * Queues the kernel with `args`, one per parameter, typed by the parameter list: a
   * DeviceBuffer or BufferView for 'ptr', a bigint for 'i64' and 'u64', the struct's bytes for
   * a struct, a number otherwise. Returns once it is queued (await stream.done() for its end).
   */
  launch(config: LaunchConfig, ...args: ArgsOf<T>): void {
    this.module.id('launch');  // throws once the module was unloaded or its runtime replaced
    if (typeof config !== 'object' || config === null) {
      throw typeError('a launch config { grid, block, sharedMem?, stream?, recordStreams? }', 'config', config);
    }
    let stream: Stream | undefined;
    let record = true;
    let shared = 0;
    let grid: unknown;
    let block: unknown;
    for (const key in config) {
      const value = (config as unknown as Record<string, unknown>)[key];
      switch (key) {
        case 'grid': grid = value; break;
        case 'block': block = value; break;
        case 'sharedMem':
          if (value !== undefined) shared = checkU32('config.sharedMem', value);
          break;
        case 'stream':
          if (value !== undefined) stream = checkStream('config.stream', value, this.device, 'the kernel');
          break;
        case 'recordStreams':
          if (value !== undefined) {
            if (typeof value !== 'boolean') throw typeError('a boolean', 'config.recordStreams', value);
            record = value;
          }
          break;
        default:
          checkOptions('launch config', { [key]: value }, LAUNCH_OPTIONS);  // throws, naming the option
      }
    }
    const shape = this.#shape;
    dims(grid, 'config.grid', shape, 0);
    dims(block, 'config.block', shape, 3);
    shape[6] = shared;
    const layout = this.#layout;
    const kinds = layout.kinds;
    if (args.length !== kinds.length) {
      throw new ArgumentTypeError(`${this.name} takes ${kinds.length} arguments (${layout.names.join(', ')}) but ` +
        `received ${args.length}`);
    }
    const view = this.#view;
    const uses = this.#uses;
    let useCount = 0;
    let implied: Stream | undefined;
    let mixed = false;
    for (let i = 0; i < kinds.length; i++) {
      const v: unknown = args[i];
      const at = layout.offsets[i]!;
      switch (kinds[i]) {
        case Kind.Ptr: {
          let buf: DeviceBuffer;
          let offset = 0;
          let size: number;
          if (v instanceof BufferView) {
            buf = v.buffer;
            offset = v.offset;
            size = v.size;
          } else if (DeviceBuffer.isDeviceBuffer(v)) {
            buf = v;
            size = v.size;
          } else {
            throw this.#argError(i, 'a DeviceBuffer or BufferView', v,
              typeof v === 'number' || typeof v === 'bigint' ? '; raw addresses are not accepted: pass the buffer' : '');
          }
          if (buf.disposed) {
            throw new InvalidArgumentError(`argument ${i} (ptr) of ${this.name}: the buffer was freed`,
              'ERR_CCA_INVALID_POINTER');
          }
          if (buf.device !== this.device) {
            throw new InvalidArgumentError(`argument ${i} (ptr) of ${this.name}: the buffer is on device ${buf.device} ` +
              `but the kernel was loaded on device ${this.device}; load the module on the buffer's device`,
            'ERR_CCA_DEVICE_MISMATCH');
          }
          const address = buf.ptr + offset;
          view.setUint32(at, address % TWO_32, true);
          view.setUint32(at + 4, Math.floor(address / TWO_32), true);
          if (buf.ptr !== 0) {
            uses[3 * useCount] = buf.ptr;
            uses[3 * useCount + 1] = offset;
            uses[3 * useCount + 2] = size;
            useCount++;
            if (implied === undefined) implied = buf.stream;
            else if (implied !== buf.stream) mixed = true;
          }
          break;
        }
        case Kind.I64:
        case Kind.U64: {
          const signed = kinds[i] === Kind.I64;
          if (typeof v !== 'bigint') {
            throw this.#argError(i, 'a bigint', v, typeof v === 'number' ? `; a 64-bit parameter takes a bigint: ` +
              `write ${Number.isInteger(v) ? `${v}n` : 'BigInt(x)'}` : '');
          }
          if (signed ? v < -(2n ** 63n) || v >= 2n ** 63n : v < 0n || v >= 2n ** 64n) {
            throw rangeError(`an integer that fits ${signed ? 'i64' : 'u64'}`, this.#argName(i), v);
          }
          if (signed) view.setBigInt64(at, v, true);
          else view.setBigUint64(at, v, true);
          break;
        }
        case Kind.F32:
        case Kind.F64:
          if (typeof v !== 'number') throw this.#argError(i, 'a number', v);
          if (kinds[i] === Kind.F32) view.setFloat32(at, v, true);
          else view.setFloat64(at, v, true);
          break;
        case Kind.Struct: {
          if (!ArrayBuffer.isView(v)) throw this.#argError(i, `the struct's ${layout.sizes[i]} bytes (a typed array)`, v);
          if (v.byteLength !== layout.sizes[i]) {
            throw rangeError(`${layout.sizes[i]} bytes`, this.#argName(i), v, ` (it has ${v.byteLength} bytes)`);
          }
          this.#bytes.set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength), at);
          break;
        }
        default: {
          const range = INT_RANGE[kinds[i]!]!;
          if (typeof v !== 'number') {
            throw this.#argError(i, `an integer from ${range[0]} to ${range[1]}`, v,
              typeof v === 'bigint' ? '; a 32-bit or narrower parameter takes a number' : '');
          }
          if (!Number.isInteger(v) || v < range[0] || v > range[1]) {
            throw rangeError(`an integer from ${range[0]} to ${range[1]} (${range[2]})`, this.#argName(i), v);
          }
          switch (kinds[i]) {
            case Kind.I8: view.setInt8(at, v); break;
            case Kind.U8: view.setUint8(at, v); break;
            case Kind.I16: view.setInt16(at, v, true); break;
            case Kind.U16: view.setUint16(at, v, true); break;
            case Kind.I32: view.setInt32(at, v, true); break;
            default: view.setUint32(at, v, true);
          }
        }
      }
    }
    if (stream === undefined) {
      if (mixed) {
        throw new InvalidArgumentError(`launch of ${this.name}: its buffers were allocated on different streams, so ` +
          'the stream to run on is not implied; give config.stream (the other buffers are recorded on it)',
        'ERR_CCA_LAUNCH_STREAM');
      }
      stream = implied ?? defaultStream(this.device);
    }
    native.launchBound(this, stream.handle, useCount, record ? 1 : 0);
    if (recording !== null) this.#nameBuffers(args);
  }

  // The buffers a captured launch names belong to the graph (device-buffer.ts's CaptureRecord).
  #nameBuffers(args: readonly unknown[]): void {
    const kinds = this.#layout.kinds;
    for (let i = 0; i < kinds.length; i++) {
      if (kinds[i] !== Kind.Ptr) continue;
      const v = args[i];
      const buf = v instanceof BufferView ? v.buffer : (v as DeviceBuffer);
      if (buf.ptr !== 0) nameForCapture(buf);
    }
  }

  #argName(i: number): string {
    return `argument ${i} (${this.#layout.names[i]}) of ${this.name}`;
  }

  #argError(i: number, what: string, value: unknown, hint = ''): ArgumentTypeError {
    return new ArgumentTypeError(`Expected ${what} for ${this.#argName(i)} but received ${describe(value)}${hint}`);
  }
}

const checkU32 = (name: string, value: unknown): number => checkInteger(name, value, 0, U32_MAX);

// A count, or [x, y?, z?], into shape[at..at+2]; missing dimensions are 1.
function dims(value: unknown, name: string, shape: Uint32Array, at: number): void {
  if (typeof value === 'number') {
    shape[at] = checkU32(name, value);
    shape[at + 1] = 1;
    shape[at + 2] = 1;
    return;
  }
  if (!Array.isArray(value) || value.length < 1 || value.length > 3) {
    throw typeError('a count or [x, y, z]', name, value);
  }
  for (let i = 0; i < 3; i++) shape[at + i] = i < value.length ? checkU32(`${name}[${i}]`, value[i]) : 1;
}
