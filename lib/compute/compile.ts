// Compiling CUDA C++ at run time with NVRTC, off the main thread. The output is CUBIN for
// one architecture (by default the device's own: PTX from a newer NVRTC than the driver
// fails to load), or PTX for a virtual one. Results are cached in memory, keyed by
// everything that went in.
import { CompileError, InvalidArgumentError } from '../errors.js';
import { native } from '../native.js';
import { getDeviceProperties, resolveDevice } from '../device.js';
import { checkOptions, checkString, checkStringRecord, describe, typeError } from '../validate.js';
import { Module } from './module.js';
import type { CompilerInfo } from '../../binding.js';

export interface CompileOptions {
  /** The program's file name, as the log shows it (default 'program.cu'). */
  name?: string;
  /**
   * The architecture: 'sm_90' (CUBIN for it) or 'compute_90' (PTX for it, compiled by the
   * driver at load). Default: the device's own sm_XY; on the simulator, PTX for the oldest
   * architecture the compiler supports.
   */
  arch?: string;
  /** The device whose architecture is the default (default: the current device). */
  device?: number;
  /** Macros: `{ N: 256, FAST: true }` passes -DN=256 -DFAST. */
  defines?: Record<string, string | number | boolean>;
  /** Headers the source may #include by name, with their contents. */
  headers?: Record<string, string>;
  /** C++ expressions naming kernels (template instantiations: 'scale<float>'); take them by expression. */
  nameExpressions?: string[];
  /** More NVRTC options, as given ('-std=c++17', '--use_fast_math'). */
  options?: string[];
}

/** A compiled program: its image, and the mangled names of its name expressions. */
export interface CompiledProgram {
  image: Uint8Array;
  target: 'cubin' | 'ptx';
  arch: string;
  /** NVRTC's messages (warnings; empty when it had none). */
  log: string;
  /** Mangled name by name expression. */
  loweredNames: Record<string, string>;
  /** Loads the image as a module on `device` (default: the current device); kernels may be taken by expression. */
  load(options?: { device?: number }): Module;
}

const cache = new Map<string, Promise<CompiledProgram>>();

/** Whether NVRTC can be used here, its version and path, and if not why. */
export function compilerInfo(): CompilerInfo {
  return native.compilerInfo();
}

const COMPILE_OPTIONS = ['name', 'arch', 'device', 'defines', 'headers', 'nameExpressions', 'options'] as const;

/**
 * Compiles CUDA C++ with NVRTC on a worker thread. Rejects with CompileError
 * (`ERR_CCA_COMPILE`, the log in `error.log`), or `ERR_CCA_NVRTC_UNAVAILABLE` where there is
 * no NVRTC. Needs no GPU. The same source and options give the cached result.
 */
export function compile(source: string, options?: CompileOptions): Promise<CompiledProgram> {
  checkString('source', source);
  const o = checkOptions<CompileOptions>('compile options', options, COMPILE_OPTIONS);
  const name = o.name === undefined ? 'program.cu' : checkString('options.name', o.name);
  // Every argument is checked before anything else: a bad one throws at once, whatever the machine.
  const chosenArch = o.arch === undefined ? undefined : checkArch(o.arch);
  const device = o.device === undefined ? undefined : resolveDevice(o.device, 'options.device');
  const defines = defineFlags(o.defines);
  const extra = stringList('options.options', o.options);
  const headers = o.headers === undefined ? {} : checkStringRecord('options.headers', o.headers, 'an object of header names to their contents');
  const expressions = stringList('options.nameExpressions', o.nameExpressions);
  const info = native.compilerInfo();
  if (!info.available) {
    return Promise.reject(new CompileError(`cannot compile: ${info.reason}`, 'ERR_CCA_NVRTC_UNAVAILABLE'));
  }
  const arch = chosenArch ?? defaultArch(device, info);
  const cubin = arch.startsWith('sm_');
  const flags = [`--gpu-architecture=${arch}`, ...defines, ...extra];
  const key = JSON.stringify([source, name, flags, headers, expressions]);
  let pending = cache.get(key);
  if (pending === undefined) {
    pending = run(source, name, flags, headers, expressions, cubin, arch);
    cache.set(key, pending);
    pending.catch(() => cache.delete(key));  // a failure is not remembered: the fix may be elsewhere
  }
  return pending;
}

async function run(source: string, name: string, flags: string[], headers: Record<string, string>,
  expressions: string[], cubin: boolean, arch: string): Promise<CompiledProgram> {
  const r = await native.compile(source, name, flags, Object.keys(headers), Object.values(headers), expressions, cubin);
  if (!r.ok) {
    const firstError = r.log.split('\n').find((l) => /error/i.test(l)) ?? '';
    throw new CompileError(`compiling ${name} for ${arch} failed: ${r.error}${firstError ? `: ${firstError.trim()}` : ''}` +
      (r.log ? ' (the whole log is in error.log)' : ''), 'ERR_CCA_COMPILE', r.log);
  }
  const loweredNames = Object.fromEntries(r.lowered);
  const image = r.image;
  return {
    image,
    target: cubin ? 'cubin' : 'ptx',
    arch,
    log: r.log,
    loweredNames,
    load: (options?: { device?: number }) => Module.load(image, { ...options, names: loweredNames }),
  };
}

function defaultArch(device: number | undefined, info: CompilerInfo): string {
  const props = getDeviceProperties(device);
  if (!props.simulated && props.major > 0) return `sm_${props.major}${props.minor}`;
  const oldest = info.architectures.length > 0 ? Math.min(...info.architectures) : 75;
  return `compute_${oldest}`;
}

function checkArch(value: unknown): string {
  if (typeof value !== 'string' || !/^(sm|compute)_\d+[af]?$/.test(value)) {
    throw new InvalidArgumentError(`Expected an architecture like 'sm_90' or 'compute_90' for options.arch but ` +
      `received ${describe(value)}`, 'ERR_INVALID_ARG_VALUE');
  }
  return value;
}

function defineFlags(defines: unknown): string[] {
  if (defines === undefined) return [];
  if (typeof defines !== 'object' || defines === null || Array.isArray(defines)) {
    throw typeError('an object of macro names to values', 'options.defines', defines);
  }
  return Object.entries(defines as Record<string, unknown>).flatMap(([k, v]) => {
    if (!/^[A-Za-z_]\w*$/.test(k)) {
      throw new InvalidArgumentError(`options.defines: '${k}' is not a macro name`, 'ERR_INVALID_ARG_VALUE');
    }
    if (v === true) return [`-D${k}`];
    if (v === false) return [];
    if (typeof v === 'number' || typeof v === 'string') return [`-D${k}=${v}`];
    throw typeError('a string, number or boolean', `options.defines.${k}`, v);
  });
}

function stringList(name: string, value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw typeError('an array of strings', name, value);
  return value as string[];
}
