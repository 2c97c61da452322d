// Matrix multiplication on the allocator's buffers through cuBLAS (cuBLASLt for a bias or an
// activation), in one native call. The
// shape is checked against each operand's buffer (or view) before cuBLAS sees it, so no GEMM
// reads or writes outside its buffers; the operands are recorded on the call's stream as a
// kernel's buffers are; each library's workspace comes from the allocator, one per (thread,
// stream), as PyTorch gives it (docs/compute.md, "Matrix multiplication").
import { InvalidArgumentError } from '../errors.js';
import { native } from '../native.js';
import { resolveDevice } from '../device.js';
import { BufferView, DeviceBuffer, nameForCapture, recording } from '../device-buffer.js';
import { capture, sampleStack } from '../history/record.js';
import { stacks } from '../history/stack-store.js';
import { checkStream, type Stream } from '../stream.js';
import { checkBoolean, checkInteger, checkOptions, typeError } from '../validate.js';
import { GemmParam } from './gemm-params.js';
import type { BlasInfo } from '../../binding.js';

/** Element types of A, B and C. */
export type GemmDtype = 'f32' | 'f16' | 'bf16';
/** What products are summed in: 'f32'; 'tf32' (f32 operands rounded to TF32 on tensor cores,
 *  PyTorch's allow_tf32); 'f16' (f16 operands only). */
export type GemmCompute = 'f32' | 'tf32' | 'f16';
/** What cuBLASLt applies to the result before storing it, after the bias. */
export type GemmEpilogue = 'none' | 'relu' | 'gelu';

export interface GemmOptions {
  /** op(A) is m x k, op(B) k x n, C m x n. */
  m: number;
  n: number;
  k: number;
  /** Use A (B) transposed: stored k x m (n x k). Default false. */
  transA?: boolean;
  transB?: boolean;
  /** Leading dimensions in elements (defaults: the stored matrix's, with no padding). */
  lda?: number;
  ldb?: number;
  ldc?: number;
  /** C = alpha * op(A) @ op(B) + beta * C (defaults 1 and 0; with beta 0, C is not read). */
  alpha?: number;
  beta?: number;
  dtype?: GemmDtype;
  /** Default 'f32'. */
  compute?: GemmCompute;
  /** Matrices in the batch (default 1), each `strideX` elements after the last (defaults: packed). */
  batch?: number;
  strideA?: number;
  strideB?: number;
  strideC?: number;
  /** A bias vector of the dtype, added to every row of C (row-major: one element per output
   *  column, n of them; `gemm`: one per row of column-major C, m), by cuBLASLt's epilogue. */
  bias?: DeviceBuffer | BufferView;
  /** An activation applied after the bias, in the same call (cuBLASLt). Default 'none'. */
  epilogue?: GemmEpilogue;
  /** The stream to queue on (default: C's buffer's stream). */
  stream?: Stream;
  /** Whether operands of other streams are recorded on this one (default true). */
  recordStreams?: boolean;
}

const OPTIONS = ['m', 'n', 'k', 'transA', 'transB', 'lda', 'ldb', 'ldc', 'alpha', 'beta', 'dtype', 'compute', 'batch',
  'strideA', 'strideB', 'strideC', 'bias', 'epilogue', 'stream', 'recordStreams'] as const;
const EPILOGUES: Record<GemmEpilogue, number> = { none: 0, relu: 1, gelu: 2 };
const DTYPES: Record<GemmDtype, number> = { f32: 0, f16: 1, bf16: 2 };
const COMPUTES: Record<GemmCompute, number> = { f32: 0, tf32: 1, f16: 2 };
const INT_MAX = 2147483647;

// The numbers of one call; reused (a call reads them all before it returns).
const params = new Float64Array(GemmParam.ParamCount);

function operand(name: string, value: unknown): { buffer: DeviceBuffer; offset: number; size: number } {
  let buffer: DeviceBuffer;
  let offset = 0;
  let size: number;
  if (value instanceof BufferView) {
    buffer = value.buffer;
    offset = value.offset;
    size = value.size;
  } else if (DeviceBuffer.isDeviceBuffer(value)) {
    buffer = value;
    size = value.size;
  } else {
    throw typeError('a DeviceBuffer or BufferView', name, value);
  }
  if (buffer.disposed) throw new InvalidArgumentError(`${name}: the buffer was freed`, 'ERR_CCA_INVALID_POINTER');
  return { buffer, offset, size };
}

