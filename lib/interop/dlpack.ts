// DeviceBuffer.toDLPack's checks and its native call: a DLPack 1.x tensor over a buffer
// (DLManagedTensorVersioned), whose deleter gives the memory back through the allocator.
import { InvalidArgumentError } from '../errors.js';
import { native } from '../native.js';
import { checkBoolean, checkInteger, checkOptions, checkString, rangeError, typeError } from '../validate.js';

/** Element types, named as compute's kernel signatures name them. */
export type DLPackDType =
  | 'bool' | 'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32' | 'i64' | 'u64'
  | 'f16' | 'bf16' | 'f32' | 'f64' | 'c64' | 'c128';

// DLPack's DLDataTypeCode and bits for each.
const DTYPES: Record<DLPackDType, [code: number, bits: number]> = {
  bool: [6, 8], i8: [0, 8], u8: [1, 8], i16: [0, 16], u16: [1, 16], i32: [0, 32], u32: [1, 32], i64: [0, 64],
  u64: [1, 64], f16: [2, 16], bf16: [4, 16], f32: [2, 32], f64: [2, 64], c64: [5, 64], c128: [5, 128],
};

export interface DLPackOptions {
  dtype: DLPackDType;
  /** Elements per dimension; [] for a scalar. */
  shape: readonly number[];
  /** Per dimension, in elements (DLPack's unit); default row-major (C order). */
  strides?: readonly number[];
  /** Where the first element starts in the buffer, in bytes; default 0. */
  byteOffset?: number;
  /** Accept a simulated device's memory (tests without a GPU); its addresses are not real. */
  allowSimulated?: boolean;
}

const KNOWN = ['dtype', 'shape', 'strides', 'byteOffset', 'allowSimulated'] as const;

function dims(name: string, value: unknown, min: number): number[] {
  if (!Array.isArray(value)) throw typeError('an array of integers', name, value);
  if (value.length > 32) throw rangeError('at most 32 dimensions', name, value);
  return value.map((v, i) => checkInteger(`${name}[${i}]`, v, min, Number.MAX_SAFE_INTEGER));
}

/** @internal The checked export; DeviceBuffer.toDLPack is the public face. */
export function exportDLPack(device: number, ptr: number, size: number, simulated: boolean, options: unknown): bigint {
  if (options === undefined) throw typeError('an options object with dtype and shape', 'toDLPack options', options);
  const o = checkOptions<DLPackOptions>('toDLPack options', options, KNOWN);
  const dtype = checkString('options.dtype', o.dtype) as DLPackDType;
  const spec = DTYPES[dtype];
  if (!Object.hasOwn(DTYPES, dtype) || spec === undefined) {
    throw rangeError(`one of ${Object.keys(DTYPES).join(', ')}`, 'options.dtype', o.dtype);
  }
  const shape = dims('options.shape', o.shape, 0);
  const strides = o.strides === undefined ? null : dims('options.strides', o.strides, Number.MIN_SAFE_INTEGER);
  if (strides && strides.length !== shape.length) {
    throw rangeError(`${shape.length} strides (one per dimension)`, 'options.strides', o.strides);
  }
  const byteOffset = o.byteOffset === undefined ? 0 : checkInteger('options.byteOffset', o.byteOffset, 0, Number.MAX_SAFE_INTEGER);
  const allowSimulated = o.allowSimulated === undefined ? false : checkBoolean('options.allowSimulated', o.allowSimulated);
  if (simulated && !allowSimulated) {
    throw new InvalidArgumentError('toDLPack: this buffer is on a simulated device, whose addresses no other framework ' +
      'can read; pass { allowSimulated: true } to export it anyway (tests without a GPU)', 'ERR_CCA_SIMULATED');
  }
  return native.toDLPack(device, ptr, size, spec[0], spec[1], 1, shape, strides, byteOffset);
}
