// Modules: CUBIN, fatbin or PTX loaded onto a device, and the kernels taken from them.
import { InvalidArgumentError } from '../errors.js';
import { native } from '../native.js';
import { resolveDevice } from '../device.js';
import { generation } from '../generation.js';
import { checkOptions, checkString, checkStringRecord, typeError } from '../validate.js';
import { Kernel, makeKernel, type KernelModule } from './kernel.js';
import { layoutOf, type ParamType } from './signature.js';

const ELF = [0x7f, 0x45, 0x4c, 0x46];
const FATBIN = [0x50, 0xed, 0x55, 0xba];  // 0xba55ed50, little-endian

function startsWith(bytes: Uint8Array, magic: number[]): boolean {
  return magic.every((b, i) => bytes[i] === b);
}

// The driver reads PTX up to its NUL byte (it is given no length): text gets one.
function imageBytes(image: unknown): Uint8Array {
  if (typeof image === 'string') return new TextEncoder().encode(`${image}\0`);
  if (!ArrayBuffer.isView(image)) {
    throw typeError('CUBIN, fatbin or PTX (a Uint8Array, Buffer or string)', 'image', image);
  }
  const bytes = new Uint8Array(image.buffer, image.byteOffset, image.byteLength);
  if (bytes.length === 0) throw new InvalidArgumentError('image is empty: give CUBIN, fatbin or PTX', 'ERR_CCA_INVALID_MODULE');
  if (startsWith(bytes, ELF) || startsWith(bytes, FATBIN) || bytes[bytes.length - 1] === 0) return bytes;
  const text = new Uint8Array(bytes.length + 1);
  text.set(bytes);
  return text;
}

export interface ModuleLoadOptions {
  /** The device to load on (default: the current device). */
  device?: number;
  /** Mangled kernel names by C++ expression (a compiled program's loweredNames), for getKernel. */
  names?: Record<string, string>;
}

export class Module implements KernelModule {
  readonly device: number;
  #id: number;
  #unloaded = false;
  readonly #generation: number;
  readonly #names: Record<string, string>;

  private constructor(device: number, id: number, names: Record<string, string>) {
    this.device = device;
    this.#id = id;
    this.#generation = generation();
    this.#names = names;
  }

  /**
   * Loads CUBIN or a fatbin built for the device's architecture, or PTX (bytes or text),
   * onto a device. The cuda backend only: the simulator runs no kernels
   * (`ERR_CCA_KERNELS_UNSUPPORTED`). A refused image is `ERR_CCA_INVALID_MODULE`, with the
   * driver's reason.
   */
  static load(image: Uint8Array | ArrayBufferView | string, options?: ModuleLoadOptions): Module {
    const o = checkOptions<ModuleLoadOptions>('Module.load options', options, ['device', 'names']);
    const device = resolveDevice(o.device, 'options.device');
    const names = o.names === undefined ? {} :
      checkStringRecord('options.names', o.names, 'an object of name expressions to mangled names');
    const bytes = imageBytes(image);
    return new Module(device, native.moduleLoad(device, bytes), { ...names });
  }

  get unloaded(): boolean {
    return this.#unloaded;
  }

  /** @internal The native handle, checked live. */
  id(operation: string): number {
    if (this.#unloaded) {
      throw new InvalidArgumentError(`${operation}: the module was unloaded; load it again`, 'ERR_CCA_INVALID_HANDLE');
    }
    if (this.#generation !== generation()) {
      throw new InvalidArgumentError(`${operation}: the module belongs to a runtime that was replaced by ` +
        'cuda.sim.configure() or cuda.sim.isolate(); load it again', 'ERR_CCA_INVALID_HANDLE');
    }
    return this.#id;
  }

  /**
   * The kernel `name` (its mangled name, an `extern "C"` one, or a name expression the
   * module was compiled with), taken with its parameter
   * types, which also type its launch's arguments. Where the driver reports the compiled
   * kernel's parameters (CUDA 12.4 and later), the types are checked against them now:
   * a wrong width, order or count is `ERR_CCA_KERNEL_SIGNATURE` before any launch.
   */
  getKernel<const T extends readonly ParamType[]>(name: string, params: T): Kernel<T> {
    checkString('name', name);
    const layout = layoutOf(params, 'params');
    const symbol = Object.prototype.hasOwnProperty.call(this.#names, name) ? this.#names[name]! : name;
    const f = native.functionGet(this.device, this.id('getKernel'), symbol);
    if (f.params !== null) checkAgainstCompiled(name, layout, f.params);
    return makeKernel<T>(this, name, f.id, layout, f.attributes, f.params !== null);
  }

  /** Unloads the module; its kernels can no longer be launched. Work already queued runs. */
  unload(): void {
    native.moduleUnload(this.device, this.id('unload'));
    this.#unloaded = true;
  }

  [Symbol.dispose](): void {
    if (!this.#unloaded && this.#generation === generation()) this.unload();
  }
}

function checkAgainstCompiled(name: string, layout: ReturnType<typeof layoutOf>, compiled: Float64Array): void {
  const count = compiled.length / 2;
  const fix = '; give the types in the order and widths of the kernel\'s C++ parameters ' +
    "(int: 'i32', long long / size_t: 'i64' / 'u64', float: 'f32', double: 'f64', any pointer: 'ptr')";
  if (count !== layout.kinds.length) {
    throw new InvalidArgumentError(`kernel ${name} takes ${count} parameters but ${layout.kinds.length} types were ` +
      `given (${layout.names.join(', ') || 'none'})${fix}`, 'ERR_CCA_KERNEL_SIGNATURE');
  }
  for (let i = 0; i < count; i++) {
    const offset = compiled[2 * i]!;
    const size = compiled[2 * i + 1]!;
    if (size !== layout.sizes[i] || offset !== layout.offsets[i]) {
      throw new InvalidArgumentError(`kernel ${name}'s parameter ${i} is ${size} bytes at offset ${offset} in the ` +
        `compiled code, but '${layout.names[i]}' is ${layout.sizes[i]} bytes at offset ${layout.offsets[i]}${fix}`,
      'ERR_CCA_KERNEL_SIGNATURE');
    }
  }
}
