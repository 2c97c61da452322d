// Kernel signatures: the parameter types a kernel is taken with, their layout in the one
// parameter buffer a launch passes (each parameter at the next offset its alignment allows,
// as the compiler lays out a kernel's parameters), and the TypeScript types of a launch's
// arguments, derived from the same list.
import type { DeviceBuffer } from '../device-buffer.js';
import type { BufferView } from '../device-buffer.js';
import { ArgumentTypeError } from '../errors.js';
import { describe } from '../validate.js';

/** A scalar kernel parameter: a device pointer, an integer or a float of a given width. */
export type ScalarType = 'ptr' | 'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32' | 'i64' | 'u64' | 'f32' | 'f64';
/** A struct passed by value, given by its size and alignment in bytes; its argument is its bytes. */
export interface StructType {
  readonly struct: { readonly size: number; readonly align: number };
}
export type ParamType = ScalarType | StructType;

/** The argument a launch takes for a parameter of type `T`. */
export type ArgOf<T extends ParamType> = T extends 'ptr'
  ? DeviceBuffer | BufferView
  : T extends 'i64' | 'u64'
    ? bigint
    : T extends StructType
      ? ArrayBufferView
      : number;
/** The arguments a launch takes for the parameter list `T`, in order. */
export type ArgsOf<T extends readonly ParamType[]> = { [K in keyof T]: T[K] extends ParamType ? ArgOf<T[K]> : never };

/** How each parameter is written (a number per kind, for the launch's switch). */
export const Kind = {
  Ptr: 0, I8: 1, U8: 2, I16: 3, U16: 4, I32: 5, U32: 6, I64: 7, U64: 8, F32: 9, F64: 10, Struct: 11,
} as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

const SCALARS: Record<ScalarType, { kind: Kind; size: number }> = {
  ptr: { kind: Kind.Ptr, size: 8 },
  i8: { kind: Kind.I8, size: 1 },
  u8: { kind: Kind.U8, size: 1 },
  i16: { kind: Kind.I16, size: 2 },
  u16: { kind: Kind.U16, size: 2 },
  i32: { kind: Kind.I32, size: 4 },
  u32: { kind: Kind.U32, size: 4 },
  i64: { kind: Kind.I64, size: 8 },
  u64: { kind: Kind.U64, size: 8 },
  f32: { kind: Kind.F32, size: 4 },
  f64: { kind: Kind.F64, size: 8 },
};

export interface Layout {
  kinds: Kind[];
  offsets: number[];
  sizes: number[];
  /** The names the types were given in, for messages ('i32', 'struct(12, 4)'). */
  names: string[];
  bytes: number;
}

function typeName(t: ParamType): string {
  return typeof t === 'string' ? t : `struct(${t.struct.size}, ${t.struct.align})`;
}

/** Lays out a parameter list; throws ArgumentTypeError naming a type that is not one. */
export function layoutOf(params: unknown, name: string): Layout {
  if (!Array.isArray(params)) {
    throw new ArgumentTypeError(`Expected an array of parameter types for ${name} but received ${describe(params)}` +
      "; for example ['f32', 'ptr', 'ptr', 'u32']");
  }
  const layout: Layout = { kinds: [], offsets: [], sizes: [], names: [], bytes: 0 };
  params.forEach((t: unknown, i) => {
    let kind: Kind;
    let size: number;
    let align: number;
    if (typeof t === 'string' && Object.prototype.hasOwnProperty.call(SCALARS, t)) {
      ({ kind, size } = SCALARS[t as ScalarType]);
      align = size;
    } else if (typeof t === 'object' && t !== null && typeof (t as StructType).struct === 'object' &&
      (t as StructType).struct !== null && validStruct((t as StructType).struct)) {
      kind = Kind.Struct;
      ({ size, align } = (t as StructType).struct);
    } else {
      throw new ArgumentTypeError(`Expected a parameter type for ${name}[${i}] but received ${describe(t)}: one of ` +
        `${Object.keys(SCALARS).map((k) => `'${k}'`).join(', ')}, or { struct: { size, align } } ` +
        '(align a power of two up to 16, size a multiple of it)');
    }
    const offset = Math.ceil(layout.bytes / align) * align;
    layout.kinds.push(kind);
    layout.offsets.push(offset);
    layout.sizes.push(size);
    layout.names.push(typeName(t as ParamType));
    layout.bytes = offset + size;
  });
  return layout;
}

function validStruct(s: { size: unknown; align: unknown }): boolean {
  const { size, align } = s;
  return typeof size === 'number' && typeof align === 'number' && Number.isInteger(size) && size > 0 &&
    size <= 32764 && [1, 2, 4, 8, 16].includes(align) && size % align === 0;
}