const dim = (o: Partial<GemmOptions>, key: 'm' | 'n' | 'k'): number => {
  if (o[key] === undefined) throw typeError('an integer', `options.${key}`, undefined, `; give ${key} (op(A) is m x k, op(B) k x n)`);
  return checkInteger(`options.${key}`, o[key], 0, INT_MAX);
};
const optInt = (o: Partial<GemmOptions>, key: keyof GemmOptions, fallback: number, min = 0): number =>
  o[key] === undefined ? fallback : checkInteger(`options.${key}`, o[key], min, Number.MAX_SAFE_INTEGER);
const scalar = (o: Partial<GemmOptions>, key: 'alpha' | 'beta', fallback: number): number => {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw typeError('a finite number', `options.${key}`, v);
  return v;
};
function choice<T extends string>(o: Partial<GemmOptions>, key: 'dtype' | 'compute' | 'epilogue', table: Record<T, number>, fallback: T): number {
  const v = (o as Record<string, unknown>)[key] ?? fallback;
  if (typeof v !== 'string' || !Object.prototype.hasOwnProperty.call(table, v)) {
    throw typeError(`one of ${Object.keys(table).map((t) => `'${t}'`).join(', ')}`, `options.${key}`, v);
  }
  return table[v as T];
}

/** The call's numbers, column-major as cuBLAS reads them; `rowMajor` swaps the operands. */
function call(op: string, a: unknown, b: unknown, c: unknown, options: unknown, rowMajor: boolean): void {
  const o = checkOptions<GemmOptions>(`${op} options`, options, OPTIONS);
  const m = dim(o, 'm');
  const n = dim(o, 'n');
  const k = dim(o, 'k');
  const transA = o.transA === undefined ? false : checkBoolean('options.transA', o.transA);
  const transB = o.transB === undefined ? false : checkBoolean('options.transB', o.transB);
  const batch = optInt(o, 'batch', 1, 1);
  // The stored matrices' own widths: row-major rows, or column-major columns' heights.
  const lda = optInt(o, 'lda', rowMajor ? (transA ? m : k) : (transA ? k : m), 1);
  const ldb = optInt(o, 'ldb', rowMajor ? (transB ? k : n) : (transB ? n : k), 1);
  const ldc = optInt(o, 'ldc', rowMajor ? n : m, 1);
  const strideA = optInt(o, 'strideA', batch > 1 ? m * k : 0);
  const strideB = optInt(o, 'strideB', batch > 1 ? k * n : 0);
  const strideC = optInt(o, 'strideC', batch > 1 ? m * n : 0);
  const A = operand(`${op} a`, a);
  const B = operand(`${op} b`, b);
  const C = operand(`${op} c`, c);
  const bias = o.bias === undefined ? null : operand(`${op} options.bias`, o.bias);
  for (const [name, x] of [['a', A], ['b', B], ['options.bias', bias]] as const) {
    if (x === null) continue;
    if (x.buffer.device !== C.buffer.device) {
      throw new InvalidArgumentError(`${op}: ${name} is on device ${x.buffer.device} but c is on device ${C.buffer.device}; ` +
        'give operands of one device', 'ERR_CCA_DEVICE_MISMATCH');
    }
  }
  const device = C.buffer.device;
  const stream = o.stream === undefined ? C.buffer.stream : checkStream('options.stream', o.stream, device);
  const record = o.recordStreams === undefined ? true : checkBoolean('options.recordStreams', o.recordStreams);
  const p = params;
  // Row-major C = op(A) @ op(B) is column-major C^T = op(B)^T @ op(A)^T: B first, n x m.
  const [first, second] = rowMajor ? [B, A] : [A, B];
  p[GemmParam.Stream] = stream.handle;
  p[GemmParam.TransA] = (rowMajor ? transB : transA) ? 1 : 0;
  p[GemmParam.TransB] = (rowMajor ? transA : transB) ? 1 : 0;
  p[GemmParam.M] = rowMajor ? n : m;
  p[GemmParam.N] = rowMajor ? m : n;
  p[GemmParam.K] = k;
  p[GemmParam.ABase] = first.buffer.ptr;
  p[GemmParam.AOffset] = first.offset;
  p[GemmParam.ALimit] = first.size;
  p[GemmParam.Lda] = rowMajor ? ldb : lda;
  p[GemmParam.StrideA] = rowMajor ? strideB : strideA;
  p[GemmParam.BBase] = second.buffer.ptr;
  p[GemmParam.BOffset] = second.offset;
  p[GemmParam.BLimit] = second.size;
  p[GemmParam.Ldb] = rowMajor ? lda : ldb;
  p[GemmParam.StrideB] = rowMajor ? strideA : strideB;
  p[GemmParam.CBase] = C.buffer.ptr;
  p[GemmParam.COffset] = C.offset;
  p[GemmParam.CLimit] = C.size;
  p[GemmParam.Ldc] = ldc;
  p[GemmParam.StrideC] = strideC;
  p[GemmParam.Batch] = batch;
  p[GemmParam.Dtype] = choice(o, 'dtype', DTYPES, 'f32');
  p[GemmParam.Compute] = choice(o, 'compute', COMPUTES, 'f32');
  p[GemmParam.Alpha] = scalar(o, 'alpha', 1);
  p[GemmParam.Beta] = scalar(o, 'beta', 0);
  p[GemmParam.Record] = record ? 1 : 0;
  p[GemmParam.RowMajor] = rowMajor ? 1 : 0;
  p[GemmParam.BiasBase] = bias === null ? 0 : bias.buffer.ptr;
  p[GemmParam.BiasOffset] = bias === null ? 0 : bias.offset;
  p[GemmParam.BiasLimit] = bias === null ? 0 : bias.size;
  p[GemmParam.Epilogue] = choice(o, 'epilogue', EPILOGUES, 'none');
  p[GemmParam.StackId] = capture.level !== 0 && sampleStack() ? stacks.capture(call) : 0;
  native.gemm(device, p);
  if (recording !== null) for (const x of [A, B, C, bias]) if (x !== null) nameForCapture(x.buffer);
}

/**
 * C = alpha * op(A) @ op(B) + beta * C with row-major matrices (as JavaScript and PyTorch lay
 * them out): A is m x k (k x m with transA), B k x n (n x k with transB), C m x n, each row
 * `ld` elements apart (defaults: packed). With `batch`, the batch's matrices lie `stride`
 * elements apart. Queued on `stream` (default: C's); returns once queued.
 *
 * ```js
 * compute.matmul(x, w, y, { m: 64, n: 256, k: 128 });  // y = x @ w, all f32
 * ```
 */
export function matmul(a: DeviceBuffer | BufferView, b: DeviceBuffer | BufferView, c: DeviceBuffer | BufferView, options: GemmOptions): void {
  call('matmul', a, b, c, options, true);
}

/** The same in cuBLAS's own column-major convention (lda defaults to op(A)'s stored rows). */
export function gemm(a: DeviceBuffer | BufferView, b: DeviceBuffer | BufferView, c: DeviceBuffer | BufferView, options: GemmOptions): void {
  call('gemm', a, b, c, options, false);
}

/** Whether cuBLAS is here (the library found, its version), and if not, why, naming each path tried. */
export function blasInfo(): BlasInfo {
  return native.blasInfo();
}

export interface BlasWorkspaces {
  /** Each cuBLAS workspace's size (CUBLAS_WORKSPACE_CONFIG, or PyTorch's default for the device). */
  bytes: number;
  /** Each cuBLASLt workspace's size (CUBLASLT_WORKSPACE_SIZE KiB, default 1 MiB). */
  ltBytes: number;
  /** Workspaces held now: one per (thread, stream, library) that ran a GEMM. */
  count: number;
}

/** The device's cuBLAS workspaces (default: the current device). */
export function blasWorkspaces(device?: number): BlasWorkspaces {
  return native.blasWorkspaces(resolveDevice(device));
}

/**
 * Frees the device's cuBLAS workspaces (PyTorch's torch._C._cuda_clearCublasWorkspaces), but
 * those a captured GEMM used, which a graph may replay: returns how many were kept. The next
 * GEMM on a stream makes its workspace again. Refused during a capture on the device.
 */
export function clearBlasWorkspaces(device?: number): number {
  return native.clearBlasWorkspaces(resolveDevice(device));
}
